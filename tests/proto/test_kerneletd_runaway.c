/* kerneletd --kernel-time-limit on the emulator: a tenant's kernel that never ends is
 * stopped at the limit and its tenant gets CUDA's launch timeout (702), while another
 * tenant's work runs and verifies, and the daemon stays responsive and stops cleanly.
 *   test_kerneletd_runaway KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

#define LAUNCH_TIMEOUT 702 /* CUDA_ERROR_LAUNCH_TIMEOUT */

static const char *kerneletd;

/* An answer that never comes fails the test instead of hanging it. */
static void receive_timeout(int fd, int seconds)
{
    struct timeval tv = {.tv_sec = seconds};

    g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), ==, 0);
}

static void test_spinner_stopped(void)
{
    const char *opts[] = {"--kernel-time-limit", "1.5", NULL};
    struct daemon d;
    struct client spinner;
    double start, took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&spinner, d.socket, "spinner", false));
    receive_timeout(spinner.fd, 30);
    uint64_t p = client_alloc(&spinner, 8 * 32 * 4);
    uint64_t fn = spin_function(&spinner, "k_forever");
    start = now_s();
    g_assert_cmpint(launch_spin(&spinner, fn, p, -1, 8, false), ==, KERNELET_ST_OK);
    uint64_t sync = client_send(&spinner, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    g_assert_cmpuint(sync, !=, 0);

    /* The bystander queues behind the spinner on the emulator's one worker, and is served
     * once the limit stops it. */
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_test_message("bystander served after %.2f s", now_s() - start);

    g_assert_cmpint(client_recv(&spinner, KERNELET_OP_CTX_SYNC, sync), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(spinner.cuda, ==, LAUNCH_TIMEOUT);
    took = now_s() - start;
    g_test_message("spinner stopped after %.2f s", took);
    g_assert_cmpfloat(took, >=, 1.4);
    g_assert_cmpfloat(took, <, 20.0);
    client_close(&spinner);

    g_assert_true(tenant_round_trip(d.socket, "later"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* A kernel shorter than the limit is not touched; 0 turns the limit off. */
static void test_limit_values(void)
{
    const char *opts[] = {"--kernel-time-limit", "0", NULL};
    const char *bad[] = {"-1", "abc", "1e9", "nan", ""};
    struct daemon d;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(tenant_round_trip(d.socket, "unlimited"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        g_assert_cmpint(daemon_option_status(kerneletd, "--kernel-time-limit", bad[i]), ==, 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: test_kerneletd_runaway KERNELETD\n");
        return 2;
    }
    kerneletd = argv[1];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/runaway/stopped", test_spinner_stopped);
    g_test_add_func("/kerneletd/runaway/limit-values", test_limit_values);
    return g_test_run();
}
