/* kerneletd's isolation tier on the emulator (issue 15, item 4): a tenant that asks for a
 * GPU context of its own (HELLO flag ISOLATE, what KERNELET_ISOLATE=1 sends), or that the
 * operator names with --isolate, is served by a worker process of the daemon with a backend
 * of its own; the daemon lists it, counts it against its connection limits, and stops the
 * worker with itself. A worker that dies takes only its own tenant with it.
 *   test_kerneletd_isolate KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

static const char *kerneletd;

/* The status row of the tenant called name, as an administrator sees it; false when the
 * daemon lists no such tenant. */
static bool row_named(const char *socket, const char *name, struct kernelet_tenant_status *out)
{
    struct client admin;
    struct kernelet_admin_status_req q = {0};
    struct kernelet_admin_status st;
    bool found = false;

    g_assert_true(client_open_path(&admin, socket, "admin", true));
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), -1), ==,
                    KERNELET_ST_OK);
    memcpy(&st, admin.answer, sizeof(st));
    for (uint32_t i = 0; i < st.n_tenants && !found; i++) {
        memcpy(out, admin.answer + sizeof(st) + i * sizeof(*out), sizeof(*out));
        found = strcmp(out->name, name) == 0;
    }
    client_close(&admin);
    return found;
}

/* The parent of process pid (from /proc), or -1 when it does not exist. */
static pid_t parent_of(pid_t pid)
{
    char path[64], *text = NULL;
    pid_t ppid = -1;

    g_snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return -1;
    const char *after = strrchr(text, ')'); /* the name may hold spaces */
    char state;
    if (!after || sscanf(after + 1, " %c %d", &state, &ppid) != 2 || state == 'Z')
        ppid = -1;
    g_free(text);
    return ppid;
}

/* Whether the daemon stops listing name within seconds (its worker ended and was reaped). */
static bool unlisted_within(const char *socket, const char *name, double seconds)
{
    struct kernelet_tenant_status row;
    double start = now_s();

    while (now_s() - start < seconds) {
        if (!row_named(socket, name, &row))
            return true;
        usleep(20000);
    }
    return false;
}

/* An isolated tenant's row: flagged, with a worker that is a child of the daemon (not the
 * daemon itself, not the tenant). Its worker's pid. */
static pid_t expect_isolated(const struct daemon *d, const char *name, pid_t tenant_pid)
{
    struct kernelet_tenant_status row;

    g_assert_true(row_named(d->socket, name, &row));
    g_assert_true(row.flags & KERNELET_TENANT_ISOLATED);
    g_assert_cmpuint(row.pid, ==, (uint32_t)tenant_pid);
    g_assert_cmpuint(row.worker_pid, !=, 0);
    g_assert_cmpuint(row.worker_pid, !=, (uint32_t)d->pid);
    g_assert_cmpint(parent_of((pid_t)row.worker_pid), ==, d->pid);
    return (pid_t)row.worker_pid;
}

static void stop(struct daemon *d)
{
    double seconds;

    g_assert_cmpint(daemon_stop(d, 20, &seconds), ==, 0);
}

/* A tenant that asks is served in a worker: its kernel verifies there while a tenant of
 * the shared context verifies too; the worker ends when its tenant goes. */
