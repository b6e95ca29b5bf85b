/* The server's life: the listening socket, the event loop (epoll over the socket, the
 * connections and an eventfd that the scheduler's completions, the calls served off the
 * loop (server_call.c) and kserver_stop ring). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "server_internal.h"

static char listen_tag, wake_tag, settings_tag;

uint64_t ks_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fail(char *err, size_t errlen, int code, const char *what)
{
    snprintf(err, errlen, "%s: %s", what, strerror(code));
    return -code;
}

static int listen_on(const char *path, unsigned mode, char *err, size_t errlen)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd;

    if (strlen(path) >= sizeof(addr.sun_path)) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -ENAMETOOLONG;
    }
    strcpy(addr.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(err, errlen, errno, "socket");
    unlink(path);
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, mode) < 0 ||
        listen(fd, 64) < 0) {
        int e = errno;
        close(fd);
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(e));
        return -e;
    }
    return fd;
}

static int watch(int epfd, int fd, void *tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};

    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* The host's physical memory in bytes (1 GiB when it cannot be read). */
static uint64_t host_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 1ull << 30;
}

int kserver_new(struct kserver **out, const struct kserver_config *cfg, char *err,
                size_t errlen)
{
    struct ks_server *s;
    int rc;

    if (!out || !cfg || (!cfg->socket_path && !cfg->adopt) || !cfg->sched) {
        snprintf(err, errlen, "kserver_new: missing configuration");
        return -EINVAL;
    }
    if (!(s = calloc(1, sizeof(*s))))
        return fail(err, errlen, ENOMEM, "kserver_new");
    s->cfg = *cfg;
    if (!s->cfg.max_connections)
        s->cfg.max_connections = 256;
    if (!s->cfg.max_per_user)
        s->cfg.max_per_user = s->cfg.max_connections >= 4 ? s->cfg.max_connections / 4 : 1;
    if (!s->cfg.hello_timeout_ms)
        s->cfg.hello_timeout_ms = 5000;
    if (!s->cfg.max_output_bytes)
        s->cfg.max_output_bytes = 4u << 20;
    if (!s->cfg.max_regions || s->cfg.max_regions > KERNELET_MAX_REGIONS)
        s->cfg.max_regions = KERNELET_MAX_REGIONS;
    if (!s->cfg.max_region_bytes)
        s->cfg.max_region_bytes = host_memory();
    if (!s->cfg.max_pinned_bytes)
        s->cfg.max_pinned_bytes = 1ull << 30;
    s->max_pinned_total = host_memory() / 4;
    s->can_pin = ksched_host_mappable(s->cfg.sched);
    s->runs_cubins = ksched_runs_cubins(s->cfg.sched);
    s->has_vmm = ksched_has_vmm(s->cfg.sched);
    s->spin_ns = s->cfg.spin_us >= 0 ? (uint64_t)s->cfg.spin_us * 1000
                 : sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 1000000 : 0;
    s->listen_fd = s->epfd = s->wake_fd = -1;
    pthread_mutex_init(&s->cq_lock, NULL);
    pthread_mutex_init(&s->iso_lock, NULL);
    pthread_mutex_init(&s->call_lock, NULL);
    pthread_cond_init(&s->call_cond, NULL);
    ks_device_describe(&cfg->device, &s->device);
    if (!s->cfg.default_mem_quota)
        s->cfg.default_mem_quota = s->device.total_mem;
    s->start_ns = ks_now_ns();
    if ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        rc = fail(err, errlen, errno, "epoll_create1");
        goto out;
    }
    if ((s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        rc = fail(err, errlen, errno, "eventfd");
        goto out;
    }
    if (watch(s->epfd, s->wake_fd, &wake_tag)) {
        rc = fail(err, errlen, errno, "epoll_ctl");
        goto out;
    }
    if (cfg->adopt) {
        if ((rc = ks_conn_adopt(s, err, errlen)) < 0)
            goto out;
        if (cfg->adopt_ctl_fd > 0 && watch(s->epfd, cfg->adopt_ctl_fd, &settings_tag)) {
            rc = fail(err, errlen, errno, "epoll_ctl");
            goto out;
        }
    } else {
        if ((rc = listen_on(cfg->socket_path, cfg->socket_mode, err, errlen)) < 0)
            goto out;
        s->listen_fd = rc;
        if (watch(s->epfd, s->listen_fd, &listen_tag)) {
            rc = fail(err, errlen, errno, "epoll_ctl");
            goto out;
        }
    }
    *out = (struct kserver *)s;
    return 0;
out:
    kserver_free((struct kserver *)s);
    return rc;
}

int ks_listen_watch(struct ks_server *s, bool on)
{
    if (on)
        return watch(s->epfd, s->listen_fd, &listen_tag) ? -errno : 0;
    return epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listen_fd, NULL) ? -errno : 0;
}

ksched *kserver_sched(const struct kserver *srv)
{
    return ((const struct ks_server *)srv)->cfg.sched;
}

void kserver_stop(struct kserver *srv)
{
    struct ks_server *s = (struct ks_server *)srv;
    uint64_t one = 1;

    s->stopping = 1;
    if (write(s->wake_fd, &one, sizeof(one)) < 0) {
        /* The counter is full: the loop wakes anyway. */
    }
}

static void wake_drain(struct ks_server *s)
{
    uint64_t v;

    while (read(s->wake_fd, &v, sizeof(v)) > 0) {
    }
}

static void reap_all(struct ks_server *s)
{
    for (struct ks_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        ks_conn_reap(c);
    }
}

