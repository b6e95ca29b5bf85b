/* Shared-memory regions of a connection (SHM_ATTACH, SHM_DETACH, SHM_MAP_DEVICE): memfds
 * of the tenant's that the daemon maps, bounded in count and bytes per connection and in
 * address space for all (issue 15). A region is also pinned for the device while the
 * connection's pinned bytes allow (copies from and to it then run as DMA, with no staging
 * in the driver), and on request mapped for the tenant's kernels (CUDA's mapped pinned
 * memory), which only tenants whose kernels are not fenced into their device memory may
 * ask: a worker of the isolation tier, or a daemon that does not fence.
 *
 * Pinning takes time in proportion to the bytes (cuMemHostRegister: tens to hundreds of
 * ms for GiBs), so it runs off the event loop (server_call.c): SHM_ATTACH maps the memfd
 * on the loop and pins it on a worker, SHM_MAP_DEVICE moves and pins it there, and so
 * does SHM_DETACH's unpinning of a region nothing uses; the connection's later requests
 * wait for the answer, other connections are served meanwhile. Until it is answered the
 * call owns the region (nothing else of the connection may touch it: its requests wait,
 * and it is not freed while the call is out, ks_conn_reap); its bytes are counted as
 * pinned from the start, so that calls of several connections cannot together pass the
 * limits. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server_internal.h"

/* Whether c may pin size more bytes: the connection's limit and the daemon's. */
static bool pin_room(const struct ks_conn *c, uint64_t size)
{
    const struct ks_server *s = c->srv;

    return size <= s->cfg.max_pinned_bytes - c->pinned_bytes &&
           size <= s->max_pinned_total - s->pinned_bytes;
}

/* r's bytes counted as pinned (add) or not any more, in its connection's and the daemon's. */
static void pin_count(struct ks_region *r, bool add)
{
    struct ks_conn *c = r->conn;

    r->pinned = add;
    c->pinned_bytes = add ? c->pinned_bytes + r->size : c->pinned_bytes - r->size;
    c->srv->pinned_bytes = add ? c->srv->pinned_bytes + r->size : c->srv->pinned_bytes - r->size;
}

static void region_unpin(struct ks_region *r)
{
    if (!r->pinned)
        return;
    ksched_host_unregister(r->conn->srv->cfg.sched, r->base);
    pin_count(r, false);
}

bool ks_region_can_map_device(const struct ks_conn *c)
{
    return ks_kernels_unconfined(c) && c->srv->can_pin;
}

/* ---- calls: what a worker does to a region ------------------------------------------------- */

/* One region pinned (SHM_ATTACH, SHM_MAP_DEVICE: perhaps moved first) or unpinned and
 * unmapped (SHM_DETACH) on a worker. run reads and writes only this; its results start as
 * the region's state, so that a call not run (its connection closed) changes nothing. */
struct ks_pin {
    struct ks_region *r;        /* the loop's: finish only */
    uint16_t opcode;
    uint64_t size;
    uint64_t move_to;           /* SHM_MAP_DEVICE: the tenant's address, where it is free;
                                   0: stays */
    uint8_t *base;              /* where the region is mapped (NULL: unmapped) */
    bool pinned;                /* whether it is pinned */
    uint64_t device;            /* its address for kernels, once pinned */
};

/* Moves p's mapping to move_to, where the tenant has it, so that the tenant's own pointer
 * works in its kernels; unchanged (perhaps unpinned) when anything is there. */
static void pin_move(ksched *s, struct ks_pin *p)
{
    void *want = (void *)(uintptr_t)p->move_to;
    void *hold;

    if (p->move_to + p->size < p->move_to)
        return;
    /* a placeholder that takes the range only if it is free; mremap then replaces it */
    hold = mmap(want, p->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                MAP_FIXED_NOREPLACE, -1, 0);
    if (hold == MAP_FAILED)
        return;
    if (hold != want) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        munmap(hold, p->size);
        return;
    }
    if (p->pinned) {
        ksched_host_unregister(s, p->base);
        p->pinned = false;
    }
    void *moved = mremap(p->base, p->size, p->size, MREMAP_MAYMOVE | MREMAP_FIXED, want);
    if (moved == MAP_FAILED) {
        munmap(hold, p->size);
        return;
    }
    p->base = moved;
}

