/* libkernelet-proto: whole messages over a blocking Unix stream socket (libcuda's
 * transport, kernelet-ctl, tests). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto_internal.h"

/* Drops the first w bytes of the iovec array. */
static void advance(struct msghdr *mh, size_t w)
{
    while (w > 0 && mh->msg_iovlen > 0) {
        if (w >= mh->msg_iov->iov_len) {
            w -= mh->msg_iov->iov_len;
            mh->msg_iov++;
            mh->msg_iovlen--;
        } else {
            mh->msg_iov->iov_base = (char *)mh->msg_iov->iov_base + w;
            mh->msg_iov->iov_len -= w;
            w = 0;
        }
    }
    while (mh->msg_iovlen > 0 && mh->msg_iov->iov_len == 0) {
        mh->msg_iov++;
        mh->msg_iovlen--;
    }
}

int kproto_send(int fd, const struct iovec *iov, int n, int pass_fd)
{
    struct iovec local[16];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {0};

    if (n < 0 || n > 16)
        return -EINVAL;
    memcpy(local, iov, sizeof(*iov) * (size_t)n);
    mh.msg_iov = local;
    mh.msg_iovlen = (size_t)n;
    advance(&mh, 0);
    if (pass_fd >= 0) {
        struct cmsghdr *cm;
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    while (mh.msg_iovlen > 0) {
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        mh.msg_control = NULL; /* the descriptor went with the first bytes */
        mh.msg_controllen = 0;
        advance(&mh, (size_t)w);
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

int kproto_recv(int fd, void *buf, size_t cap, size_t *len)
{
    struct kernelet_req_hdr h;
    int rc;

    if (cap < KERNELET_HDR_SIZE)
        return -EINVAL;
    if ((rc = read_full(fd, buf, KERNELET_HDR_SIZE)))
        return rc;
    memcpy(&h, buf, sizeof(h));
    if (h.length > KERNELET_MAX_PAYLOAD || h.length > cap - KERNELET_HDR_SIZE)
        return -EPROTO;
    if ((rc = read_full(fd, (char *)buf + KERNELET_HDR_SIZE, h.length)))
        return rc;
    *len = KERNELET_HDR_SIZE + h.length;
    return 0;
}

int kproto_connect(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd;

    if (strlen(path) >= sizeof(addr.sun_path))
        return -ENAMETOOLONG;
    strcpy(addr.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}
