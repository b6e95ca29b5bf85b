/*
 * Stream-ordered allocation and memory pools (cuMemAllocAsync, cuMemFreeAsync, cuMemPool*).
 *
 * The daemon has no pools: a pool here is the library's account of the allocations made
 * through it (used and reserved bytes, their high-water marks) and of the attributes a
 * program sets, so that the queries programs and frameworks make answer consistently.
 * Allocation is ordered in its stream by being made at once (ordinary MEM_ALLOC, counted
 * against the tenant's quota): memory that exists before the stream reaches the point
 * of allocation is usable there. A free is ordered after the work queued before it by
 * MEM_FREE itself, which the daemon answers once the tenant's queued work has drained; the
 * call therefore returns later than CUDA's would, never earlier. Nothing is cached, so
 * reserved equals used and trimming has nothing to do. Pools cannot be shared between
 * processes (no handle types).
 */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

#define KCU_MAGIC_POOL 0x6b63706cu

struct kcu_pool {
    uint32_t magic;
    int device;
    bool is_default, destroyed;
    uint64_t release_threshold;
    int reuse[3];                   /* the three REUSE_* attributes, in their order */
    uint64_t used, used_high;       /* reserved = used: nothing is cached */
};

static struct {
    pthread_mutex_t lock;
    struct kcu_pool defaults[KCU_MAX_DEVICES];
    struct kcu_pool *current[KCU_MAX_DEVICES];
} pools = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct kcu_pool *default_pool(int device)
{
    struct kcu_pool *p = &pools.defaults[device];

    if (p->magic != KCU_MAGIC_POOL)
        *p = (struct kcu_pool){.magic = KCU_MAGIC_POOL, .device = device, .is_default = true,
                               .reuse = {1, 1, 1}};
    return p;
}

/* The device's current pool (lock held). */
static struct kcu_pool *current_pool(int device)
{
    if (!pools.current[device])
        pools.current[device] = default_pool(device);
    return pools.current[device];
}

static struct kcu_pool *pool_from(CUmemoryPool h)
{
    struct kcu_pool *p = (struct kcu_pool *)h;

    return p && p->magic == KCU_MAGIC_POOL && !p->destroyed ? p : NULL;
}

/* ---- accounting ------------------------------------------------------------------------- */

static void account_alloc(struct kcu_pool *p, size_t bytes)
{
    pthread_mutex_lock(&pools.lock);
    p->used += bytes;
    if (p->used > p->used_high)
        p->used_high = p->used;
    pthread_mutex_unlock(&pools.lock);
}

void kcu_pool_freed(struct kcu_pool *p, size_t bytes)
{
    bool gone;

    pthread_mutex_lock(&pools.lock);
    p->used -= bytes < p->used ? bytes : p->used;
    /* A destroyed pool lives until its last allocation is freed, as in CUDA. */
    gone = p->destroyed && p->used == 0;
    pthread_mutex_unlock(&pools.lock);
    if (gone) {
        p->magic = 0;
        free(p);
    }
}

static CUresult alloc_from(struct kcu_pool *p, CUdeviceptr *dptr, size_t bytes, CUstream s,
                           bool pt)
{
    uint64_t stream;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_capture_refuse(stream, "cuMemAllocAsync during stream capture")))
        return r;
    if ((r = kcu_mem_alloc(dptr, bytes, p)) == CUDA_SUCCESS)
        account_alloc(p, bytes);
    return r;
}

/* The current pool of the calling thread's device. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream s, bool pt)
{
    struct kcu_ctx *ctx;
    struct kcu_pool *p;
    CUresult r = kcu_ctx_require(&ctx);

    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&pools.lock);
    p = current_pool(ctx->device);
    pthread_mutex_unlock(&pools.lock);
    return alloc_from(p, dptr, bytes, s, pt);
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, s, false); }
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, s, true); }

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s)
{
    return alloc_from(pool_from(pool), d, n, s, false);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool pool,
                                              CUstream s)
{
    return alloc_from(pool_from(pool), d, n, s, true);
}

/* MEM_FREE waits for the tenant's queued work, which orders it after the stream's. */
static CUresult free_async(CUdeviceptr dptr, CUstream s, bool pt)
{
    uint64_t stream;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r == CUDA_SUCCESS)
        r = kcu_capture_refuse(stream, "cuMemFreeAsync during stream capture");
    return r != CUDA_SUCCESS ? r : cuMemFree_v2(dptr);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr d, CUstream s) { return free_async(d, s, false); }
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s) { return free_async(d, s, true); }