/* On a worker: SHM_DETACH's unpinning and unmapping; else the region moved where asked,
 * and pinned (k->rc: why not). */
static void pin_run(struct ks_call *k)
{
    struct ks_pin *p = k->data;
    kbackend_devptr device = 0;

    if (p->opcode == KERNELET_OP_SHM_DETACH) {
        ksched_host_unregister(k->sched, p->base);
        p->pinned = false;
        munmap(p->base, p->size);
        p->base = NULL;
        return;
    }
    if (p->move_to)
        pin_move(k->sched, p);
    if (!p->pinned && !(k->rc = ksched_host_register(k->sched, p->base, p->size, &device,
                                                      &k->err))) {
        p->pinned = true;
        p->device = device;
    }
}

static void region_unmap(struct ks_region *r);
static void region_forget(struct ks_region *r);
static int region_adopt(struct ks_conn *c, struct ks_region *r);

/* SHM_MAP_DEVICE id's region r pinned (rc: why not): r as the tenant's memory, and the
 * answer. */
static void map_device_answer(struct ks_conn *c, uint64_t id, int rc, struct ks_region *r)
{
    if (rc || (rc = region_adopt(c, r))) {
        ks_reply_cuda(c, KERNELET_OP_SHM_MAP_DEVICE, id, ks_cuda_of(rc, ""), 0);
        return;
    }
    r->device_mapped = true;
    struct kernelet_shm_device ans = {.device_ptr = r->device};
    ks_reply(c, KERNELET_OP_SHM_MAP_DEVICE, id, KERNELET_ST_OK, &ans, sizeof(ans));
}

/* Back on the loop: the region takes what the worker did (its connection closed too: it
 * is then unpinned and unmapped with the others, ks_conn_reap), and the answer. */
static void pin_finish(struct ks_call *k)
{
    struct ks_pin *p = k->data;
    struct ks_region *r = p->r;
    struct ks_conn *c = k->conn;

    r->base = p->base;
    if (p->pinned)
        r->device = p->device;
    else if (r->pinned)
        pin_count(r, false); /* counted from the start: not pinned after all */
    if (p->opcode == KERNELET_OP_SHM_DETACH) {
        if (r->base) /* not run: done here */
            region_unmap(r);
        else
            region_forget(r);
    }
    if (!c->closing) {
        if (p->opcode == KERNELET_OP_SHM_ATTACH) {
            /* pinned or not: copies work either way */
            struct kernelet_shm_region ans = {.region = r->id};
            ks_reply(c, KERNELET_OP_SHM_ATTACH, k->id, KERNELET_ST_OK, &ans, sizeof(ans));
        } else if (p->opcode == KERNELET_OP_SHM_MAP_DEVICE) {
            map_device_answer(c, k->id, k->rc, r);
        } else {
            ks_reply(c, KERNELET_OP_SHM_DETACH, k->id, KERNELET_ST_OK, NULL, 0);
        }
    }
    free(p);
}

/* Starts r's call for request id (opcode): its bytes counted as pinned from now on. False
 * without memory (answered then, r as it was). */
