/*
 * The connection to kerneletd: requests and their answers, the batch of stream work.
 *
 * Threads share one connection. Sending is serialised by send_lock, which also guards the
 * batch under construction (so records keep their order, and a request never overtakes
 * stream work queued before it). Answers may come in any order; they are matched to their
 * requests by id. At most one thread reads the socket at a time (the "reader"); it hands
 * each answer to the request waiting for it and wakes the waiters, so a thread blocked in
 * a synchronisation never keeps another thread's answers from arriving.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcuda_internal.h"

struct pending {
    uint64_t id;
    uint16_t opcode;
    bool done;
    bool keep;                  /* a waiter will collect it (kcu_wait or a call) */
    CUresult result;
    void *resp;                 /* where the payload goes (waiter's buffer) */
    size_t resp_cap;
    size_t resp_len;
    struct kcu_completion cb;
    struct pending *next;
};

struct kcu_client {
    const struct kcu_transport_ops *ops;
    void *t;
    pthread_mutex_t send_lock;
    uint64_t next_id;                   /* under send_lock */
    uint8_t batch[KERNELET_MAX_REQUEST];
    struct kproto_msg bmsg;
    uint32_t bcount;

    pthread_mutex_t lock;               /* what follows */
    pthread_cond_t cond;
    bool reader;
    uint64_t dispatched;                /* answers received so far */
    struct pending *pending;
    CUresult async_error;
    CUresult sticky;
    uint8_t rbuf[KERNELET_MAX_REQUEST]; /* the reader's */
    uint64_t spin_ns;                   /* how long a reader polls before it sleeps */
};

CUresult kcu_status_to_result(uint32_t status, const void *payload, size_t len)
{
    struct kernelet_cuda_error e;

    switch (status) {
    case KERNELET_ST_OK:
        return CUDA_SUCCESS;
    case KERNELET_ST_CUDA:
        if (len < sizeof(e))
            return CUDA_ERROR_UNKNOWN;
        memcpy(&e, payload, sizeof(e));
        return e.code ? (CUresult)e.code : CUDA_ERROR_UNKNOWN;
    case KERNELET_ST_BAD_REQUEST:
    case KERNELET_ST_TOO_SMALL:
        return CUDA_ERROR_INVALID_VALUE;
    case KERNELET_ST_BAD_OPCODE:
        return CUDA_ERROR_NOT_SUPPORTED;
    case KERNELET_ST_VERSION:
        return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
    case KERNELET_ST_UNAVAILABLE:
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    case KERNELET_ST_BUSY:
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    case KERNELET_ST_QUOTA:
        return CUDA_ERROR_OUT_OF_MEMORY;
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

/* Errors after which the context is unusable: CUDA reports them to every later call. */
static bool is_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
        return true;
    default:
        return false;
    }
}

/* ---- receiving ------------------------------------------------------------------------ */

static struct pending *take_pending(struct kcu_client *c, uint64_t id)
{
    for (struct pending **pp = &c->pending; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            struct pending *p = *pp;
            *pp = p->next;
            return p;
        }
    return NULL;
}

static struct pending *find_pending(struct kcu_client *c, uint64_t id)
{
    for (struct pending *p = c->pending; p; p = p->next)
        if (p->id == id)
            return p;
    return NULL;
}

/* An answer (or the lack of one) is final: callbacks run, and the entry is freed unless a
 * waiter collects it (kept entries stay listed, done, until then). Lock held. */
static void finish(struct kcu_client *c, struct pending *p, CUresult r)
{
    p->result = r;
    if (p->cb.fn)
        p->cb.fn(p->cb.arg, r);
    p->cb.fn = NULL;
    p->done = true;
    if (!p->keep) {
        /* Nobody waits: an asynchronous batch; its error shows at the next sync. */
        if (r != CUDA_SUCCESS && c->async_error == CUDA_SUCCESS)
            c->async_error = r;
        take_pending(c, p->id);
        free(p);
    }
}

/* The connection is gone: every waiter gets the error. Called with lock held. */
static void fail_all(struct kcu_client *c, CUresult r)
{
    struct pending *p = c->pending, *next;

    if (c->sticky == CUDA_SUCCESS)
        c->sticky = r;
    for (; p; p = next) {
        next = p->next;
        if (!p->done)
            finish(c, p, r);
    }
}

