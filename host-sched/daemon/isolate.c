/* Worker processes of the isolation tier: started at a tenant's HELLO, one per isolated
 * tenant, each kerneletd executed anew with the daemon's own options plus --worker-fd (the
 * tenant's connection) and --worker-input (what the daemon read of it: the HELLO, which
 * the worker answers). A thread per worker waits for its end and tells the server. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "isolate.h"

extern char **environ;

/* Where the worker finds its descriptors: the tenant's connection, what the daemon read of
 * it, and the daemon's end of the settings socket. */
#define WORKER_CONN_FD 3
#define WORKER_INPUT_FD 4
#define WORKER_CTL_FD 5

struct waiter {
    struct kd_isolation *iso;
    pid_t pid;
    char name[KERNELET_NAME_MAX];
};

void kd_isolation_init(struct kd_isolation *iso, char **argv)
{
    memset(iso, 0, sizeof(*iso));
    iso->argv = argv;
    iso->max_workers = 8;
    kd_isolation_set_rate(iso, 4);
    pthread_mutex_init(&iso->lock, NULL);
    pthread_cond_init(&iso->ended, NULL);
}

void kd_isolation_set_rate(struct kd_isolation *iso, double per_second)
{
    iso->start_rate = per_second;
    iso->start_burst = per_second * 4 > 4 ? per_second * 4 : 4;
}

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Takes one start from uid's bucket (lock held); false when it is empty. Root's and the
 * daemon's own starts are not bounded (the operator's --isolate NAME of a VM). The
 * fullest buckets are the ones forgotten when the table is full: they bound nobody. */
static bool take_start(struct kd_isolation *iso, uid_t uid)
{
    struct kd_start_bucket *b = NULL;
    double now = mono_s();

    if (iso->start_rate <= 0 || uid == 0 || uid == getuid())
        return true;
    for (unsigned i = 0; i < iso->n_buckets && !b; i++)
        if (iso->buckets[i].uid == uid)
            b = &iso->buckets[i];
    if (!b) {
        if (iso->n_buckets < KD_RATE_USERS) {
            b = &iso->buckets[iso->n_buckets++];
        } else {
            b = &iso->buckets[0];
            for (unsigned i = 1; i < KD_RATE_USERS; i++)
                if (iso->buckets[i].tokens > b->tokens)
                    b = &iso->buckets[i];
        }
        *b = (struct kd_start_bucket){.uid = uid, .tokens = iso->start_burst, .at = now};
    }
    b->tokens += (now - b->at) * iso->start_rate;
    if (b->tokens > iso->start_burst)
        b->tokens = iso->start_burst;
    b->at = now;
    if (b->tokens < 1)
        return false;
    b->tokens -= 1;
    return true;
}

static bool wanted(const struct kd_isolation *iso, const struct kserver_handover *h)
{
    if (iso->all || (h->hello_flags & KERNELET_HELLO_ISOLATE))
        return true;
    for (unsigned i = 0; i < iso->n_names; i++)
        if (strcmp(iso->names[i], h->name) == 0)
            return true;
    return false;
}

/* A sealed memfd holding the input, so that any amount a tenant sent travels (argv
 * could not hold it). -1 on failure. */
