/* kerneletd --kernel-time-limit on the emulator: a tenant's kernel that never ends is
 * stopped at the limit and its tenant gets CUDA's launch timeout (702), while another
 * tenant's work runs and verifies, and the daemon stays responsive and stops cleanly. The
 * limit is each tenant's policy: the option is the default, `kernelet-ctl set TENANT
 * time-limit=SECONDS` gives a tenant its own, and bad values are refused whole.
 *   test_kerneletd_runaway KERNELETD KERNELET-CTL --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

#define LAUNCH_TIMEOUT 702 /* CUDA_ERROR_LAUNCH_TIMEOUT */

static const char *kerneletd, *kernelet_ctl;

/* An answer that never comes fails the test instead of hanging it. */
static void receive_timeout(int fd, int seconds)
{
    struct timeval tv = {.tv_sec = seconds};

    g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), ==, 0);
}

/* kernelet-ctl --socket SOCKET set TENANT SETTING... ; its exit status, its output in
 * *out (may be NULL; g_free it). */
static int ctl(const char *socket, char **out, const char *const *args)
{
    const char *argv[16] = {kernelet_ctl, "--socket", socket};
    size_t n = 3;
    gint status;

    while (*args && n < G_N_ELEMENTS(argv) - 1)
        argv[n++] = *args++;
    /* its output never goes to ours, which is TAP */
    GSpawnFlags quiet = G_SPAWN_STDERR_TO_DEV_NULL | (out ? 0 : G_SPAWN_STDOUT_TO_DEV_NULL);
    g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, quiet, NULL, NULL, out, NULL,
                               &status, NULL));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* kernelet-ctl set TENANT SETTING (one or two settings); the exit status. */
static int ctl_set(const char *socket, uint64_t tenant, const char *setting, const char *more)
{
    char id[32];
    const char *args[] = {"set", id, setting, more, NULL};

    g_snprintf(id, sizeof(id), "%" G_GUINT64_FORMAT, tenant);
    return ctl(socket, NULL, args);
}

/* A tenant (given its own limit when limit is not NULL) whose kernel never ends: the
 * connection is in c, the id of its CTX_SYNC (answered once the kernel is stopped) is
 * returned, *start is when it was launched. */
static uint64_t spin_forever(struct client *c, const char *socket, const char *name,
                             const char *limit, double *start)
{
    g_assert_true(client_open_path(c, socket, name, false));
    receive_timeout(c->fd, 30);
    if (limit)
        g_assert_cmpint(ctl_set(socket, c->tenant, limit, NULL), ==, 0);
    uint64_t p = client_alloc(c, 8 * 32 * 4);
    uint64_t fn = spin_function(c, "k_forever");
    *start = now_s();
    g_assert_cmpint(launch_spin(c, fn, p, -1, 8, false), ==, KERNELET_ST_OK);
    uint64_t sync = client_send(c, KERNELET_OP_CTX_SYNC, NULL, 0, -1);
    g_assert_cmpuint(sync, !=, 0);
    return sync;
}

/* The spinner's sync fails with CUDA's launch timeout no sooner than limit_s after start
 * (and well before 20 s); closes it. */
static void expect_stopped(struct client *c, uint64_t sync, double start, double limit_s)
{
    g_assert_cmpint(client_recv(c, KERNELET_OP_CTX_SYNC, sync), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c->cuda, ==, LAUNCH_TIMEOUT);
    double took = now_s() - start;
    g_test_message("spinner stopped after %.2f s", took);
    g_assert_cmpfloat(took, >=, limit_s - 0.05);
    g_assert_cmpfloat(took, <, 20.0);
    client_close(c);
}