/* Hands one received message to its request. Called with lock held. */
static void dispatch(struct kcu_client *c, const uint8_t *msg, size_t len)
{
    struct kernelet_req_hdr h;
    struct pending *p;
    const uint8_t *payload = msg + KERNELET_HDR_SIZE;
    char err[160];
    CUresult r;

    err[0] = 0;
    if (kproto_hdr_get(msg, false, &h, err, sizeof(err)) || h.length != len - KERNELET_HDR_SIZE ||
        !(p = find_pending(c, h.request_id)) || p->done || h.opcode != p->opcode) {
        kcu_log("protocol error from kerneletd (request %llu): %s",
                (unsigned long long)h.request_id, err);
        fail_all(c, CUDA_ERROR_DEVICE_UNAVAILABLE);
        return;
    }
    r = kcu_status_to_result(h.status, payload, h.length);
    if (r == CUDA_SUCCESS && kproto_response_check(h.opcode, payload, h.length, err,
                                                   sizeof(err)) != 0) {
        kcu_log("malformed %s answer: %s", kproto_opcode_name(h.opcode), err);
        r = CUDA_ERROR_UNKNOWN;
    }
    if (r == CUDA_SUCCESS && p->resp) {
        p->resp_len = h.length < p->resp_cap ? h.length : p->resp_cap;
        memcpy(p->resp, payload, p->resp_len);
    }
    if (is_sticky(r) && c->sticky == CUDA_SUCCESS)
        c->sticky = r;
    c->dispatched++;
    finish(c, p, r);
}

/* How long a reader polls for an answer before it sleeps: KERNELET_SPIN_US, by default
 * 1000 us where the machine has 4 cores or more and none elsewhere. A waiting CUDA program
 * spins on a local GPU too (CUDA's default while it has a core to spare), and a sleeping
 * reader's wake-up costs as much as the daemon's whole answer: an answer that comes after
 * a kernel of a few hundred microseconds should still find the reader awake. */
static uint64_t spin_ns_default(void)
{
    const char *v = getenv("KERNELET_SPIN_US");

    if (v && *v)
        return strtoull(v, NULL, 10) * 1000;
    return sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 1000000 : 0;
}

/* Polls until an answer is there or the spin time is over. */
static void spin_for_answer(struct kcu_client *c)
{
    uint64_t until;

    if (!c->spin_ns)
        return;
    until = kcu_now_ns() + c->spin_ns;
    while (c->ops->readable(c->t) == 0 && kcu_now_ns() < until) {
    }
}