static int input_fd(const void *input, size_t len)
{
    int fd = memfd_create("kerneletd-handover", MFD_CLOEXEC);
    size_t done = 0;

    while (fd >= 0 && done < len) {
        ssize_t w = write(fd, (const char *)input + done, len - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    if (fd >= 0 && lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The worker's arguments: the daemon's, then the worker's own; base (a decimal number) is
 * the worker's tenant id base, in storage the caller keeps until the spawn. */
static char **worker_argv(const struct kd_isolation *iso, const char *base)
{
    static char conn[] = "3", in[] = "4", ctl[] = "5", fd_opt[] = "--worker-fd",
                in_opt[] = "--worker-input", base_opt[] = "--worker-tenant-base",
                ctl_opt[] = "--worker-settings";
    size_t n = 0;
    char **argv;

    while (iso->argv[n])
        n++;
    if (!(argv = calloc(n + 9, sizeof(*argv))))
        return NULL;
    memcpy(argv, iso->argv, n * sizeof(*argv));
    argv[n] = fd_opt;
    argv[n + 1] = conn;
    argv[n + 2] = in_opt;
    argv[n + 3] = in;
    argv[n + 4] = base_opt;
    argv[n + 5] = (char *)base;
    argv[n + 6] = ctl_opt;
    argv[n + 7] = ctl;
    return argv;
}

/* The worker, with the connection and the input at the descriptors it expects. posix_spawn
 * rather than fork: the daemon has threads and a GPU context, and the child only execs. */
static int spawn_worker(const int fds[3], char **argv, pid_t *pid)
{
    static const int at[3] = {WORKER_CONN_FD, WORKER_INPUT_FD, WORKER_CTL_FD};
    posix_spawn_file_actions_t fa;
    int src[3], moved[3] = {-1, -1, -1}, rc = 0;

    /* each from above the targets first, so that no dup2 overwrites a later source */
    for (int i = 0; i < 3 && !rc; i++)
        if ((src[i] = moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0)
            rc = errno;
    posix_spawn_file_actions_init(&fa);
    for (int i = 0; i < 3 && !rc; i++)
        rc = posix_spawn_file_actions_adddup2(&fa, src[i], at[i]);
    if (rc == 0)
        rc = posix_spawn(pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 3; i++)
        if (moved[i] >= 0)
            close(moved[i]);
    return rc;
}

/* The worker pid has ended: its slot in the server and here are free. */
static void forget(struct kd_isolation *iso, pid_t pid)
{
    pthread_mutex_lock(&iso->lock);
    if (iso->srv)
        kserver_isolated_ended(iso->srv, pid);
    for (unsigned i = 0; i < iso->n_workers; i++)
        if (iso->workers[i] == pid) {
            iso->workers[i] = iso->workers[--iso->n_workers];
            break;
        }
    pthread_cond_broadcast(&iso->ended);
    pthread_mutex_unlock(&iso->lock);
}

static void *wait_worker(void *arg)
{
    struct waiter *w = arg;
    int status = 0;

    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status))
        fprintf(stderr, "kerneletd: isolated tenant '%s': worker %d ended by signal %d\n",
                w->name, (int)w->pid, WTERMSIG(status));
    else
        fprintf(stderr, "kerneletd: isolated tenant '%s': worker %d ended (exit %d)\n",
                w->name, (int)w->pid, WEXITSTATUS(status));
    forget(w->iso, w->pid);
    free(w);
    return NULL;
}

/* Starts the waiter of a worker; false when no thread can be made (the worker is then
 * killed and reaped here). */
static bool watch_worker(struct kd_isolation *iso, pid_t pid, const char *name)
{
    struct waiter *w = calloc(1, sizeof(*w));
    pthread_attr_t attr;
    pthread_t t;
    bool ok;

    if (!w)
        return false;
    *w = (struct waiter){.iso = iso, .pid = pid};
    snprintf(w->name, sizeof(w->name), "%s", name);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    ok = pthread_create(&t, &attr, wait_worker, w) == 0;
    pthread_attr_destroy(&attr);
    if (!ok)
        free(w);
    return ok;
}

static int refuse(char *err, size_t errlen, int code, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -code;
}

int kd_isolate(void *user, const struct kserver_handover *h, pid_t *worker,
               uint64_t *tenant_id, int *ctl_fd, char *err, size_t errlen)
{
    struct kd_isolation *iso = user;
    char **argv, base[24];
    int in, ctl[2];
    pid_t pid;

    if (!wanted(iso, h))
        return 0;
    pthread_mutex_lock(&iso->lock);
    bool room = iso->n_workers < iso->max_workers && iso->n_workers < KD_MAX_WORKERS;
    bool rate = room && take_start(iso, h->uid);
    pthread_mutex_unlock(&iso->lock);
    if (!room)
        return refuse(err, errlen, EAGAIN,
                      iso->max_workers ? "as many isolated tenants as --max-isolated allows"
                                       : "isolation is off (--max-isolated 0)");
    if (!rate)
        return refuse(err, errlen, EAGAIN, "its user started workers faster than "
                      "--isolate-rate allows");
    /* The daemon's own tenants have 32-bit ids: each worker's lie above them, apart. */
    uint64_t id_base = ++iso->started << 32;
    snprintf(base, sizeof(base), "%llu", (unsigned long long)id_base);
    if (!(argv = worker_argv(iso, base)))
        return refuse(err, errlen, ENOMEM, "out of memory");
    if ((in = input_fd(h->input, h->input_len)) < 0) {
        free(argv);
        return refuse(err, errlen, errno ? errno : EIO, "cannot pass the connection on");
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0) {
        close(in);
        free(argv);
        return refuse(err, errlen, errno, "cannot make the worker's settings socket");
    }
    int rc = spawn_worker((const int[3]){h->fd, in, ctl[1]}, argv, &pid);
    close(in);
    close(ctl[1]);
    free(argv);
    if (rc != 0) {
        close(ctl[0]);
        return refuse(err, errlen, rc, "cannot start a worker process");
    }
    pthread_mutex_lock(&iso->lock);
    iso->workers[iso->n_workers++] = pid;
    pthread_mutex_unlock(&iso->lock);
    if (!watch_worker(iso, pid, h->name)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        forget(iso, pid);
        close(ctl[0]);
        return refuse(err, errlen, EAGAIN, "cannot watch a worker process");
    }
    fprintf(stderr, "kerneletd: tenant '%s' (pid %d) isolated: served by worker %d in a GPU "
            "context of its own\n", h->name, (int)h->pid, (int)pid);
    *worker = pid;
    *tenant_id = id_base + 1; /* a worker's scheduler numbers its one tenant 1 */
    *ctl_fd = ctl[0];
    return 1;
}

/* Waits until no worker is left or the deadline passes; whether none is left. */
static bool wait_all(struct kd_isolation *iso, double seconds)
{
    struct timespec until;
    bool none;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)seconds;
    until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&iso->lock);
    while (iso->n_workers > 0 &&
           pthread_cond_timedwait(&iso->ended, &iso->lock, &until) != ETIMEDOUT) {
    }
    none = iso->n_workers == 0;
    pthread_mutex_unlock(&iso->lock);
    return none;
}

static void signal_all(struct kd_isolation *iso, int sig)
{
    pthread_mutex_lock(&iso->lock);
    for (unsigned i = 0; i < iso->n_workers; i++)
        kill(iso->workers[i], sig);
    pthread_mutex_unlock(&iso->lock);
}

void kd_isolation_stop(struct kd_isolation *iso, double grace_s)
{
    signal_all(iso, SIGTERM);
    if (!wait_all(iso, grace_s)) {
        signal_all(iso, SIGKILL);
        wait_all(iso, 2.0);
    }
    pthread_mutex_lock(&iso->lock);
    iso->srv = NULL; /* the server may go now: a late waiter only reaps */
    pthread_mutex_unlock(&iso->lock);
}

long kd_worker_read_input(int fd, void *buf, size_t cap)
{
    size_t len = 0;

    for (;;) {
        ssize_t r = read(fd, (char *)buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return (long)len;
        len += (size_t)r;
        if (len == cap) /* more than a connection's buffer: not from the daemon */
            return -1;
    }
}
