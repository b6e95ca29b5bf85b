/* The virtio transport: /dev/kerneletN of the guest driver (docs/GUEST-DRIVER.md).
 *
 * The device answers each request in its own chain (KERNELET_IOC_SUBMIT is synchronous),
 * while the client speaks a message stream. So send() submits every message it is given,
 * one ioctl per chunk (virtio_bulk.c), and queues the answers; recv() takes them off the
 * queue. Regions are local memory: SHM_ATTACH and SHM_DETACH are answered here, and the
 * host ranges that records name in them travel as bulk segments, which the driver pins in
 * place (no staging copy for pinned memory). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcuda_internal.h"
#include "virtio_bulk.h"

struct answer {
    struct answer *next;
    size_t len;
    uint8_t msg[];
};

struct vregion {
    struct vregion *next;
    uint32_t id;            /* 0 until attached */
    int fd;                 /* the memfd until attached */
    void *base;
    size_t size;
};

struct vdev {
    int fd;
    uint32_t max_bulk;
    pthread_mutex_t lock;   /* what follows */
    pthread_cond_t cond;
    struct answer *head, **tail;
    struct vregion *regions;
    uint32_t next_region;
};

/* ---- answers ----------------------------------------------------------------------------- */

static int push_answer(struct vdev *v, const void *msg, size_t len)
{
    struct answer *a = malloc(sizeof(*a) + len);

    if (!a)
        return -ENOMEM;
    a->next = NULL;
    a->len = len;
    memcpy(a->msg, msg, len);
    pthread_mutex_lock(&v->lock);
    *v->tail = a;
    v->tail = &a->next;
    pthread_cond_broadcast(&v->cond);
    pthread_mutex_unlock(&v->lock);
    return 0;
}

/* An answer made here: header for the request in req, status, payload. */
static int local_answer(struct vdev *v, const uint8_t *req, uint32_t status,
                        const void *payload, uint32_t len)
{
    struct kernelet_req_hdr h;
    uint8_t buf[KERNELET_HDR_SIZE + 16];

    memcpy(&h, req, sizeof(h));
    kproto_hdr_put(buf, h.opcode, len, h.request_id, status);
    if (len)
        memcpy(buf + KERNELET_HDR_SIZE, payload, len);
    return push_answer(v, buf, KERNELET_HDR_SIZE + len);
}

static int vdev_recv(void *t, void *buf, size_t cap, size_t *len)
{
    struct vdev *v = t;
    struct answer *a;

    pthread_mutex_lock(&v->lock);
    while (!v->head)
        pthread_cond_wait(&v->cond, &v->lock);
    a = v->head;
    v->head = a->next;
    if (!v->head)
        v->tail = &v->head;
    pthread_mutex_unlock(&v->lock);
    if (a->len > cap) {
        free(a);
        return -EPROTO;
    }
    memcpy(buf, a->msg, a->len);
    *len = a->len;
    free(a);
    return 0;
}

static int vdev_readable(void *t)
{
    struct vdev *v = t;
    int r;

    pthread_mutex_lock(&v->lock);
    r = v->head != NULL;
    pthread_mutex_unlock(&v->lock);
    return r;
}

/* ---- regions: local memory ----------------------------------------------------------- */