/* Reads one message as the reader (lock not held) and dispatches it. */
static void read_one(struct kcu_client *c)
{
    size_t len = 0;
    int rc;

    spin_for_answer(c);
    rc = c->ops->recv(c->t, c->rbuf, sizeof(c->rbuf), &len);

    pthread_mutex_lock(&c->lock);
    if (rc) {
        kcu_log("connection to kerneletd lost: %s", strerror(-rc));
        fail_all(c, CUDA_ERROR_DEVICE_UNAVAILABLE);
    } else {
        dispatch(c, c->rbuf, len);
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* Blocks until done(c, arg) holds, reading answers when no other thread is. Called with
 * lock held; returns with it held. */
static void pump_until(struct kcu_client *c, bool (*done)(struct kcu_client *, void *), void *arg)
{
    while (!done(c, arg) && c->sticky != CUDA_ERROR_DEVICE_UNAVAILABLE) {
        if (c->reader) {
            pthread_cond_wait(&c->cond, &c->lock);
            continue;
        }
        c->reader = true;
        pthread_mutex_unlock(&c->lock);
        read_one(c);
        pthread_mutex_lock(&c->lock);
        c->reader = false;
        pthread_cond_broadcast(&c->cond);
    }
}

/* Reads whatever answers are already there, without blocking (when nobody else reads). */
static void drain(struct kcu_client *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->reader || c->sticky == CUDA_ERROR_DEVICE_UNAVAILABLE) {
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->reader = true;
    pthread_mutex_unlock(&c->lock);
    while (c->ops->readable(c->t) > 0)
        read_one(c);
    pthread_mutex_lock(&c->lock);
    c->reader = false;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static bool pending_done(struct kcu_client *c, void *arg)
{
    (void)c;
    return ((struct pending *)arg)->done;
}

static bool progressed(struct kcu_client *c, void *arg)
{
    return c->dispatched != *(uint64_t *)arg;
}

CUresult kcu_progress(struct kcu_client *c)
{
    uint64_t seen;
    CUresult r;

    pthread_mutex_lock(&c->lock);
    seen = c->dispatched;
    pump_until(c, progressed, &seen);
    r = c->sticky == CUDA_ERROR_DEVICE_UNAVAILABLE ? c->sticky : CUDA_SUCCESS;
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* ---- sending -------------------------------------------------------------------------- */

static struct pending *new_pending(struct kcu_client *c, uint16_t opcode, bool keep)
{
    struct pending *p = calloc(1, sizeof(*p));

    if (!p)
        return NULL;
    p->id = ++c->next_id;
    p->opcode = opcode;
    p->keep = keep;
    return p;
}

static void add_pending(struct kcu_client *c, struct pending *p)
{
    pthread_mutex_lock(&c->lock);
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->lock);
}

/* Forgets a pending request whose message could not be sent. */
static void drop_pending(struct kcu_client *c, struct pending *p, CUresult r)
{
    pthread_mutex_lock(&c->lock);
    take_pending(c, p->id);
    if (c->sticky == CUDA_SUCCESS)
        c->sticky = r;
    pthread_mutex_unlock(&c->lock);
    free(p);
}

/* Finishes the batch message under construction into an iovec; 0 when there is none.
 * Called with send_lock held; the pending answer is registered before sending. */
static int take_batch(struct kcu_client *c, bool complete, bool keep,
                      const struct kcu_completion *cb, struct pending **out, struct iovec *iov)
{
    struct kernelet_batch b = {.count = c->bcount, .flags = complete ? KERNELET_BATCH_COMPLETE : 0};
    struct pending *p;

    *out = NULL;
    if (c->bcount == 0)
        return 0;
    p = new_pending(c, KERNELET_OP_LAUNCH_BATCH, keep);
    if (!p)
        return -ENOMEM;
    if (cb)
        p->cb = *cb;
    memcpy(c->batch + KERNELET_HDR_SIZE, &b, sizeof(b));
    kproto_hdr_put(c->batch, KERNELET_OP_LAUNCH_BATCH, c->bmsg.len - KERNELET_HDR_SIZE, p->id, 0);
    iov->iov_base = c->batch;
    iov->iov_len = c->bmsg.len;
    c->bcount = 0;
    add_pending(c, p);
    *out = p;
    return 1;
}

static void batch_reset(struct kcu_client *c)
{
    kproto_msg_begin(&c->bmsg, c->batch, sizeof(c->batch), KERNELET_OP_LAUNCH_BATCH, 0, 0);
    kproto_msg_reserve(&c->bmsg, sizeof(struct kernelet_batch));
    c->bcount = 0;
}

static CUresult send_iov(struct kcu_client *c, const struct iovec *iov, int n, int fd)
{
    int rc = c->ops->send(c->t, iov, n, fd);

    if (rc) {
        kcu_log("send to kerneletd failed: %s", strerror(-rc));
        pthread_mutex_lock(&c->lock);
        fail_all(c, CUDA_ERROR_DEVICE_UNAVAILABLE);
        pthread_mutex_unlock(&c->lock);
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    }
    return CUDA_SUCCESS;
}

/* Sends the batch under construction, if any. Called with send_lock held. */
static CUresult flush_locked(struct kcu_client *c, bool complete, bool keep,
                             const struct kcu_completion *cb, uint64_t *token)
{
    struct pending *p;
    struct iovec iov;
    CUresult r = CUDA_SUCCESS;

    if (take_batch(c, complete, keep, cb, &p, &iov) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (token)
        *token = p ? p->id : 0;
    if (p) {
        r = send_iov(c, &iov, 1, -1);
        batch_reset(c);
    }
    return r;
}

static size_t record_bytes(size_t rec_len, size_t tail_len)
{
    return rec_len + ((tail_len + 7) & ~(size_t)7);
}

/* Appends a record; sends the batch first when the record does not fit. Called with
 * send_lock held. */
static CUresult append_locked(struct kcu_client *c, const void *rec, size_t rec_len,
                              const void *tail, size_t tail_len)
{
    CUresult r;

    if (record_bytes(rec_len, tail_len) > KERNELET_MAX_PAYLOAD - sizeof(struct kernelet_batch))
        return CUDA_ERROR_INVALID_VALUE;
    if (kproto_msg_room(&c->bmsg) < record_bytes(rec_len, tail_len) &&
        (r = flush_locked(c, false, false, NULL, NULL)) != CUDA_SUCCESS)
        return r;
    kproto_msg_put(&c->bmsg, rec, rec_len, 1);
    kproto_msg_put(&c->bmsg, tail, tail_len, 8);
    c->bcount++;
    return CUDA_SUCCESS;
}

CUresult kcu_batch_append(struct kcu_client *c, const void *rec, size_t rec_len,
                          const void *tail, size_t tail_len)
{
    CUresult r;

    pthread_mutex_lock(&c->send_lock);
    r = append_locked(c, rec, rec_len, tail, tail_len);
    pthread_mutex_unlock(&c->send_lock);
    return r;
}

/* Stream work passes the gate of host functions (host_func.c) once one was queued. */
CUresult kcu_batch_add(struct kcu_client *c, const void *rec, size_t rec_len, const void *tail,
                       size_t tail_len)
{
    if (kcu_gate_engaged())
        return kcu_gate_add(rec, rec_len, tail, tail_len);
    return kcu_batch_append(c, rec, rec_len, tail, tail_len);
}

CUresult kcu_batch_submit(struct kcu_client *c, const void *rec, size_t rec_len,
                          const void *tail, size_t tail_len, bool keep,
                          const struct kcu_completion *cb, uint64_t *token)
{
    if (kcu_gate_engaged())
        return kcu_gate_submit(rec, rec_len, tail, tail_len, keep, cb, token);
    return kcu_batch_submit_now(c, rec, rec_len, tail, tail_len, keep, cb, token);
}

void kcu_batch_flush(struct kcu_client *c)
{
    pthread_mutex_lock(&c->send_lock);
    flush_locked(c, false, false, NULL, NULL);
    pthread_mutex_unlock(&c->send_lock);
}

CUresult kcu_batch_submit_now(struct kcu_client *c, const void *rec, size_t rec_len,
                              const void *tail, size_t tail_len, bool keep,
                              const struct kcu_completion *cb, uint64_t *token)
{
    CUresult r;

    drain(c);
    pthread_mutex_lock(&c->send_lock);
    r = append_locked(c, rec, rec_len, tail, tail_len);
    if (r == CUDA_SUCCESS)
        r = flush_locked(c, true, keep, cb, token);
    pthread_mutex_unlock(&c->send_lock);
    return r;
}

static CUresult call(struct kcu_client *c, uint16_t opcode, const void *head, size_t head_len,
                     const void *tail, size_t tail_len, int fd, void *resp, size_t resp_cap,
                     size_t *resp_len)
{
    uint8_t hdr[KERNELET_HDR_SIZE];
    struct iovec iov[4];
    struct pending *p, *batch;
    CUresult r;
    int n = 0;

    uint64_t t0 = kcu_stats_on() ? kcu_now_ns() : 0;

    if (head_len + tail_len > KERNELET_MAX_PAYLOAD)
        return CUDA_ERROR_INVALID_VALUE;
    /* Requests that depend on stream work wait until held work has gone (host_func.c). */
    if (kcu_gate_engaged() && (r = kcu_gate_before_call(opcode, head, head_len)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&c->lock);
    r = c->sticky;
    pthread_mutex_unlock(&c->lock);
    if (r != CUDA_SUCCESS)
        return r;
    drain(c);
    pthread_mutex_lock(&c->send_lock);
    if (take_batch(c, false, false, NULL, &batch, &iov[0]) < 0 ||
        !(p = new_pending(c, opcode, true))) {
        pthread_mutex_unlock(&c->send_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n = batch ? 1 : 0;
    p->resp = resp;
    p->resp_cap = resp ? resp_cap : 0;
    add_pending(c, p);
    kproto_hdr_put(hdr, opcode, (uint32_t)(head_len + tail_len), p->id, 0);
    iov[n++] = (struct iovec){hdr, sizeof(hdr)};
    if (head_len)
        iov[n++] = (struct iovec){(void *)head, head_len};
    if (tail_len)
        iov[n++] = (struct iovec){(void *)tail, tail_len};
    r = send_iov(c, iov, n, fd);
    if (batch)
        batch_reset(c);
    pthread_mutex_unlock(&c->send_lock);
    if (r != CUDA_SUCCESS) {
        drop_pending(c, p, r);
        return r;
    }
    pthread_mutex_lock(&c->lock);
    pump_until(c, pending_done, p);
    take_pending(c, p->id);
    r = p->done ? p->result : c->sticky;
    if (resp_len)
        *resp_len = p->resp_len;
    pthread_mutex_unlock(&c->lock);
    free(p);
    if (t0)
        kcu_stats_note(opcode, head_len + tail_len, kcu_now_ns() - t0);
    if (r != CUDA_SUCCESS) /* the daemon's refusals, for KERNELET_DEBUG=1 */
        kcu_log("%s: the daemon answered %d", kproto_opcode_name(opcode), (int)r);
    return r;
}

CUresult kcu_call(struct kcu_client *c, uint16_t opcode, const void *head, size_t head_len,
                  const void *tail, size_t tail_len, void *resp, size_t resp_cap,
                  size_t *resp_len)
{
    return call(c, opcode, head, head_len, tail, tail_len, -1, resp, resp_cap, resp_len);
}

CUresult kcu_call_handle(struct kcu_client *c, uint16_t opcode, uint64_t handle)
{
    struct kernelet_handle h = {.handle = handle};

    return call(c, opcode, &h, sizeof(h), NULL, 0, -1, NULL, 0, NULL);
}

CUresult kcu_call_fd(struct kcu_client *c, uint16_t opcode, const void *head,
                     size_t head_len, int fd, void *resp, size_t resp_cap, size_t *resp_len)
{
    return call(c, opcode, head, head_len, NULL, 0, fd, resp, resp_cap, resp_len);
}

CUresult kcu_wait(struct kcu_client *c, uint64_t token)
{
    struct pending *p;
    CUresult r;

    if (token == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&c->lock);
    p = find_pending(c, token);
    if (!p || !p->keep) {
        pthread_mutex_unlock(&c->lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t t0 = kcu_stats_on() ? kcu_now_ns() : 0;
    pump_until(c, pending_done, p);
    take_pending(c, token);
    r = p->done ? p->result : c->sticky;
    pthread_mutex_unlock(&c->lock);
    if (t0) /* the wait for queued work (a synchronising copy or batch) */
        kcu_stats_note(p->opcode, 0, kcu_now_ns() - t0);
    free(p);
    return r;
}

CUresult kcu_take_async_error(struct kcu_client *c)
{
    CUresult r;

    drain(c);
    pthread_mutex_lock(&c->lock);
    r = c->sticky != CUDA_SUCCESS ? c->sticky : c->async_error;
    c->async_error = CUDA_SUCCESS;
    pthread_mutex_unlock(&c->lock);
    return r;
}

void kcu_note_async_error(struct kcu_client *c, CUresult r)
{
    pthread_mutex_lock(&c->lock);
    if (!is_sticky(r) && c->sticky == CUDA_SUCCESS && c->async_error == CUDA_SUCCESS)
        c->async_error = r;
    pthread_mutex_unlock(&c->lock);
}

CUresult kcu_sticky_error(struct kcu_client *c)
{
    CUresult r;

    pthread_mutex_lock(&c->lock);
    r = c->sticky;
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* ---- regions ---------------------------------------------------------------------------- */

CUresult kcu_region_create(struct kcu_client *c, size_t size, struct kcu_region *out)
{
    struct kernelet_shm_attach a = {.size = size};
    struct kernelet_shm_region reg;
    void *base;
    int fd, rc;
    CUresult r;

    rc = c->ops->region_create(c->t, size, &base, &fd);
    if (rc) {
        kcu_log("cannot create %zu bytes of shared memory: %s", size, strerror(-rc));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r = kcu_call_fd(c, KERNELET_OP_SHM_ATTACH, &a, sizeof(a), fd, &reg, sizeof(reg), NULL);
    close(fd);
    if (r != CUDA_SUCCESS) {
        c->ops->region_destroy(c->t, base, size);
        return r;
    }
    out->id = reg.region;
    out->base = base;
    out->size = size;
    return CUDA_SUCCESS;
}

CUresult kcu_region_map_device(struct kcu_client *c, const struct kcu_region *r,
                               CUdeviceptr *device)
{
    struct kernelet_shm_map_device m = {.region = r->id, .address = (uintptr_t)r->base};
    struct kernelet_shm_device ans;
    CUresult res = kcu_call(c, KERNELET_OP_SHM_MAP_DEVICE, &m, sizeof(m), NULL, 0, &ans,
                            sizeof(ans), NULL);

    if (res == CUDA_SUCCESS)
        *device = (CUdeviceptr)ans.device_ptr;
    return res;
}

bool kcu_client_regions_shared(const struct kcu_client *c)
{
    return c->ops->daemon_maps_regions;
}

void kcu_region_destroy(struct kcu_client *c, struct kcu_region *r)
{
    struct kernelet_shm_region reg = {.region = r->id};

    kcu_call(c, KERNELET_OP_SHM_DETACH, &reg, sizeof(reg), NULL, 0, NULL, 0, NULL);
    c->ops->region_destroy(c->t, r->base, r->size);
}

/* ---- opening ---------------------------------------------------------------------------- */

/* The tenant name the operator sees: the program's name, printable ASCII only. */
static void tenant_name(char *out, size_t n)
{
    extern char *program_invocation_short_name;
    const char *src = program_invocation_short_name ? program_invocation_short_name : "cuda";
    size_t i = 0;

    for (; src[i] && i + 1 < n; i++)
        out[i] = (src[i] >= 0x20 && src[i] <= 0x7e) ? src[i] : '_';
    out[i] = 0;
}

/* KERNELET_ISOLATE=1: the program asks for a GPU context of its own (kerneletd's isolation
 * tier), e.g. because its kernels come without PTX and cannot be fenced. */
static bool isolation_asked(void)
{
    const char *v = getenv("KERNELET_ISOLATE");

    return v && *v && strcmp(v, "0") != 0;
}

CUresult kcu_client_open(struct kcu_client **out, struct kernelet_session *session)
{
    struct kcu_client *c = calloc(1, sizeof(*c));
    struct {
        struct kernelet_hello hello;
        struct kernelet_hello_tenant tenant;
    } hello = {{.proto_version = KERNELET_PROTO_VERSION}, {0}};
    struct {
        struct kernelet_info info;
        struct kernelet_session session;
    } answer;
    size_t len = 0;
    CUresult r;

    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (kcu_transport_open(&c->ops, &c->t) != 0) {
        free(c);
        return CUDA_ERROR_NO_DEVICE;
    }
    pthread_mutex_init(&c->send_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->spin_ns = spin_ns_default();
    batch_reset(c);
    tenant_name(hello.tenant.name, sizeof(hello.tenant.name));
    if (isolation_asked())
        hello.tenant.flags |= KERNELET_HELLO_ISOLATE;
    r = kcu_call(c, KERNELET_OP_HELLO, &hello, sizeof(hello), NULL, 0, &answer, sizeof(answer),
                 &len);
    if (r == CUDA_SUCCESS && len != sizeof(answer))
        r = CUDA_ERROR_SYSTEM_DRIVER_MISMATCH; /* a device, not kerneletd, answered */
    if (r != CUDA_SUCCESS) {
        kcu_log("HELLO to kerneletd failed (%d)", (int)r);
        kcu_client_close(c);
        return r == CUDA_ERROR_DEVICE_UNAVAILABLE ? CUDA_ERROR_NO_DEVICE : r;
    }
    *session = answer.session;
    *out = c;
    return CUDA_SUCCESS;
}

void kcu_client_close(struct kcu_client *c)
{
    if (!c)
        return;
    c->ops->close(c->t);
    while (c->pending) {
        struct pending *p = c->pending;
        c->pending = p->next;
        free(p);
    }
    pthread_mutex_destroy(&c->send_lock);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}
