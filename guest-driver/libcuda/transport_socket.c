/* The Unix-socket transport: kerneletd's socket on the host (KERNELET_SOCKET, default
 * /run/kernelet/kerneletd.sock), bulk memory as sealed memfds passed with SCM_RIGHTS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libcuda_internal.h"

#define DEFAULT_SOCKET "/run/kernelet/kerneletd.sock"

struct sock {
    int fd;
};

static int sock_send(void *t, const struct iovec *iov, int n, int fd)
{
    struct sock *s = t;
    struct iovec local[8];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {0};
    int first = 1;

    if (n > 8)
        return -EINVAL;
    memcpy(local, iov, sizeof(*iov) * (size_t)n);
    mh.msg_iov = local;
    mh.msg_iovlen = (size_t)n;
    while (mh.msg_iovlen > 0) {
        ssize_t w;
        if (first && fd >= 0) {
            struct cmsghdr *cm;
            memset(&ctl, 0, sizeof(ctl));
            mh.msg_control = ctl.buf;
            mh.msg_controllen = sizeof(ctl.buf);
            cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        } else {
            mh.msg_control = NULL;
            mh.msg_controllen = 0;
        }
        w = sendmsg(s->fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        first = 0;
        /* Skip what was written. */
        while (w > 0 && mh.msg_iovlen > 0) {
            if ((size_t)w >= mh.msg_iov->iov_len) {
                w -= (ssize_t)mh.msg_iov->iov_len;
                mh.msg_iov++;
                mh.msg_iovlen--;
            } else {
                mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + w;
                mh.msg_iov->iov_len -= (size_t)w;
                w = 0;
            }
        }
    }
    return 0;
}

static int read_full(int fd, void *buf, size_t n)
{
    char *p = buf;

    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -ECONNRESET;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int sock_recv(void *t, void *buf, size_t cap, size_t *len)
{
    struct sock *s = t;
    struct kernelet_req_hdr h;
    int rc;

    if (cap < KERNELET_HDR_SIZE)
        return -EINVAL;
    if ((rc = read_full(s->fd, buf, KERNELET_HDR_SIZE)))
        return rc;
    memcpy(&h, buf, sizeof(h));
    if (h.length > KERNELET_MAX_PAYLOAD || h.length > cap - KERNELET_HDR_SIZE)
        return -EPROTO;
    if ((rc = read_full(s->fd, (char *)buf + KERNELET_HDR_SIZE, h.length)))
        return rc;
    *len = KERNELET_HDR_SIZE + h.length;
    return 0;
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
    .send = sock_send,
    .recv = sock_recv,
    .readable = sock_readable,
    .region_create = sock_region_create,
    .region_destroy = sock_region_destroy,
    .close = sock_close,
};

int kcu_transport_open(const struct kcu_transport_ops **ops, void **t)
{
    const char *path = getenv("KERNELET_SOCKET");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    struct sock *s;

    if (!path || !*path)
        path = DEFAULT_SOCKET;
    if (strlen(path) >= sizeof(addr.sun_path))
        return -ENAMETOOLONG;
    strcpy(addr.sun_path, path);
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int e = errno;
        if (s->fd >= 0)
            close(s->fd);
        free(s);
        kcu_log("cannot connect to %s: %s", path, strerror(e));
        return -e;
    }
    kcu_log("connected to kerneletd at %s", path);
    *ops = &socket_ops;
    *t = s;
    return 0;
}