static void test_spinner_stopped(void)
{
    const char *opts[] = {"--kernel-time-limit", "1.5", NULL};
    struct daemon d;
    struct client spinner;
    double start, took;

    daemon_start(&d, kerneletd, opts);
    uint64_t sync = spin_forever(&spinner, d.socket, "spinner", NULL, &start);
    /* The bystander queues behind the spinner on the emulator's one worker, and is served
     * once the limit stops it. */
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_test_message("bystander served after %.2f s", now_s() - start);
    expect_stopped(&spinner, sync, start, 1.5);

    g_assert_true(tenant_round_trip(d.socket, "later"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* The operator lowers the limit of a tenant whose kernel is running (with no limit when it
 * started): that kernel is stopped, not only its next one. */
static void test_lowered_while_running(void)
{
    const char *opts[] = {"--kernel-time-limit", "0", NULL};
    struct daemon d;
    struct client spinner;
    double start, took;

    daemon_start(&d, kerneletd, opts);
    uint64_t sync = spin_forever(&spinner, d.socket, "spinner", NULL, &start);
    g_usleep(500000);
    g_assert_cmpint(ctl_set(d.socket, spinner.tenant, "time-limit=0.2", NULL), ==, 0);
    double lowered = now_s();
    expect_stopped(&spinner, sync, start, 0.5);
    g_test_message("stopped %.2f s after the limit was lowered", now_s() - lowered);
    g_assert_cmpfloat(now_s() - lowered, <, 5.0);
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

/* A tenant with its own limit (kernelet-ctl time-limit=SECONDS) that runs k_loop over
 * `words` words to n; the launch's CUDA result (0: it ran) and its seconds in *took. */
static uint32_t run_loop(const char *socket, const char *name, const char *limit, uint32_t n,
                         bool verify, double *took)
{
    enum { WORDS = 8 * 32 };
    struct client c;
    uint32_t *out;
    double start;

    g_assert_true(client_open_path(&c, socket, name, false));
    receive_timeout(c.fd, 60);
    if (limit)
        g_assert_cmpint(ctl_set(socket, c.tenant, limit, NULL), ==, 0);
    uint64_t p = client_alloc(&c, WORDS * 4);
    uint32_t rid = client_region(&c, WORDS * 4, (void **)&out);
    uint64_t fn = spin_function(&c, "k_loop");
    start = now_s();
    g_assert_cmpint(launch_spin(&c, fn, p, (int)n, 8, false), ==, KERNELET_ST_OK);
    int st = client_sync(&c);
    *took = now_s() - start;
    uint32_t cuda = st == KERNELET_ST_OK ? 0 : c.cuda;
    if (verify) {
        g_assert_cmpint(st, ==, KERNELET_ST_OK);
        g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, p, WORDS * 4, NULL, 0,
                                    true), ==, KERNELET_ST_OK);
        for (unsigned i = 0; i < WORDS; i++)
            g_assert_cmpuint(out[i], ==, n);
    }
    client_close(&c);
    return cuda;
}

/* Two tenants, two limits: under a short default (0.3 s) a tenant given 60 s runs a kernel
 * of a few seconds to the end and its output verifies, a tenant left at the default has
 * the same kernel stopped, and a spinner given 1 s is stopped after 1 s. */
static void test_per_tenant(void)
{
    const char *opts[] = {"--kernel-time-limit", "0.3", NULL};
    enum { N = 1u << 22 };
    struct daemon d;
    struct client spinner;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_cmpuint(run_loop(d.socket, "patient", "time-limit=60", N, true, &took), ==, 0);
    g_test_message("patient's kernel ran %.2f s", took);
    g_assert_cmpfloat(took, >, 0.3);  /* the default would have stopped it */
    g_assert_cmpuint(run_loop(d.socket, "default", NULL, N, false, &took), ==, LAUNCH_TIMEOUT);
    g_test_message("default tenant's kernel stopped after %.2f s", took);

    double start;
    uint64_t sync = spin_forever(&spinner, d.socket, "spinner", "time-limit=1", &start);
    expect_stopped(&spinner, sync, start, 1.0);
    g_assert_true(tenant_round_trip(d.socket, "later"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* kernelet-ctl refuses a bad time limit before sending anything, so that a setting given
 * beside it is not applied either; the daemon refuses one that bypasses kernelet-ctl
 * (test_server's /server/admin-time-limit). What is set shows in --json. */
static void test_ctl_values(void)
{
    const char *bad[] = {"time-limit=-1", "time-limit=abc", "time-limit=86400.5",
                         "time-limit=nan", "time-limit=", "time-limit=1e9"};
    const char *json[] = {"--json", NULL};
    struct daemon d;
    struct client c;
    char *out = NULL;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "policy", false));
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        g_assert_cmpint(ctl_set(d.socket, c.tenant, "weight=300", bad[i]), ==, 2);
    g_assert_cmpint(ctl_set(d.socket, c.tenant, "time-limit=2.5", NULL), ==, 0);
    g_assert_cmpint(ctl(d.socket, &out, json), ==, 0);
    g_assert_nonnull(strstr(out, "\"weight\": 100,"));      /* no bad set was half-applied */
    g_assert_nonnull(strstr(out, "\"kernel_time_limit_s\": 2.500}"));
    g_free(out);
    /* 0: back to the daemon's default (120 s) */
    g_assert_cmpint(ctl_set(d.socket, c.tenant, "time-limit=0", NULL), ==, 0);
    g_assert_cmpint(ctl(d.socket, &out, json), ==, 0);
    g_assert_nonnull(strstr(out, "\"kernel_time_limit_s\": 120.000}"));
    g_free(out);
    client_close(&c);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 3) {
        g_printerr("usage: test_kerneletd_runaway KERNELETD KERNELET-CTL\n");
        return 2;
    }
    kerneletd = argv[1];
    kernelet_ctl = argv[2];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/runaway/stopped", test_spinner_stopped);
    g_test_add_func("/kerneletd/runaway/limit-values", test_limit_values);
    g_test_add_func("/kerneletd/runaway/lowered-while-running", test_lowered_while_running);
    g_test_add_func("/kerneletd/runaway/per-tenant", test_per_tenant);
    g_test_add_func("/kerneletd/runaway/ctl-values", test_ctl_values);
    return g_test_run();
}
