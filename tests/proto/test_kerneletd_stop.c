/* SIGTERM stops kerneletd within seconds and cleanly (exit 0, socket removed) while a
 * tenant's kernel runs on the emulator: one that never ends (it used to make the daemon
 * ignore SIGTERM) and a long finite one of many blocks (it used to end in a segmentation
 * fault). The tenant's connection ends; nothing hangs. A daemon that crashes says so in
 * its log, with the call stack, and still dies of the signal (status and core as without).
 *   test_kerneletd_stop KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

static const char *kerneletd;

/* Starts the kernel (entry, n, grid) as a tenant, lets it run, stops the daemon. */
static void stop_during(const char *entry, int n, unsigned grid)
{
    struct daemon d;
    struct client c;
    struct stat st;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "runner", false));
    uint64_t p = client_alloc(&c, (uint64_t)grid * 32 * 4);
    uint64_t fn = spin_function(&c, entry);
    g_assert_cmpint(launch_spin(&c, fn, p, n, grid, false), ==, KERNELET_ST_OK);
    /* A second request that waits for the kernel: its answer never comes, the connection
     * ends instead. */
    g_assert_cmpuint(client_send(&c, KERNELET_OP_CTX_SYNC, NULL, 0, -1), !=, 0);
    usleep(1000000); /* the kernel is running now */
    g_assert_true(daemon_alive(&d));
    int status = daemon_stop(&d, 20.0, &took);
    g_test_message("%s: kerneletd stopped in %.2f s, wait status %d", entry, took, status);
    g_assert_cmpint(status, ==, 0); /* exited, with 0: no signal, no crash */
    g_assert_cmpfloat(took, <, 5.0);
    g_assert_true(stat(d.socket, &st) != 0);
    g_assert_true(closed_within(c.fd, 1000));
    client_close(&c);
}

static void test_forever(void)
{
    stop_during("k_forever", -1, 8);
}

/* 4096 blocks of a million iterations each: minutes on the emulator, sliced by the
 * scheduler into many launches. */
static void test_long_finite(void)
{
    stop_during("k_loop", 1000000, 4096);
}

/* The finite kernel does finish and compute when nobody stops it (the test above would
 * pass vacuously if it failed at once). */
static void test_loop_computes(void)
{
    struct daemon d;
    struct client c;
    uint32_t *out;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "counter", false));
    uint64_t p = client_alloc(&c, 4 * 32 * 4);
    uint32_t rid = client_region(&c, 4 * 32 * 4, (void **)&out);
    g_assert_cmpint(launch_spin(&c, spin_function(&c, "k_loop"), p, 1000, 4, false), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, p, 4 * 32 * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < 4 * 32; i++)
        g_assert_cmpuint(out[i], ==, 1000);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* A crash is reported in the log (signal and call stack) and the daemon still dies of it. */
static void test_crash_report(void)
{
    struct daemon d;
    gchar *log = NULL;
    int status = 0;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(tenant_round_trip(d.socket, "before-crash"));
    kill(d.pid, SIGSEGV);
    g_assert_cmpint(waitpid(d.pid, &status, 0), ==, d.pid);
    g_assert_true(WIFSIGNALED(status));
    g_assert_cmpint(WTERMSIG(status), ==, SIGSEGV);
    g_assert_true(g_file_get_contents(d.log, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "kerneletd: fatal signal SIGSEGV; call stack"));
    g_assert_nonnull(strstr(log, "kerneletd(")); /* at least one frame of the daemon */
    g_free(log);
    unlink(d.log);
    unlink(d.socket);
    rmdir(d.dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: test_kerneletd_stop KERNELETD\n");
        return 2;
    }
    kerneletd = argv[1];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/stop/loop-computes", test_loop_computes);
    g_test_add_func("/kerneletd/stop/forever", test_forever);
    g_test_add_func("/kerneletd/stop/long-finite", test_long_finite);
    g_test_add_func("/kerneletd/stop/crash-report", test_crash_report);
    return g_test_run();
}
