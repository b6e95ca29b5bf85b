/* The Unix-socket transport: kerneletd's socket on the host (KERNELET_SOCKET, default
 * /run/kernelet/kerneletd.sock), bulk memory as sealed memfds passed with SCM_RIGHTS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcuda_internal.h"

#define DEFAULT_SOCKET "/run/kernelet/kerneletd.sock"

struct sock {
    int fd;
};

static int sock_send(void *t, const struct iovec *iov, int n, int fd)
{
    return kproto_send(((struct sock *)t)->fd, iov, n, fd);
}

static int sock_recv(void *t, void *buf, size_t cap, size_t *len)
{
    return kproto_recv(((struct sock *)t)->fd, buf, cap, len);
}

static int sock_readable(void *t)
{
    struct sock *s = t;
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    int r = poll(&p, 1, 0);

    if (r < 0)
        return errno == EINTR ? 0 : -errno;
    return r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

static int sock_region_create(void *t, size_t size, void **base, int *fd)
{
    int mfd = memfd_create("kernelet-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *p;

    (void)t;
    if (mfd < 0)
        return -errno;
    if (ftruncate(mfd, (off_t)size) < 0 ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
        int e = errno;
        close(mfd);
        return -e;
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(mfd);
        return -e;
    }
    *base = p;
    *fd = mfd;
    return 0;
}

static void sock_region_destroy(void *t, void *base, size_t size)
{
    (void)t;
    munmap(base, size);
}

static void sock_close(void *t)
{
    struct sock *s = t;

    close(s->fd);
    free(s);
}

static const struct kcu_transport_ops socket_ops = {
    .name = "unix-socket",
    .daemon_maps_regions = true,
    .send = sock_send,
    .recv = sock_recv,
    .readable = sock_readable,
    .region_create = sock_region_create,
    .region_destroy = sock_region_destroy,
    .close = sock_close,
};

int kcu_transport_socket_open(const char *path, const struct kcu_transport_ops **ops, void **t)
{
    struct sock *s;
    int fd;

    if (!path || !*path)
        path = DEFAULT_SOCKET;
    if ((fd = kproto_connect(path)) < 0) {
        kcu_log("cannot connect to %s: %s", path, strerror(-fd));
        return fd;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        close(fd);
        return -ENOMEM;
    }
    s->fd = fd;
    kcu_log("connected to kerneletd at %s", path);
    *ops = &socket_ops;
    *t = s;
    return 0;
}
