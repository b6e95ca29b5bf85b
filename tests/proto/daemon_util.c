/* See daemon_util.h. */
#define _GNU_SOURCE
#include <pwd.h>
#include "daemon_util.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernelet/protocol.h"
#include "server_harness.h"

double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void exec_daemon(const struct daemon *d, const char *path, const char *const *extra)
{
    const char *argv[32] = {path, "--socket", d->socket, "--backend", "emu"};
    const char *backend = getenv("KERNELET_TEST_BACKEND");
    int n = 5, fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (backend && *backend) /* the same attacks on another backend (the GPU machine) */
        argv[4] = backend;

    for (; extra && *extra && n < 31; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    execv(path, (char *const *)argv);
    _exit(127);
}

/* Whether a socket listens at path: the daemon binds (the file appears) before it listens,
 * and a connection in between is refused. /proc/net/unix flags 00010000: listening. */
static bool listening(const char *path)
{
    gchar *text = NULL, **lines;
    bool found = false;

    if (!g_file_get_contents("/proc/net/unix", &text, NULL, NULL))
        return access(path, F_OK) == 0; /* no procfs: the file is the best we know */
    lines = g_strsplit(text, "\n", -1);
    for (gchar **l = lines; *l && !found; l++) {
        char flags[16], where[300];
        found = sscanf(*l, "%*s %*s %*s %15s %*s %*s %*s %299s", flags, where) == 2 &&
                strcmp(where, path) == 0 && strcmp(flags, "00010000") == 0;
    }
    g_strfreev(lines);
    g_free(text);
    return found;
}

void daemon_start(struct daemon *d, const char *path, const char *const *extra)
{

    g_snprintf(d->dir, sizeof(d->dir), "%s/kerneletd-XXXXXX", g_get_tmp_dir());
    g_assert_nonnull(mkdtemp(d->dir));
    /* Tenants of other users (run_as) must reach the socket. */
    g_assert_cmpint(chmod(d->dir, 0755), ==, 0);
    g_snprintf(d->socket, sizeof(d->socket), "%s/k.sock", d->dir);
    g_snprintf(d->log, sizeof(d->log), "%s/kd.log", d->dir);
    d->pid = fork();
    g_assert_cmpint(d->pid, >=, 0);
    if (d->pid == 0)
        exec_daemon(d, path, extra);
    for (int i = 0; !listening(d->socket); i++) {
        g_assert_true(daemon_alive(d));
        g_assert_cmpint(i, <, 1000);
        usleep(10000);
    }
}

bool daemon_alive(const struct daemon *d)
{
    return kill(d->pid, 0) == 0 && waitpid(d->pid, NULL, WNOHANG) == 0;
}

static void print_log(const struct daemon *d)
{
    gchar *text = NULL;

    if (g_file_get_contents(d->log, &text, NULL, NULL))
        g_test_message("kerneletd's log:\n%s", text);
    g_free(text);
}

int daemon_stop(struct daemon *d, double limit_s, double *seconds)
{
    double start = now_s();
    int status = -1;

    kill(d->pid, SIGTERM);
    while (now_s() - start < limit_s) {
        if (waitpid(d->pid, &status, WNOHANG) == d->pid)
            break;
        status = -1;
        usleep(10000);
    }
    *seconds = now_s() - start;
    if (status == -1) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
    }
    if (status != 0)
        print_log(d);
    unlink(d->log);
    unlink(d->socket);
    rmdir(d->dir);
    return status;
}

int idle_connect(const char *socket)
{
    return kproto_connect(socket);
}

bool closed_within(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[256];

    if (poll(&p, 1, timeout_ms) <= 0)
        return false;
    ssize_t r = read(fd, buf, sizeof(buf));
    return r == 0 || (r < 0 && errno == ECONNRESET);
}

bool tenant_round_trip(const char *socket, const char *name)
{
    return tenant_round_trip_flags(socket, name, 0);
}

bool tenant_round_trip_flags(const char *socket, const char *name, uint32_t hello_flags)
{
    struct client c;

    if (!client_open_flags(&c, socket, name, hello_flags)) {
        client_close(&c);
        return false;
    }
    tenant_check_kernel(&c);
    client_close(&c);
    return true;
}

void tenant_check_kernel(struct client *c)
{
    tenant_check_entry(c, harness_ptx, "k_add");
}