static void test_requested(void)
{
    struct daemon d;
    struct client c;
    struct kernelet_tenant_status row;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_flags(&c, d.socket, "alone", KERNELET_HELLO_ISOLATE));
    pid_t worker = expect_isolated(&d, "alone", getpid());
    tenant_check_kernel(&c);
    /* its worker's figures reach the daemon's status (sent once a second) */
    double start = now_s();
    while (row_named(d.socket, "alone", &row) && (row.launches < 1 || row.mem_in_use == 0) &&
           now_s() - start < 10)
        usleep(100000);
    g_assert_cmpuint(row.launches, >=, 1);
    g_assert_cmpuint(row.mem_in_use, >, 0);
    g_assert_true(row.flags & KERNELET_TENANT_ISOLATED);
    g_assert_cmpuint(row.worker_pid, ==, (uint32_t)worker);
    g_assert_true(tenant_round_trip(d.socket, "shared"));
    tenant_check_kernel(&c); /* the worker still serves it */
    client_close(&c);
    g_assert_true(unlisted_within(d.socket, "alone", 10));
    g_assert_cmpint(parent_of(worker), ==, -1);
    /* A tenant that does not ask shares the daemon's context: no row says otherwise. */
    struct client s;
    g_assert_true(client_open_path(&s, d.socket, "plain", false));
    g_assert_true(row_named(d.socket, "plain", &row));
    g_assert_false(row.flags & KERNELET_TENANT_ISOLATED);
    g_assert_cmpuint(row.worker_pid, ==, 0);
    client_close(&s);
    stop(&d);
}

/* --isolate NAME isolates the tenant called NAME without its asking, and no other. */
static void test_by_name(void)
{
    const char *extra[] = {"--isolate", "vm-a", NULL};
    struct daemon d;
    struct client a, b;
    struct kernelet_tenant_status row;

    daemon_start(&d, kerneletd, extra);
    g_assert_true(client_open_path(&a, d.socket, "vm-a", false));
    g_assert_true(client_open_path(&b, d.socket, "vm-b", false));
    expect_isolated(&d, "vm-a", getpid());
    g_assert_true(row_named(d.socket, "vm-b", &row));
    g_assert_false(row.flags & KERNELET_TENANT_ISOLATED);
    tenant_check_kernel(&a);
    tenant_check_kernel(&b);
    client_close(&a);
    client_close(&b);
    stop(&d);
}

/* --max-isolated bounds the workers (each holds a GPU context): a request beyond it is
 * refused, and served again once a worker has ended; 0 refuses every request. */
static void test_limit(void)
{
    const char *one[] = {"--max-isolated", "1", NULL}, *none[] = {"--max-isolated", "0", NULL};
    struct daemon d;
    struct client a, b;

    daemon_start(&d, kerneletd, one);
    g_assert_true(client_open_flags(&a, d.socket, "first", KERNELET_HELLO_ISOLATE));
    g_assert_false(client_open_flags(&b, d.socket, "second", KERNELET_HELLO_ISOLATE));
    g_assert_cmpuint(b.status, ==, KERNELET_ST_UNAVAILABLE);
    client_close(&b);
    tenant_check_kernel(&a);
    client_close(&a);
    g_assert_true(unlisted_within(d.socket, "first", 10));
    g_assert_true(tenant_round_trip_flags(d.socket, "second", KERNELET_HELLO_ISOLATE));
    stop(&d);

    daemon_start(&d, kerneletd, none);
    g_assert_false(client_open_flags(&b, d.socket, "refused", KERNELET_HELLO_ISOLATE));
    g_assert_cmpuint(b.status, ==, KERNELET_ST_UNAVAILABLE);
    client_close(&b);
    g_assert_true(tenant_round_trip(d.socket, "plain"));
    stop(&d);
}

/* In the child: n isolated round trips as fast as they go; how many were served. */
struct start_loop {
    const char *socket;
    int n;
    int report;
};

static int start_loop(void *arg)
{
    struct start_loop *l = arg;
    int served = 0;

    for (int i = 0; i < l->n; i++)
        served += tenant_round_trip_flags(l->socket, "churn", KERNELET_HELLO_ISOLATE);
    return write(l->report, &served, sizeof(served)) == sizeof(served) ? 0 : 1;
}

static int served_as(uid_t uid, const char *socket, int n)
{
    int report[2], served = -1;
    struct start_loop l = {socket, n, 0};

    g_assert_cmpint(pipe(report), ==, 0);
    l.report = report[1];
    g_assert_true(child_ok(run_as(uid, start_loop, &l)));
    g_assert_cmpint(read(report[0], &served, sizeof(served)), ==, sizeof(served));
    close(report[0]);
    close(report[1]);
    return served;
}