/* Whether any tenant has work in flight: its completion, and then its next request, are
 * near. */
static bool work_in_flight(const struct ks_server *s)
{
    for (const struct ks_conn *c = s->conns; c; c = c->next)
        if (c->ops_inflight)
            return true;
    return false;
}

/* After news with nothing in flight, a tenant's next request follows an answer within
 * microseconds when it waits for each launch: the server polls this long at most. */
#define AFTER_NEWS_SPIN_NS 50000ull

/* How long wait_events polls from now: up to spin_ns while tenants' work is in flight (its
 * completion is near), up to AFTER_NEWS_SPIN_NS after the last news, else not at all. */
static uint64_t spin_window(const struct ks_server *s, uint64_t now)
{
    if (!s->spin_ns)
        return 0;
    if (work_in_flight(s))
        return s->spin_ns;
    uint64_t after_news = s->spin_ns < AFTER_NEWS_SPIN_NS ? s->spin_ns : AFTER_NEWS_SPIN_NS;
    return now - s->last_news_ns < after_news ? after_news : 0;
}

/* epoll_wait, after polling for the spin window: a completion then reaches its tenant, and
 * a tenant's next request reaches the server, without the wake-up of a sleeping server
 * thread (10-20 us on the H100's host, docs/perf/scheduling.md). */
static int wait_events(struct ks_server *s, struct epoll_event *ev, int n, int timeout)
{
    uint64_t now = ks_now_ns(), window = timeout != 0 ? spin_window(s, now) : 0;

    if (window) {
        uint64_t until = now + window;
        do {
            int got = epoll_wait(s->epfd, ev, n, 0);
            if (got != 0) {
                s->last_news_ns = ks_now_ns();
                return got;
            }
        } while (ks_now_ns() < until && !s->stopping);
    }
    int got = epoll_wait(s->epfd, ev, n, timeout);
    if (got > 0)
        s->last_news_ns = ks_now_ns();
    return got;
}

int kserver_run(struct kserver *srv)
{
    struct ks_server *s = (struct ks_server *)srv;
    struct epoll_event ev[64];
    int timeout = -1;

    while (!s->stopping) {
        int n = wait_events(s, ev, 64, timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        for (int i = 0; i < n; i++) {
            void *tag = ev[i].data.ptr;
            if (tag == &listen_tag) {
                ks_conn_accept(s);
            } else if (tag == &wake_tag) {
                wake_drain(s);
                ks_completions(s);
            } else if (tag == &settings_tag) {
                if (ev[i].events & (EPOLLHUP | EPOLLERR)) /* the daemon is gone */
                    epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->cfg.adopt_ctl_fd, NULL);
                ks_isolated_read_settings(s);
            } else {
                struct ks_conn *c = tag;
                if (c->fd >= 0 && (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
                    ks_conn_writable(c);
                if (c->fd >= 0 && (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                    ks_conn_readable(c);
                /* A peer gone while its requests wait unread (behind a call off the loop,
                 * a stalled batch): nobody to answer, and the hang-up would be reported
                 * again at every turn of the loop. */
                if (c->fd >= 0 && !c->reading && (ev[i].events & (EPOLLHUP | EPOLLERR)))
                    ks_conn_close(c);
            }
        }
        /* Completions that arrived while connections were served; connections that never
         * said HELLO in time are closed; then connections that are closed and idle go
         * (only here, so no event above saw a freed one). */
        ks_completions(s);
        timeout = ks_conn_expire(s);
        reap_all(s);
        if (s->adopted && !s->conns)
            break; /* a worker's one tenant is gone */
        int wait = ks_recover_step(s);
        if (wait >= 0 && (timeout < 0 || wait < timeout))
            timeout = wait;
        /* workers' status rows: sent once a second, taken as often */
        ks_isolated_take_rows(s);
        wait = s->adopted ? ks_isolated_push_status(s) : ks_isolated_count(s, NULL) ? 1000 : -1;
        if (wait >= 0 && (timeout < 0 || wait < timeout))
            timeout = wait;
    }
    return 0;
}

unsigned kserver_connections(const struct kserver *srv)
{
    const struct ks_server *s = (const struct ks_server *)srv;
    unsigned n = 0;

    for (const struct ks_conn *c = s->conns; c; c = c->next)
        n += c->fd >= 0;
    return n;
}

void kserver_free(struct kserver *srv)
{
    struct ks_server *s = (struct ks_server *)srv;

    if (!s)
        return;
    /* Close every connection; their tenants are removed and their queued work cancelled.
     * Operations still running report back through the queue: wait for them briefly. */
    for (struct ks_conn *c = s->conns; c; c = c->next)
        ks_conn_close(c);
    for (int tries = 0; s->conns && tries < 5000; tries++) {
        ks_completions(s);
        reap_all(s);
        if (s->conns)
            usleep(1000);
    }
    /* Calls off the loop: those queued are not run (their connections are closed), those
     * running end (the scheduler answers a removed tenant's allocation at once) */
    ks_calls_stop(s);
    ks_completions(s);
    reap_all(s);
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
        unlink(s->cfg.socket_path);
    }
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    if (s->epfd >= 0)
        close(s->epfd);
    pthread_mutex_destroy(&s->cq_lock);
    ks_isolated_free(s);
    pthread_mutex_destroy(&s->iso_lock);
    pthread_cond_destroy(&s->call_cond);
    pthread_mutex_destroy(&s->call_lock);
    free(s);
}