/* ---- pools of a device ------------------------------------------------------------------- */

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kcu_device_at(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&pools.lock);
    *pool_out = (CUmemoryPool)default_pool(dev);
    pthread_mutex_unlock(&pools.lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kcu_device_at(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&pools.lock);
    *pool = (CUmemoryPool)current_pool(dev);
    pthread_mutex_unlock(&pools.lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    struct kcu_pool *p = pool_from(pool);
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!kcu_device_at(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!p || p->device != dev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pools.lock);
    pools.current[dev] = p;
    pthread_mutex_unlock(&pools.lock);
    return CUDA_SUCCESS;
}

/* CUDA 13's location-based forms: device memory only (no host or managed pools). */
static CUresult device_location(const CUmemLocation *loc, CUmemAllocationType type, int *dev)
{
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!loc)
        return CUDA_ERROR_INVALID_VALUE;
    if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return kcu_unsupported("memory pool of host or managed memory");
    if (!kcu_device_at(loc->id))
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = loc->id;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                        CUmemAllocationType type)
{
    int dev = 0;
    CUresult r = device_location(location, type, &dev);

    return r != CUDA_SUCCESS ? r : cuDeviceGetDefaultMemPool(pool_out, dev);
}

CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
                                 CUmemAllocationType type)
{
    int dev = 0;
    CUresult r = device_location(location, type, &dev);

    return r != CUDA_SUCCESS ? r : cuDeviceGetMemPool(pool, dev);
}

CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                 CUmemoryPool pool)
{
    int dev = 0;
    CUresult r = device_location(location, type, &dev);

    return r != CUDA_SUCCESS ? r : cuDeviceSetMemPool(dev, pool);
}

/* ---- explicit pools -------------------------------------------------------------------------- */

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    struct kcu_pool *p;
    int dev = 0;
    CUresult r;

    if (!pool || !props)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = device_location(&props->location, props->allocType, &dev)) != CUDA_SUCCESS)
        return r;
    if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return kcu_unsupported("cuMemPoolCreate with shareable handles (between processes)");
    if (!(p = calloc(1, sizeof(*p))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (struct kcu_pool){.magic = KCU_MAGIC_POOL, .device = dev, .reuse = {1, 1, 1}};
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    struct kcu_pool *p = pool_from(pool);
    bool gone;

    if (!p || p->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pools.lock);
    if (pools.current[p->device] == p)
        pools.current[p->device] = NULL; /* back to the default pool */
    p->destroyed = true;
    gone = p->used == 0;
    pthread_mutex_unlock(&pools.lock);
    if (gone) {
        p->magic = 0;
        free(p);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    (void)minBytesToKeep;
    return pool_from(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- attributes and access ------------------------------------------------------------------- */

static CUresult get_attr(const struct kcu_pool *p, CUmemPool_attribute a, void *value)
{
    switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = p->reuse[a - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *(cuuint64_t *)value = p->release_threshold;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *(cuuint64_t *)value = p->used;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *(cuuint64_t *)value = p->used_high;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* High-water marks may only be reset (set to 0); current amounts are read-only. */
static CUresult set_attr(struct kcu_pool *p, CUmemPool_attribute a, const void *value)
{
    switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->reuse[a - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(const int *)value != 0;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->release_threshold = *(const cuuint64_t *)value;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*(const cuuint64_t *)value != 0)
            return CUDA_ERROR_INVALID_VALUE;
        p->used_high = p->used;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    struct kcu_pool *p = pool_from(pool);
    CUresult r;

    if (!p || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pools.lock);
    r = get_attr(p, attr, value);
    pthread_mutex_unlock(&pools.lock);
    return r;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    struct kcu_pool *p = pool_from(pool);
    CUresult r;

    if (!p || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pools.lock);
    r = set_attr(p, attr, value);
    pthread_mutex_unlock(&pools.lock);
    return r;
}

/* A pool's memory is accessible from its own device only (no peers here). */
CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    struct kcu_pool *p = pool_from(pool);

    if (!p || (count && !map))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !kcu_device_at(map[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (map[i].location.id != p->device)
            return kcu_unsupported("cuMemPoolSetAccess for a peer device");
        if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE; /* the owning device's access cannot change */
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool,
                                    CUmemLocation *location)
{
    struct kcu_pool *p = pool_from(pool);

    if (!p || !flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == p->device
                 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}