void tenant_check_entry(struct client *c, const char *ptx, const char *entry)
{
    enum { N = 256 };
    struct kernelet_function f;
    struct kernelet_param params[8];
    uint32_t in[N], *out;
    struct { uint64_t p; uint32_t n, v; } args = {.n = N, .v = 7};

    for (unsigned i = 0; i < N; i++)
        in[i] = i * 3u;
    args.p = client_alloc(c, sizeof(in));
    uint32_t rid = client_region(c, sizeof(in), (void **)&out);
    g_assert_cmpint(client_copy(c, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, args.p, 0,
                                sizeof(in), in, 0, false), ==, KERNELET_ST_OK);
    uint64_t fn = client_function(c, client_module_ptx(c, ptx), entry, &f, params);
    g_assert_cmpuint(fn, !=, 0);
    /* 8 blocks of 32 threads: one thread per word. */
    g_assert_cmpint(client_launches(c, fn, &args, sizeof(args), 1, N / 8, false), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(client_copy(c, KERNELET_COPY_DTOH, rid, 0, args.p, sizeof(in), NULL, 0,
                                true), ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < N; i++)
        g_assert_cmpuint(out[i], ==, i * 3u + 7u);
}

const char *daemon_test_init(int *argc, char ***argv)
{
    g_test_init(argc, argv, NULL);
    if (*argc < 2)
        g_error("usage: %s KERNELETD", (*argv)[0]);
    signal(SIGPIPE, SIG_IGN);
    return (*argv)[1];
}

bool user_uid(const char *name, uid_t *uid)
{
    const struct passwd *pw = getpwnam(name);

    if (pw)
        *uid = pw->pw_uid;
    return pw != NULL;
}

pid_t run_as(uid_t uid, int (*fn)(void *), void *arg)
{
    pid_t pid = fork();

    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 ||
            setresuid(uid, uid, uid) != 0)
            _exit(126);
        _exit(fn(arg));
    }
    return pid;
}

bool child_ok(pid_t pid)
{
    int status;

    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

const char spin_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry k_forever(.param .u64 p)\n"
    "{\n"
    "    .reg .b32 %r<2>;\n"
    "    mov.u32 %r1, 0;\n"
    "SPIN:\n"
    "    add.u32 %r1, %r1, 1;\n"
    "    bra SPIN;\n"
    "}\n"
    ".visible .entry k_loop(.param .u64 p, .param .u32 n)\n"
    "{\n"
    "    .reg .pred %q<2>;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .b64 %rd<4>;\n"
    "    ld.param.u64 %rd1, [p];\n"
    "    ld.param.u32 %r2, [n];\n"
    "    mov.u32 %r1, 0;\n"
    "LOOP:\n"
    "    add.u32 %r1, %r1, 1;\n"
    "    setp.lt.u32 %q1, %r1, %r2;\n"
    "    @%q1 bra LOOP;\n"
    "    mov.u32 %r3, %ctaid.x;\n"
    "    mov.u32 %r4, %ntid.x;\n"
    "    mov.u32 %r5, %tid.x;\n"
    "    mad.lo.s32 %r3, %r3, %r4, %r5;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mul.wide.u32 %rd3, %r3, 4;\n"
    "    add.s64 %rd2, %rd2, %rd3;\n"
    "    st.global.u32 [%rd2], %r1;\n"
    "    ret;\n"
    "}\n";

uint64_t spin_function(struct client *c, const char *entry)
{
    struct kernelet_function f;
    struct kernelet_param params[4];
    uint64_t fn = client_function(c, client_module_ptx(c, spin_ptx), entry, &f, params);

    g_assert_cmpuint(fn, !=, 0);
    return fn;
}

int launch_spin(struct client *c, uint64_t fn, uint64_t p, int n, unsigned grid, bool complete)
{
    struct {
        struct kernelet_batch b;
        struct kernelet_rec_launch l;
        uint64_t p;
        uint32_t n, pad;
    } q = {
        .b = {.count = 1, .flags = complete ? KERNELET_BATCH_COMPLETE : 0},
        .l = {.h = {.op = KERNELET_REC_LAUNCH,
                    .length = sizeof(q.l) + (n < 0 ? 8 : 16),
                    .stream = KERNELET_STREAM_LEGACY},
              .function = fn, .grid = {grid, 1, 1}, .block = {32, 1, 1},
              .param_bytes = n < 0 ? 8 : 12},
        .p = p, .n = n < 0 ? 0 : (uint32_t)n,
    };

    return client_call(c, KERNELET_OP_LAUNCH_BATCH, &q, sizeof(q.b) + q.l.h.length, -1);
}

int daemon_option_status(const char *path, const char *opt, const char *value)
{
    const char *argv[] = {path, "--backend", "emu", "--socket", "/nonexistent/s", opt, value,
                          NULL};
    gint status;

    g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL,
                               G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                               NULL, NULL, NULL, &status, NULL));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
