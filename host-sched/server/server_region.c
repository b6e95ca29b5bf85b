/* Shared-memory regions of a connection (SHM_ATTACH, SHM_DETACH, SHM_MAP_DEVICE): memfds
 * of the tenant's that the daemon maps, bounded in count and bytes per connection and in
 * address space for all (issue 15). A region is also pinned for the device while the
 * connection's pinned bytes allow (copies from and to it then run as DMA, with no staging
 * in the driver), and on request mapped for the tenant's kernels (CUDA's mapped pinned
 * memory), which only tenants whose kernels are not fenced into their device memory may
 * ask: a worker of the isolation tier, or a daemon that does not fence. */
#include <fcntl.h>
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

/* Pins r for the device when the limits allow; 0, or a KSCHED_E* code. */
static int region_pin(struct ks_region *r)
{
    struct ks_conn *c = r->conn;
    ksched_err err;
    int rc;

    if (r->pinned)
        return 0;
    if (!pin_room(c, r->size))
        return KSCHED_ENOMEM;
    if ((rc = ksched_host_register(c->srv->cfg.sched, r->base, r->size, &r->device, &err)))
        return rc;
    r->pinned = true;
    c->pinned_bytes += r->size;
    c->srv->pinned_bytes += r->size;
    return 0;
}

static void region_unpin(struct ks_region *r)
{
    if (!r->pinned)
        return;
    ksched_host_unregister(r->conn->srv->cfg.sched, r->base);
    r->pinned = false;
    r->conn->pinned_bytes -= r->size;
    r->conn->srv->pinned_bytes -= r->size;
}

bool ks_region_can_map_device(const struct ks_conn *c)
{
    return ks_kernels_unconfined(c) && c->srv->can_pin;
}

/* Moves r's mapping to address, where the tenant has it, so that the tenant's own pointer
 * works in its kernels; false (r unchanged, perhaps unpinned) when anything is there. */
static bool region_move(struct ks_region *r, uint64_t address)
{
    void *want = (void *)(uintptr_t)address;
    void *hold;

    if (!address || address + r->size < address || r->refs)
        return false;
    /* a placeholder that takes the range only if it is free; mremap then replaces it */
    hold = mmap(want, r->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                MAP_FIXED_NOREPLACE, -1, 0);
    if (hold == MAP_FAILED)
        return false;
    if (hold != want) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        munmap(hold, r->size);
        return false;
    }
    region_unpin(r);
    void *moved = mremap(r->base, r->size, r->size, MREMAP_MAYMOVE | MREMAP_FIXED, want);
    if (moved == MAP_FAILED) {
        munmap(hold, r->size);
        return false;
    }
    r->base = moved;
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

void ks_region_map_device(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    const struct kernelet_shm_map_device *m = &r->u.shm_map_device;
    struct ks_region *reg = ks_region_find(c, m->region);
    int rc = 0;

    if (!reg) {
        ks_reply_cuda(c, KERNELET_OP_SHM_MAP_DEVICE, id, KS_CUDA_INVALID_VALUE, 0);
        return;
    }
    if (!ks_region_can_map_device(c)) {
        ks_reply_cuda(c, KERNELET_OP_SHM_MAP_DEVICE, id, KS_CUDA_NOT_SUPPORTED, 0);
        return;
    }
    if (!reg->device_mapped) {
        if ((uintptr_t)reg->base != m->address)
            region_move(reg, m->address);
        if ((rc = region_pin(reg)) || (rc = region_adopt(c, reg))) {
            ks_reply_cuda(c, KERNELET_OP_SHM_MAP_DEVICE, id, ks_cuda_of(rc, ""), 0);
            return;
        }
        reg->device_mapped = true;
    }
    struct kernelet_shm_device ans = {.device_ptr = reg->device};
    ks_reply(c, KERNELET_OP_SHM_MAP_DEVICE, id, KERNELET_ST_OK, &ans, sizeof(ans));
}

struct ks_region *ks_region_find(struct ks_conn *c, uint32_t id)
{
    for (unsigned i = 0; i < KERNELET_MAX_REGIONS; i++)
        if (c->regions[i].used && !c->regions[i].detached && c->regions[i].id == id)
            return &c->regions[i];
    return NULL;
}

static void region_unmap(struct ks_region *r)
{
    if (r->device_mapped)
        region_disown(r);
    region_unpin(r);
    r->conn->n_regions--;
    r->conn->region_bytes -= r->size;
    r->conn->srv->mapped_bytes -= r->size;
    munmap(r->base, r->size);
    memset(r, 0, sizeof(*r));
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
    region_pin(slot); /* copies then need no staging; without it they still work */
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
    if (reg->refs == 0)
        region_unmap(reg);
    ks_reply(c, KERNELET_OP_SHM_DETACH, id, KERNELET_ST_OK, NULL, 0);
}