/* A user who starts workers in a loop (each a GPU context) gets a burst of them, then
 * UNAVAILABLE until its bucket refills (--isolate-rate 1: bursts of 4, one a second);
 * another user is not held back by it. */
static void test_start_rate(void)
{
    const char *opts[] = {"--isolate-rate", "1", NULL};
    uid_t nobody, other;
    struct daemon d;

    if (getuid() != 0 || !user_uid("nobody", &nobody) ||
        !(user_uid("daemon", &other) || user_uid("bin", &other))) {
        g_test_skip("needs root and the users nobody and daemon (or bin)");
        return;
    }
    daemon_start(&d, kerneletd, opts);
    int served = served_as(nobody, d.socket, 8);
    g_assert_cmpint(served, >=, 4);
    g_assert_cmpint(served, <, 8);
    g_assert_cmpint(served_as(other, d.socket, 2), ==, 2);
    usleep(1300000);    /* a start comes back a second */
    g_assert_cmpint(served_as(nobody, d.socket, 1), ==, 1);
    stop(&d);
}

/* An isolated tenant keeps a connection slot: with --max-connections 2, an isolated tenant
 * and a shared one leave no room for a third. */
static void test_counts_as_connection(void)
{
    const char *extra[] = {"--max-connections", "2", NULL};
    struct daemon d;
    struct client a, b, c;

    daemon_start(&d, kerneletd, extra);
    g_assert_true(client_open_flags(&a, d.socket, "iso", KERNELET_HELLO_ISOLATE));
    g_assert_true(client_open_path(&b, d.socket, "shared", false));
    g_assert_false(client_open_path(&c, d.socket, "third", false));
    client_close(&c);
    client_close(&b);
    tenant_check_kernel(&a);
    client_close(&a);
    stop(&d);
}

/* The worker killed: its tenant loses its connection, nobody else notices. */
static void test_worker_killed(void)
{
    struct daemon d;
    struct client a;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_flags(&a, d.socket, "victim", KERNELET_HELLO_ISOLATE));
    pid_t worker = expect_isolated(&d, "victim", getpid());
    g_assert_cmpint(kill(worker, SIGKILL), ==, 0);
    g_assert_true(client_closed_by_server(&a, 5000));
    client_close(&a);
    g_assert_true(unlisted_within(d.socket, "victim", 10));
    g_assert_true(daemon_alive(&d));
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_assert_true(tenant_round_trip_flags(d.socket, "next", KERNELET_HELLO_ISOLATE));
    stop(&d);
}

/* A worker's tenant has an id of its own, apart from the daemon's tenants': the daemon
 * lists it under that id, and an administrator's setting sent to it (as QEMU sends a VM's
 * policy to the id its HELLO answered) goes to its worker and changes no other tenant.
 * Before, every worker's tenant was 1, as was the daemon's first tenant, whose weight it
 * set. */
static void test_tenant_ids(void)
{
    struct daemon d;
    struct client shared, iso, admin;
    struct kernelet_tenant_status row;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&shared, d.socket, "shared", false));
    g_assert_true(client_open_flags(&iso, d.socket, "apart", KERNELET_HELLO_ISOLATE));
    g_assert_cmpuint(iso.tenant, !=, shared.tenant);
    g_assert_true(row_named(d.socket, "apart", &row));
    g_assert_cmpuint(row.id, ==, iso.tenant);
    g_assert_true(client_open_path(&admin, d.socket, "admin", true));
    struct kernelet_admin_set set = {.tenant = iso.tenant, .fields = KERNELET_SET_WEIGHT,
                                     .weight = 700};
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    g_assert_true(row_named(d.socket, "shared", &row));
    g_assert_cmpuint(row.weight, !=, 700);
    set.tenant = iso.tenant + 1;                /* no such tenant anywhere: refused */
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_CUDA);
    set.tenant = shared.tenant;                 /* the daemon's own tenant: set */
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    g_assert_true(row_named(d.socket, "shared", &row));
    g_assert_cmpuint(row.weight, ==, 700);
    client_close(&admin);
    tenant_check_kernel(&iso);
    client_close(&iso);
    client_close(&shared);
    stop(&d);
}