static bool pin_start(struct ks_conn *c, uint64_t id, uint16_t opcode, struct ks_region *r,
                      uint64_t move_to)
{
    struct ks_pin *p = malloc(sizeof(*p));

    if (!p) {
        ks_reply_cuda(c, opcode, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return false;
    }
    *p = (struct ks_pin){.r = r, .opcode = opcode, .size = r->size, .move_to = move_to,
                         .base = r->base, .pinned = r->pinned, .device = r->device};
    bool counted = !r->pinned;
    if (counted)
        pin_count(r, true);
    if (!ks_call_start_data(c, id, opcode, pin_run, pin_finish, p)) {
        if (counted)
            pin_count(r, false);
        free(p);
        return false;
    }
    return true;
}

/* The mapped region as memory of the tenant's, which its copies and memsets may name as
 * natively (a device pointer of mapped pinned memory); 0 or a KSCHED_E* code. */
static int region_adopt(struct ks_conn *c, struct ks_region *r)
{
    ksched_err err;
    int rc = ksched_host_adopt(c->srv->cfg.sched, c->tenant, r->device, r->size, &err);

    if (!rc && ks_alloc_add(c, r->device, r->size, 0) != 0) {
        ksched_host_disown(c->srv->cfg.sched, c->tenant, r->device);
        rc = KSCHED_ENOMEM;
    }
    if (!rc)
        ks_alloc_mark_host(c, r->device);
    return rc;
}

static void region_disown(struct ks_region *r)
{
    struct ks_conn *c = r->conn;

    ks_alloc_remove(c, r->device);
    ksched_host_disown(c->srv->cfg.sched, c->tenant, r->device);
}

/* Moved to the tenant's own address when it is free there (and nothing uses the region),
 * pinned, and adopted as the tenant's memory: the move and the pinning on a worker. */
void ks_region_map_device(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    const struct kernelet_shm_map_device *m = &r->u.shm_map_device;
    struct ks_region *reg = ks_region_find(c, m->region);

    if (!reg) {
        ks_reply_cuda(c, KERNELET_OP_SHM_MAP_DEVICE, id, KS_CUDA_INVALID_VALUE, 0);
        return;
    }
    if (!ks_region_can_map_device(c)) {
        ks_reply_cuda(c, KERNELET_OP_SHM_MAP_DEVICE, id, KS_CUDA_NOT_SUPPORTED, 0);
        return;
    }
    if (reg->device_mapped) {
        struct kernelet_shm_device ans = {.device_ptr = reg->device};
        ks_reply(c, KERNELET_OP_SHM_MAP_DEVICE, id, KERNELET_ST_OK, &ans, sizeof(ans));
        return;
    }
    bool move = m->address && (uintptr_t)reg->base != m->address && !reg->refs;
    if (reg->pinned && !move)
        map_device_answer(c, id, 0, reg); /* nothing slow left */
    else if (!reg->pinned && !pin_room(c, reg->size))
        map_device_answer(c, id, KSCHED_ENOMEM, reg);
    else
        pin_start(c, id, KERNELET_OP_SHM_MAP_DEVICE, reg, move ? m->address : 0);
}

struct ks_region *ks_region_find(struct ks_conn *c, uint32_t id)
{
    for (unsigned i = 0; i < KERNELET_MAX_REGIONS; i++)
        if (c->regions[i].used && !c->regions[i].detached && c->regions[i].id == id)
            return &c->regions[i];
    return NULL;
}

/* r's slot free again, its bytes no longer counted (it is unpinned and unmapped). */
static void region_forget(struct ks_region *r)
{
    r->conn->n_regions--;
    r->conn->region_bytes -= r->size;
    r->conn->srv->mapped_bytes -= r->size;
    memset(r, 0, sizeof(*r));
}

/* A region its connection let go of (at its end, or a detach after its work drained),
 * unpinned and unmapped on a worker: cuMemHostUnregister takes as long as the pinning for
 * GiBs of a VM's RAM, and on the loop would hold up every tenant. The daemon's counts of
 * pinned and mapped bytes keep it until then. */
struct region_release {
    struct ks_server *srv;
    uint8_t *base;
    uint64_t size;
    bool pinned;
};

static void release_run(struct ks_call *k)
{
    struct region_release *x = k->data;

    if (x->pinned)
        ksched_host_unregister(k->sched, x->base);
    munmap(x->base, x->size);
}

static void release_finish(struct ks_call *k)
{
    struct region_release *x = k->data;

    if (x->pinned)
        x->srv->pinned_bytes -= x->size;
    x->srv->mapped_bytes -= x->size;
    free(x);
}

static void region_unmap(struct ks_region *r)
{
    struct ks_conn *c = r->conn;
    struct region_release *x = malloc(sizeof(*x));

    if (r->device_mapped)
        region_disown(r);
    if (!x) { /* no memory to hand it over: here, then */
        region_unpin(r);
        munmap(r->base, r->size);
        region_forget(r);
        return;
    }
    *x = (struct region_release){.srv = c->srv, .base = r->base, .size = r->size,
                                 .pinned = r->pinned};
    if (r->pinned)
        c->pinned_bytes -= r->size;
    c->n_regions--;
    c->region_bytes -= r->size;
    memset(r, 0, sizeof(*r));
    ks_call_detached(c->srv, release_run, release_finish, x);
}

void ks_region_put(struct ks_region *r)
{
    if (--r->refs == 0 && r->detached)
        region_unmap(r);
}

void ks_regions_release(struct ks_conn *c)
{
    for (unsigned i = 0; i < KERNELET_MAX_REGIONS; i++)
        if (c->regions[i].used)
            region_unmap(&c->regions[i]);
}

/* A descriptor the daemon may map: a memfd sealed against shrinking (so the mapping can
 * never fault) holding at least size bytes. */
static bool region_acceptable(int fd, uint64_t size)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);

    return seals >= 0 && (seals & F_SEAL_SHRINK) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
           (uint64_t)st.st_size >= size;
}

