/* kerneletd against connections that never say HELLO (issue 15: 256 of them used to lock
 * every other tenant out with NO_DEVICE): they are closed after --hello-timeout, and one
 * unprivileged user holds at most --max-connections-per-user of them, so that a
 * well-behaved tenant is served, and the daemon stays responsive.
 *   test_kerneletd_limits KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

static const char *kerneletd;

/* Fills every slot from the daemon's own user (privileged: not held to a per-user share):
 * a new tenant is refused at once, and served as soon as the idle connections time out. */
static void test_hello_timeout(void)
{
    const char *opts[] = {"--max-connections", "8", "--hello-timeout", "1.5", NULL};
    struct daemon d;
    int idle[8], extra;
    double start, took;

    daemon_start(&d, kerneletd, opts);
    start = now_s();
    for (unsigned i = 0; i < 8; i++)
        g_assert_cmpint(idle[i] = idle_connect(d.socket), >=, 0);
    /* Half a header and then silence (slowloris) is no HELLO either. */
    g_assert_cmpint(write(idle[0], "\x01\x00\x00\x00", 4), ==, 4);
    g_assert_cmpint(extra = idle_connect(d.socket), >=, 0);
    g_assert_true(closed_within(extra, 1000)); /* refused: every slot is taken */
    close(extra);

    bool served = false;
    while (!served && now_s() - start < 1.5 + 5.0) {
        served = tenant_round_trip(d.socket, "patient");
        if (!served)
            usleep(100000);
    }
    g_assert_true(served);
    g_assert_cmpfloat(now_s() - start, >=, 1.0); /* served because the idle ones went */
    for (unsigned i = 0; i < 8; i++) {
        g_assert_true(closed_within(idle[i], 1000));
        close(idle[i]);
    }
    g_assert_true(tenant_round_trip(d.socket, "second")); /* still responsive */
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

struct hog {
    const char *socket;
    int report;                 /* pipe: the number of connections the daemon kept */
};

/* As an unprivileged user: 12 idle connections, of which the daemon keeps its share (4);
 * reports how many it kept, then checks they are closed after the HELLO timeout. */
static int hog(void *arg)
{
    struct hog *h = arg;
    int fds[12];
    unsigned kept = 0;
    double start = now_s();

    for (unsigned i = 0; i < 12; i++)
        if ((fds[i] = idle_connect(h->socket)) < 0)
            return 2;
    usleep(500000); /* time for the daemon to accept (and refuse) them all */
    for (unsigned i = 0; i < 12; i++)
        kept += !closed_within(fds[i], 20);
    if (write(h->report, &kept, sizeof(kept)) != (ssize_t)sizeof(kept))
        return 3;
    for (unsigned i = 0; i < 12; i++)
        if (!closed_within(fds[i], 8000))
            return 4;
    return now_s() - start >= 1.5 ? 0 : 5;
}

static int good_tenant(void *arg)
{
    return tenant_round_trip(arg, "neighbour") ? 0 : 1;
}


/* One unprivileged user with many idle connections takes only its share: another user's
 * tenant is served at once (no waiting for the timeout), and root still administers. */
static void test_per_user(void)
{
    const char *opts[] = {"--max-connections", "16", "--max-connections-per-user", "4",
                          "--hello-timeout", "3", NULL};
    uid_t nobody, other;
    struct daemon d;
    struct client admin;
    int report[2];
    unsigned kept = 0;
    double took;

    if (getuid() != 0 || !user_uid("nobody", &nobody) ||
        !(user_uid("daemon", &other) || user_uid("bin", &other))) {
        g_test_skip("needs root and the users nobody and daemon (or bin)");
        return;
    }
    daemon_start(&d, kerneletd, opts);
    g_assert_cmpint(pipe(report), ==, 0);
    struct hog h = {.socket = d.socket, .report = report[1]};
    pid_t hog_pid = run_as(nobody, hog, &h);
    g_assert_cmpint(read(report[0], &kept, sizeof(kept)), ==, sizeof(kept));
    g_assert_cmpuint(kept, ==, 4);
    g_assert_true(child_ok(run_as(other, good_tenant, d.socket)));
    g_assert_true(client_open_path(&admin, d.socket, "operator", true));
    client_close(&admin);
    g_assert_true(child_ok(hog_pid));
    g_assert_true(tenant_round_trip(d.socket, "after"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
    close(report[0]);
    close(report[1]);
}

/* Options that make no sense are refused, not half-applied. */
static void test_bad_options(void)
{
    const char *bad[][2] = {{"--hello-timeout", "0"}, {"--hello-timeout", "-1"},
                            {"--hello-timeout", "5x"}, {"--hello-timeout", "nan"},
                            {"--hello-timeout", "99999"},
                            {"--max-connections-per-user", "0"},
                            {"--max-connections-per-user", "-3"},
                            {"--max-connections", "18446744073709551617"}};

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        g_assert_cmpint(daemon_option_status(kerneletd, bad[i][0], bad[i][1]), ==, 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: test_kerneletd_limits KERNELETD\n");
        return 2;
    }
    kerneletd = argv[1];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/hello-timeout", test_hello_timeout);
    g_test_add_func("/kerneletd/per-user", test_per_user);
    g_test_add_func("/kerneletd/bad-options", test_bad_options);
    return g_test_run();
}