/* The operator's settings reach an isolated tenant: a kernel time limit set for it over
 * the daemon's socket stops its never-ending kernel in its worker (the default, two
 * minutes, would let it spin past the test's 30 s wait). A setting travels to the worker
 * asynchronously and applies to launches the worker dispatches after it: the test waits
 * until the worker's own status row (sent every second) shows it. */
static void test_settings_reach_worker(void)
{
    struct daemon d;
    struct client iso, admin;
    struct timeval tv = {.tv_sec = 30};

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_flags(&iso, d.socket, "limited", KERNELET_HELLO_ISOLATE));
    g_assert_cmpint(setsockopt(iso.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), ==, 0);
    g_assert_true(client_open_path(&admin, d.socket, "admin", true));
    struct kernelet_admin_set set = {.tenant = iso.tenant, .fields = KERNELET_SET_TIME_LIMIT,
                                     .kernel_time_limit_ms = 300};
    g_assert_cmpint(client_call(&admin, KERNELET_OP_ADMIN_SET, &set, sizeof(set), -1), ==,
                    KERNELET_ST_OK);
    client_close(&admin);
    struct kernelet_tenant_status row = {0};
    for (double t0 = now_s(); now_s() - t0 < 10.0; usleep(50000))
        if (row_named(d.socket, "limited", &row) && row.kernel_time_limit_ms == 300)
            break;
    g_assert_cmpuint(row.kernel_time_limit_ms, ==, 300);
    uint64_t p = client_alloc(&iso, 8 * 32 * 4);
    uint64_t fn = spin_function(&iso, "k_forever");
    double start = now_s();
    g_assert_cmpint(launch_spin(&iso, fn, p, -1, 8, false), ==, KERNELET_ST_OK);
    g_assert_cmpint(client_call(&iso, KERNELET_OP_CTX_SYNC, NULL, 0, -1), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(iso.cuda, ==, 702); /* CUDA_ERROR_LAUNCH_TIMEOUT */
    g_assert_cmpfloat(now_s() - start, <, 20.0);
    client_close(&iso);
    stop(&d);
}

/* Stopping the daemon stops its workers: none is left behind serving a tenant. */
static void test_stop(void)
{
    struct daemon d;
    struct client a;
    double seconds;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_flags(&a, d.socket, "held", KERNELET_HELLO_ISOLATE));
    pid_t worker = expect_isolated(&d, "held", getpid());
    tenant_check_kernel(&a);
    g_assert_cmpint(daemon_stop(&d, 20, &seconds), ==, 0);
    g_assert_cmpfloat(seconds, <, 10);
    g_assert_cmpint(parent_of(worker), ==, -1);
    g_assert_true(client_closed_by_server(&a, 5000));
    client_close(&a);
}

int main(int argc, char **argv)
{
    kerneletd = daemon_test_init(&argc, &argv);
    g_test_add_func("/kerneletd/isolate/requested", test_requested);
    g_test_add_func("/kerneletd/isolate/by-name", test_by_name);
    g_test_add_func("/kerneletd/isolate/limit", test_limit);
    g_test_add_func("/kerneletd/isolate/start-rate", test_start_rate);
    g_test_add_func("/kerneletd/isolate/counts-as-connection", test_counts_as_connection);
    g_test_add_func("/kerneletd/isolate/worker-killed", test_worker_killed);
    g_test_add_func("/kerneletd/isolate/tenant-ids", test_tenant_ids);
    g_test_add_func("/kerneletd/isolate/settings-reach-worker", test_settings_reach_worker);
    g_test_add_func("/kerneletd/isolate/stop", test_stop);
    return g_test_run();
}