/* Whether c may map size more bytes: within the operator's count and bytes for one
 * connection and the daemon's total, so that sparse memfds cannot use up its address
 * space (issue 15). */
static bool region_room(const struct ks_conn *c, uint64_t size)
{
    const struct ks_server *s = c->srv;

    return c->n_regions < s->cfg.max_regions && size <= s->cfg.max_region_bytes - c->region_bytes &&
           size <= KSERVER_MAX_MAPPED - s->mapped_bytes;
}

void ks_session_shm_attach(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    int fd = ks_conn_take_fd(c);
    uint64_t size = r->u.shm_attach.size;
    struct ks_region *slot = NULL;
    void *base;

    if (fd < 0) {
        ks_reply(c, KERNELET_OP_SHM_ATTACH, id, KERNELET_ST_BAD_REQUEST, NULL, 0);
        return;
    }
    for (unsigned i = 0; i < KERNELET_MAX_REGIONS && !slot; i++)
        if (!c->regions[i].used)
            slot = &c->regions[i];
    if (!slot || !region_room(c, size) || !region_acceptable(fd, size)) {
        close(fd);
        ks_reply_cuda(c, KERNELET_OP_SHM_ATTACH, id,
                      slot && region_room(c, size) ? KS_CUDA_INVALID_VALUE
                                                   : KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        ks_reply_cuda(c, KERNELET_OP_SHM_ATTACH, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    *slot = (struct ks_region){.conn = c, .used = true, .id = c->next_region++, .base = base,
                               .size = size};
    c->n_regions++;
    c->region_bytes += size;
    c->srv->mapped_bytes += size;
    if (c->next_region == KERNELET_REGION_INLINE)
        c->next_region = 1;
    /* pinned where the limits allow: copies then need no staging; without it they still
     * work */
    if (c->srv->can_pin && pin_room(c, size)) {
        if (!pin_start(c, id, KERNELET_OP_SHM_ATTACH, slot, 0))
            region_unmap(slot); /* answered: out of memory */
        return;
    }
    struct kernelet_shm_region ans = {.region = slot->id};
    ks_reply(c, KERNELET_OP_SHM_ATTACH, id, KERNELET_ST_OK, &ans, sizeof(ans));
}

void ks_session_shm_detach(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_region *reg = ks_region_find(c, r->u.shm_region.region);

    if (!reg) {
        ks_reply_cuda(c, KERNELET_OP_SHM_DETACH, id, KS_CUDA_INVALID_VALUE, 0);
        return;
    }
    reg->detached = true;
    if (reg->device_mapped) {
        /* kernels may still read it: unmapped once the tenant's queued work is done */
        reg->refs++;
        ks_drain_then(c, id, KERNELET_OP_SHM_DETACH, KS_AFTER_SHM_DETACH, (uintptr_t)reg);
        return;
    }
    if (reg->refs == 0 && reg->pinned) {
        /* the unpinning on a worker (its slot stays taken until then) */
        if (!pin_start(c, id, KERNELET_OP_SHM_DETACH, reg, 0))
            region_unmap(reg);
        return;
    }
    if (reg->refs == 0)
        region_unmap(reg);
    ks_reply(c, KERNELET_OP_SHM_DETACH, id, KERNELET_ST_OK, NULL, 0);
}