static int vdev_region_create(void *t, size_t size, void **base, int *fd)
{
    struct vdev *v = t;
    struct vregion *r = calloc(1, sizeof(*r));
    void *p = MAP_FAILED;
    int mfd, e;

    if (!r)
        return -ENOMEM;
    if ((mfd = memfd_create("kernelet-region", MFD_CLOEXEC)) < 0 ||
        ftruncate(mfd, (off_t)size) < 0 ||
        (p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED) {
        e = errno;
        if (mfd >= 0)
            close(mfd);
        free(r);
        return -e;
    }
    *r = (struct vregion){.fd = mfd, .base = p, .size = size};
    pthread_mutex_lock(&v->lock);
    r->next = v->regions;
    v->regions = r;
    pthread_mutex_unlock(&v->lock);
    *base = p;
    *fd = mfd;  /* the client passes it to SHM_ATTACH, then closes it */
    return 0;
}

static void vdev_region_destroy(void *t, void *base, size_t size)
{
    struct vdev *v = t;

    pthread_mutex_lock(&v->lock);
    for (struct vregion **pp = &v->regions; *pp; pp = &(*pp)->next)
        if ((*pp)->base == base) {
            struct vregion *r = *pp;
            *pp = r->next;
            free(r);
            break;
        }
    pthread_mutex_unlock(&v->lock);
    munmap(base, size);
}

/* kvb_region_fn: an attached region's memory. */
static void *region_of(void *arg, uint32_t id, size_t *size)
{
    struct vdev *v = arg;
    void *base = NULL;

    pthread_mutex_lock(&v->lock);
    for (struct vregion *r = v->regions; r; r = r->next)
        if (r->id == id && id != 0) {
            base = r->base;
            *size = r->size;
            break;
        }
    pthread_mutex_unlock(&v->lock);
    return base;
}

/* SHM_ATTACH: the region created with fd gets an id. */
static int attach(struct vdev *v, const uint8_t *msg, int fd)
{
    struct kernelet_shm_region out = {0};

    pthread_mutex_lock(&v->lock);
    for (struct vregion *r = v->regions; r && fd >= 0; r = r->next)
        if (r->id == 0 && r->fd == fd) {
            r->id = out.region = ++v->next_region;
            r->fd = -1;
            break;
        }
    pthread_mutex_unlock(&v->lock);
    if (!out.region)
        return local_answer(v, msg, KERNELET_ST_BAD_REQUEST, NULL, 0);
    return local_answer(v, msg, KERNELET_ST_OK, &out, sizeof(out));
}

/* SHM_DETACH: the id is forgotten (region_destroy unmaps the memory). */
static int detach(struct vdev *v, const uint8_t *msg, size_t len)
{
    struct kernelet_shm_region in;
    bool found = false;

    if (len < KERNELET_HDR_SIZE + sizeof(in))
        return local_answer(v, msg, KERNELET_ST_BAD_REQUEST, NULL, 0);
    memcpy(&in, msg + KERNELET_HDR_SIZE, sizeof(in));
    pthread_mutex_lock(&v->lock);
    for (struct vregion *r = v->regions; r; r = r->next)
        if (in.region != 0 && r->id == in.region) {
            r->id = 0;
            found = true;
        }
    pthread_mutex_unlock(&v->lock);
    return local_answer(v, msg, found ? KERNELET_ST_OK : KERNELET_ST_BAD_REQUEST, NULL, 0);
}

/* ---- submissions --------------------------------------------------------------------- */

static uint16_t opcode_of(const uint8_t *msg)
{
    struct kernelet_req_hdr h;

    memcpy(&h, msg, sizeof(h));
    return h.opcode;
}

/* One chunk through the driver; resp gets the answer (resp_len bytes). 0 or -errno. */
static int submit(struct vdev *v, const struct kvb_chunk *c, uint8_t *resp, uint32_t *resp_len)
{
    struct kernelet_ioc_submit s = {
        .queue = kproto_opcode_has(opcode_of(c->msg), KPROTO_OP_LAUNCH_RING)
                     ? KERNELET_VQ_LAUNCH : KERNELET_VQ_REQUEST,
        .flags = KERNELET_SUBMIT_F_KILLABLE,
        .req_addr = (uintptr_t)c->msg, .req_len = c->len,
        .resp_addr = (uintptr_t)resp, .resp_cap = KERNELET_MAX_RESPONSE,
        .h2d_bufs = (uintptr_t)c->h2d, .h2d_count = c->n_h2d,
        .d2h_bufs = (uintptr_t)c->d2h, .d2h_count = c->n_d2h,
    };

    if (ioctl(v->fd, KERNELET_IOC_SUBMIT, &s) < 0)
        return -errno;
    /* A successful batch with bulk data has run: every d2h byte must be there. */
    if (s.status == KERNELET_ST_OK && s.d2h_written != c->d2h_bytes) {
        struct kernelet_cuda_error e = {.code = CUDA_ERROR_UNKNOWN};
        struct kernelet_req_hdr h;
        memcpy(&h, c->msg, sizeof(h));
        kcu_log("device wrote %llu of %llu device-to-host bytes",
                (unsigned long long)s.d2h_written, (unsigned long long)c->d2h_bytes);
        kproto_hdr_put(resp, h.opcode, sizeof(e), h.request_id, KERNELET_ST_CUDA);
        memcpy(resp + KERNELET_HDR_SIZE, &e, sizeof(e));
        s.resp_len = KERNELET_HDR_SIZE + sizeof(e);
    }
    *resp_len = s.resp_len;
    return 0;
}

/* A failed chunk's answer names its record; the client knows the original batch's. */
static void renumber_error(const struct kvb_chunk *c, uint8_t *resp, uint32_t len)
{
    struct kernelet_req_hdr h;
    struct kernelet_cuda_error e;

    memcpy(&h, resp, sizeof(h));
    if (!c->is_batch || h.status != KERNELET_ST_CUDA || len < KERNELET_HDR_SIZE + sizeof(e))
        return;
    memcpy(&e, resp + KERNELET_HDR_SIZE, sizeof(e));
    if (e.index < c->n_records)
        e.index = c->orig_index[e.index];
    memcpy(resp + KERNELET_HDR_SIZE, &e, sizeof(e));
}

/* The device answers HELLO itself with kernelet_info alone (its link holds the VM's one
 * daemon session); the client expects the session too: this one offers the device's GPU
 * while the daemon is connected, and none otherwise (cuInit then fails cleanly with
 * CUDA_ERROR_NO_DEVICE). */
static void complete_hello(uint8_t *resp, uint32_t *resp_len)
{
    struct kernelet_req_hdr h;
    struct kernelet_info info;
    struct kernelet_session sess = {.max_regions = KERNELET_MAX_REGIONS,
                                    .max_message = KERNELET_MAX_REQUEST};

    memcpy(&h, resp, sizeof(h));
    if (h.opcode != KERNELET_OP_HELLO || h.status != KERNELET_ST_OK ||
        *resp_len != KERNELET_HDR_SIZE + sizeof(info))
        return;
    memcpy(&info, resp + KERNELET_HDR_SIZE, sizeof(info));
    sess.device_count = info.flags & KERNELET_INFO_BACKEND ? 1 : 0;
    sess.mem_quota = info.gpu_mem_bytes;
    memcpy(resp + *resp_len, &sess, sizeof(sess));
    *resp_len += sizeof(sess);
    kproto_hdr_put(resp, h.opcode, *resp_len - KERNELET_HDR_SIZE, h.request_id, h.status);
}

/* A message forwarded to the device, as many chunks as it takes; the first answer that
 * is not OK (or the last one) is the message's. */
static int forward(struct vdev *v, const uint8_t *msg, size_t len)
{
    struct kvb_splitter s;
    struct kvb_chunk *c = malloc(sizeof(*c));
    uint8_t *resp = malloc(KERNELET_MAX_RESPONSE);
    uint32_t resp_len = 0;
    int rc = c && resp ? kvb_begin(&s, msg, len, v->max_bulk, region_of, v) : -ENOMEM;

    while (rc == 0 && (rc = kvb_next(&s, c)) > 0) {
        struct kernelet_req_hdr h;
        if ((rc = submit(v, c, resp, &resp_len)) < 0)
            break;
        memcpy(&h, resp, sizeof(h));
        renumber_error(c, resp, resp_len);
        if (h.status != KERNELET_ST_OK)
            break;
    }
    if (rc == -EINVAL || rc == -E2BIG) {
        kcu_log("cannot map a request (opcode 0x%04x) to the device: %s",
                (unsigned)opcode_of(msg), strerror(-rc));
        rc = local_answer(v, msg, KERNELET_ST_BAD_REQUEST, NULL, 0);
    } else if (rc >= 0) {
        complete_hello(resp, &resp_len);
        rc = push_answer(v, resp, resp_len);
    }
    free(c);
    free(resp);
    return rc;
}

/* HELLO: the device takes kernelet_hello alone (docs/DEVICE.md): the tenant identity that
 * follows it on the socket names this process, while in a VM the tenant is the VM, which
 * the device names itself. The identity is dropped; the answer gets its session above. */
static int hello(struct vdev *v, const uint8_t *msg, size_t len)
{
    uint8_t bare[KERNELET_HDR_SIZE + sizeof(struct kernelet_hello)];
    struct kernelet_req_hdr h;

    if (len < sizeof(bare))
        return forward(v, msg, len); /* the device answers BAD_REQUEST */
    memcpy(&h, msg, sizeof(h));
    kproto_hdr_put(bare, h.opcode, sizeof(struct kernelet_hello), h.request_id, 0);
    memcpy(bare + KERNELET_HDR_SIZE, msg + KERNELET_HDR_SIZE, sizeof(struct kernelet_hello));
    return forward(v, bare, sizeof(bare));
}

/* What the device takes from a guest (the opcode table's KPROTO_OP_GUEST, and opcodes the
 * table does not know, for a newer daemon) goes to it; of the rest this transport serves
 * the socket's regions itself and refuses what a guest may not send. */
static int handle(struct vdev *v, const uint8_t *msg, size_t len, int fd)
{
    struct kernelet_req_hdr h;

    memcpy(&h, msg, sizeof(h));
    if (h.opcode == KERNELET_OP_HELLO)
        return hello(v, msg, len);
    if (kproto_opcode_has(h.opcode, KPROTO_OP_GUEST) || !kproto_opcode_find(h.opcode))
        return forward(v, msg, len);
    switch (h.opcode) {
    case KERNELET_OP_SHM_ATTACH:
        return attach(v, msg, fd);
    case KERNELET_OP_SHM_DETACH:
        return detach(v, msg, len);
    case KERNELET_OP_SHM_MAP_DEVICE: {
        /* a guest's pages are not the host GPU's to map */
        struct kernelet_cuda_error e = {.code = CUDA_ERROR_NOT_SUPPORTED};
        return local_answer(v, msg, KERNELET_ST_CUDA, &e, sizeof(e));
    }
    default:
        return local_answer(v, msg, KERNELET_ST_BAD_OPCODE, NULL, 0);
    }
}

static int vdev_send(void *t, const struct iovec *iov, int n, int fd)
{
    struct vdev *v = t;
    size_t total = 0, off = 0;
    uint8_t *buf;
    int rc = 0;

    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    if (!(buf = malloc(total ? total : 1)))
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    for (off = 0; rc == 0 && off < total;) {
        struct kernelet_req_hdr h;
        size_t len;
        if (total - off < KERNELET_HDR_SIZE)
            break;
        memcpy(&h, buf + off, sizeof(h));
        len = KERNELET_HDR_SIZE + (size_t)h.length;
        if (len > total - off || len > KERNELET_MAX_REQUEST)
            break;
        rc = handle(v, buf + off, len, fd);
        off += len;
    }
    if (rc == 0 && off != total)
        rc = -EPROTO; /* the client never sends partial messages */
    free(buf);
    return rc;
}

static void vdev_close(void *t)
{
    struct vdev *v = t;

    close(v->fd);
    while (v->head) {
        struct answer *a = v->head;
        v->head = a->next;
        free(a);
    }
    while (v->regions) {
        struct vregion *r = v->regions;
        v->regions = r->next;
        free(r); /* memory is unmapped by its owner (region_destroy) */
    }
    pthread_mutex_destroy(&v->lock);
    pthread_cond_destroy(&v->cond);
    free(v);
}

static const struct kcu_transport_ops virtio_ops = {
    .name = "virtio",
    .send = vdev_send,
    .recv = vdev_recv,
    .readable = vdev_readable,
    .region_create = vdev_region_create,
    .region_destroy = vdev_region_destroy,
    .close = vdev_close,
};

int kcu_transport_virtio_open(const char *path, const struct kcu_transport_ops **ops, void **t)
{
    struct kernelet_ioc_config cfg;
    struct vdev *v;
    int fd = open(path, O_RDWR | O_CLOEXEC);

    if (fd < 0) {
        int e = errno;
        kcu_log("cannot open %s: %s", path, strerror(e));
        return -e;
    }
    if (ioctl(fd, KERNELET_IOC_GET_CONFIG, &cfg) < 0) {
        int e = errno;
        kcu_log("%s is not a kernelet device: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    if (!(v = calloc(1, sizeof(*v)))) {
        close(fd);
        return -ENOMEM;
    }
    v->fd = fd;
    v->max_bulk = cfg.max_bulk;
    v->tail = &v->head;
    pthread_mutex_init(&v->lock, NULL);
    pthread_cond_init(&v->cond, NULL);
    kcu_log("opened %s: context %u, %s, max_bulk %u", path, cfg.context, cfg.gpu_name,
            cfg.max_bulk);
    *ops = &virtio_ops;
    *t = v;
    return 0;
}
