/* Memory: device allocations (kept in a sorted table, so that copies can be checked and
 * unified pointers classified), pinned host memory (shared regions the daemon copies from
 * and to directly), pointer attributes and memory information. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernelet/range_table.h"
#include "graph_internal.h"

/* cuda.h maps cuMemHostRegister to its _v2; both symbols are defined here. */
#undef cuMemHostRegister
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);

/* ---- tables of ranges ------------------------------------------------------------------- */

struct dev_range {
    krange r;               /* [base, base + size): first, for the range table */
    bool global;            /* a module variable: not freed by cuMemFree */
    struct kcu_pool *pool;  /* the memory pool it was allocated from (mempool.c), or NULL */
};

/* In host_range.flags: registered (cuMemHostRegister) rather than allocated. */
#define KCU_HOST_REGISTERED 0x80000000u

struct host_range {
    uintptr_t base;
    size_t size;
    unsigned flags;         /* CU_MEMHOSTALLOC_* or CU_MEMHOSTREGISTER_* */
    bool shared;            /* region the daemon reaches; else pageable (registered) */
    bool mapped;            /* the tenant's kernels reach it at device */
    CUdeviceptr device;
    struct kcu_region region;
};

static struct {
    pthread_rwlock_t lock;
    krange_table dev;       /* struct dev_range */
    struct host_range *host;
    size_t n_host, cap_host;
} mem = {.lock = PTHREAD_RWLOCK_INITIALIZER,
         .dev = KRANGE_TABLE_INIT(sizeof(struct dev_range))};

void kcu_device_range_add(CUdeviceptr p, size_t len, bool global)
{
    struct dev_range *r;

    pthread_rwlock_wrlock(&mem.lock);
    /* a global looked up twice is there already; without memory the range goes unrecorded */
    if (!krange_exact(&mem.dev, p) && (r = krange_insert(&mem.dev, p, len)))
        r->global = global;
    pthread_rwlock_unlock(&mem.lock);
}

void kcu_device_range_remove(CUdeviceptr p)
{
    struct dev_range *r;

    pthread_rwlock_wrlock(&mem.lock);
    if ((r = krange_exact(&mem.dev, p)))
        krange_remove(&mem.dev, r);
    pthread_rwlock_unlock(&mem.lock);
}

bool kcu_device_lookup(CUdeviceptr p, CUdeviceptr *base, size_t *size)
{
    const struct dev_range *r;

    pthread_rwlock_rdlock(&mem.lock);
    r = krange_find(&mem.dev, p, 0);
    if (r) {
        if (base)
            *base = r->r.base;
        if (size)
            *size = r->r.size;
    }
    pthread_rwlock_unlock(&mem.lock);
    return r != NULL;
}

/* The mapped pinned allocation whose device addresses hold p (with mem.lock held). */
static const struct host_range *host_find_device(CUdeviceptr p)
{
    for (size_t i = 0; i < mem.n_host; i++)
        if (mem.host[i].mapped && p - mem.host[i].device < mem.host[i].size)
            return &mem.host[i];
    return NULL;
}

/* Whether [p, p + len) lies in mapped pinned memory at its device address: copies and
 * memsets may name it as device memory, as natively (XLA clears pinned buffers so). */
static bool mapped_host_lookup(CUdeviceptr p, CUdeviceptr *base, size_t *size)
{
    const struct host_range *r;

    pthread_rwlock_rdlock(&mem.lock);
    if ((r = host_find_device(p))) {
        *base = r->device;
        *size = r->size;
    }
    pthread_rwlock_unlock(&mem.lock);
    return r != NULL;
}

bool kcu_device_range(CUdeviceptr p, size_t len)
{
    CUdeviceptr base;
    size_t size;

    if (!kcu_device_lookup(p, &base, &size) && !mapped_host_lookup(p, &base, &size)) {
        kcu_log("device range 0x%llx + %zu: in no allocation", (unsigned long long)p, len);
        return false;
    }
    if (len > size - (p - base)) {
        kcu_log("device range 0x%llx + %zu: past the end of allocation 0x%llx + %zu",
                (unsigned long long)p, len, (unsigned long long)base, size);
        return false;
    }
    return true;
}

static const struct host_range *host_find(uintptr_t p)
{
    for (size_t i = 0; i < mem.n_host; i++)
        if (p - mem.host[i].base < mem.host[i].size)
            return &mem.host[i];
    return NULL;
}

void kcu_host_lookup(const void *p, size_t len, struct kcu_host_span *out)
{
    const struct host_range *r;

    memset(out, 0, sizeof(*out));
    pthread_rwlock_rdlock(&mem.lock);
    r = host_find((uintptr_t)p);
    if (r && r->shared && len <= r->size - ((uintptr_t)p - r->base)) {
        out->pinned = true;
        out->region = r->region.id;
        out->offset = (uintptr_t)p - r->base;
    }
    pthread_rwlock_unlock(&mem.lock);
}

bool kcu_host_flags(const void *p, unsigned *flags)
{
    const struct host_range *r;

    pthread_rwlock_rdlock(&mem.lock);
    r = host_find((uintptr_t)p);
    if (r)
        *flags = r->flags;
    pthread_rwlock_unlock(&mem.lock);
    return r != NULL;
}

static CUresult host_add(const struct host_range *h)
{
    CUresult r = CUDA_SUCCESS;

    pthread_rwlock_wrlock(&mem.lock);
    if (mem.n_host == mem.cap_host) {
        size_t cap = mem.cap_host ? mem.cap_host * 2 : 16;
        struct host_range *n = realloc(mem.host, cap * sizeof(*n));
        if (n) {
            mem.host = n;
            mem.cap_host = cap;
        } else {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (r == CUDA_SUCCESS)
        mem.host[mem.n_host++] = *h;
    pthread_rwlock_unlock(&mem.lock);
    return r;
}

/* Removes the host range starting exactly at p into *out; false when there is none. */
static bool host_take(uintptr_t p, struct host_range *out)
{
    bool found = false;

    pthread_rwlock_wrlock(&mem.lock);
    for (size_t i = 0; i < mem.n_host; i++)
        if (mem.host[i].base == p) {
            *out = mem.host[i];
            mem.host[i] = mem.host[--mem.n_host];
            found = true;
            break;
        }
    pthread_rwlock_unlock(&mem.lock);
    return found;
}

/* ---- device memory ------------------------------------------------------------------------ */

/* The pool of the allocation at p, forgotten (lock held). */
static struct kcu_pool *take_pool(CUdeviceptr p)
{
    struct dev_range *r = krange_exact(&mem.dev, p);
    struct kcu_pool *pool = r ? r->pool : NULL;

    if (r)
        r->pool = NULL;
    return pool;
}

static void set_pool(CUdeviceptr p, struct kcu_pool *pool)
{
    struct dev_range *r;

    pthread_rwlock_wrlock(&mem.lock);
    if ((r = krange_exact(&mem.dev, p)))
        r->pool = pool;
    pthread_rwlock_unlock(&mem.lock);
}

CUresult kcu_mem_alloc(CUdeviceptr *dptr, size_t bytesize, struct kcu_pool *pool)
{
    struct kcu_ctx *x;
    struct kernelet_mem_alloc a = {.size = bytesize};
    struct kernelet_mem_ptr p;
    CUresult r;

    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    if (bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    r = kcu_call(kcu.client, KERNELET_OP_MEM_ALLOC, &a, sizeof(a), NULL, 0, &p, sizeof(p), NULL);
    if (r != CUDA_SUCCESS)
        return r;
    kcu_device_range_add(p.dptr, bytesize, false);
    if (pool)
        set_pool(p.dptr, pool);
    *dptr = p.dptr;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult r;

    if (kcu_capture_any() && (r = kcu_capture_check_unsafe()) != CUDA_SUCCESS)
        return r; /* one of CUDA's "unsafe" calls during capture */
    return kcu_mem_alloc(dptr, bytesize, NULL);
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes)
{
    size_t pitch, bytes;

    if (!pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    pitch = (WidthInBytes + 511) & ~(size_t)511;
    if (__builtin_mul_overflow(pitch, Height, &bytes))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = kcu_mem_alloc(dptr, bytes, NULL);
    if (r == CUDA_SUCCESS)
        *pPitch = pitch;
    return r;
}

/* A freed allocation leaves the table and its pool's account. */
static void forget(CUdeviceptr p, size_t size)
{
    struct kcu_pool *pool;

    pthread_rwlock_wrlock(&mem.lock);
    pool = take_pool(p);
    pthread_rwlock_unlock(&mem.lock);
    kcu_device_range_remove(p);
    if (pool)
        kcu_pool_freed(pool, size);
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    struct kcu_ctx *x;
    struct kernelet_mem_ptr p = {.dptr = dptr};
    CUdeviceptr base;
    size_t size;
    CUresult r;

    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    if (dptr == 0)
        return CUDA_SUCCESS;
    if (!kcu_device_lookup(dptr, &base, &size) || base != dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (kcu_capture_any() && (r = kcu_capture_check_unsafe()) != CUDA_SUCCESS)
        return r; /* freeing synchronises: CUDA forbids it during capture */
    r = kcu_call(kcu.client, KERNELET_OP_MEM_FREE, &p, sizeof(p), NULL, 0, NULL, 0, NULL);
    if (r == CUDA_SUCCESS)
        forget(dptr, size);
    return r;
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    struct kcu_ctx *x;
    struct kernelet_mem_info info;
    CUresult r;

    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    r = kcu_call(kcu.client, KERNELET_OP_MEM_GET_INFO, NULL, 0, NULL, 0, &info, sizeof(info),
                 NULL);
    if (r == CUDA_SUCCESS) {
        *free_bytes = (size_t)info.free;
        *total = (size_t)info.total;
    }
    return r;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUdeviceptr base;
    size_t size;

    if (!kcu_device_lookup(dptr, &base, &size))
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

/* ---- pinned host memory ------------------------------------------------------------------ */

/* Maps h's region for the tenant's kernels where the daemon allows it, as CUDA maps all
 * pinned memory on a device with unified addressing. Only an allocation that asked for
 * DEVICEMAP fails without it (CUDA's not-supported error where kernels cannot read host
 * memory here: fenced, or in a VM). */
static CUresult map_for_kernels(struct host_range *h)
{
    int can_map = kcu.n_devices > 0 && kcu.dev[0].props.attrs[CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY];
    bool asked = h->flags & CU_MEMHOSTALLOC_DEVICEMAP;
    CUresult r;

    if (!can_map)
        return asked ? kcu_unsupported("cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP): kernels "
                                       "cannot read host memory here") : CUDA_SUCCESS;
    r = h->shared ? kcu_region_map_device(kcu.client, &h->region, &h->device)
                  : CUDA_ERROR_OUT_OF_MEMORY;
    h->mapped = r == CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        kcu_log("cuMemHostAlloc: %zu bytes not mapped for kernels (%d)", h->size, (int)r);
    return asked ? r : CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    struct host_range h = {.flags = Flags, .shared = true};
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct kcu_ctx *x;
    CUresult r;

    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    h.size = (bytesize + page - 1) & ~(page - 1);
    r = kcu_region_create(kcu.client, h.size, &h.region);
    if (r != CUDA_SUCCESS) {
        /* Out of regions or shared memory: pageable memory still works, just staged. */
        kcu_log("cuMemHostAlloc: %zu bytes as pageable memory (%d)", bytesize, (int)r);
        void *p = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return CUDA_ERROR_OUT_OF_MEMORY;
        h.shared = false;
        h.region.base = p;
        h.region.size = h.size;
    }
    h.base = (uintptr_t)h.region.base;
    if ((r = map_for_kernels(&h)) != CUDA_SUCCESS || (r = host_add(&h)) != CUDA_SUCCESS) {
        if (h.shared)
            kcu_region_destroy(kcu.client, &h.region);
        else
            munmap(h.region.base, h.size);
        return r;
    }
    *pp = h.region.base;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
    struct host_range h;
    unsigned flags;
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    /* Only what cuMemHostAlloc returned, not registered memory. */
    if (!kcu_host_flags(p, &flags) || (flags & KCU_HOST_REGISTERED) ||
        !host_take((uintptr_t)p, &h))
        return CUDA_ERROR_INVALID_VALUE;
    if (h.shared)
        kcu_region_destroy(kcu.client, &h.region);
    else
        munmap(h.region.base, h.size);
    return CUDA_SUCCESS;
}

/* Registered memory stays pageable (its copies go through the staging slots): the daemon
 * cannot reach arbitrary pages of this process, and a guest's pages are not the GPU's to
 * map. So registration only records the range (for CUDA's errors and cuMemHostGetFlags);
 * mapping it into the device's address space (DEVICEMAP, IOMEMORY) is not supported, and
 * says so with CUDA's own error so that programs take their path without mapped memory.
 */

/* Whether [p, p + len) overlaps a range already known. */
static bool host_overlaps(uintptr_t p, size_t len)
{
    bool hit = false;

    pthread_rwlock_rdlock(&mem.lock);
    for (size_t i = 0; i < mem.n_host && !hit; i++)
        hit = p < mem.host[i].base + mem.host[i].size && mem.host[i].base < p + len;
    pthread_rwlock_unlock(&mem.lock);
    return hit;
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                           CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    struct host_range h = {.base = (uintptr_t)p, .size = bytesize,
                           .flags = Flags | KCU_HOST_REGISTERED};
    struct kcu_ctx *x;
    CUresult r;

    if (!p || bytesize == 0 || (Flags & ~known) || (uintptr_t)p + bytesize < (uintptr_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ctx_require(&x)) != CUDA_SUCCESS)
        return r;
    if (Flags & (CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY))
        return kcu_unsupported("cuMemHostRegister(DEVICEMAP or IOMEMORY: host memory mapped "
                               "for kernels)");
    if (host_overlaps(h.base, bytesize))
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return host_add(&h);
}

/* The 4.0 ABI: the same arguments. */
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    struct host_range h;
    unsigned flags;
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    /* Only the start of a registered range; pinned allocations are cuMemFreeHost's. */
    if (!p || !kcu_host_flags(p, &flags) || !(flags & KCU_HOST_REGISTERED) ||
        !host_take((uintptr_t)p, &h))
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    return CUDA_SUCCESS;
}

/* Where kernels reach the host memory at p, when p lies in pinned memory mapped for them;
 * 0 otherwise. */
static CUdeviceptr mapped_address(const void *p)
{
    const struct host_range *h;
    CUdeviceptr d = 0;

    pthread_rwlock_rdlock(&mem.lock);
    h = host_find((uintptr_t)p);
    if (h && h->mapped)
        d = h->device + ((uintptr_t)p - h->base);
    pthread_rwlock_unlock(&mem.lock);
    return d;
}

/* Only pinned memory the daemon mapped for kernels has a device address (see above). */
CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CUresult r = kcu_ready();
    unsigned flags;

    if (r != CUDA_SUCCESS)
        return r;
    if (!pdptr || !p || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((*pdptr = mapped_address(p)))
        return CUDA_SUCCESS;
    if (!kcu_host_flags(p, &flags))
        return CUDA_ERROR_INVALID_VALUE;
    return kcu_unsupported("cuMemHostGetDevicePointer (host memory not mapped for kernels)");
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    unsigned f;

    if (!pFlags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kcu_host_flags(p, &f))
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = f & ~KCU_HOST_REGISTERED;
    return CUDA_SUCCESS;
}

/* ---- pointer attributes ------------------------------------------------------------------- */

/* The attribute for ptr into data; CUDA_ERROR_INVALID_VALUE for memory this library does
 * not know. */
static CUresult pointer_attribute(void *data, CUpointer_attribute a, CUdeviceptr ptr)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned hflags;
    bool dev = kcu_device_lookup(ptr, &base, &size);
    bool host = !dev && kcu_host_flags((const void *)(uintptr_t)ptr, &hflags);
    struct kcu_ctx *x = kcu_ctx_current();

    if (!dev && !host)
        return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = (CUcontext)x;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        if (!dev && !(ptr = mapped_address((const void *)(uintptr_t)ptr)))
            return CUDA_ERROR_INVALID_VALUE;
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (dev)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = x ? x->device : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned *)data = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = dev ? base : ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        if (!dev)
            return CUDA_ERROR_INVALID_VALUE;
        *(CUdeviceptr *)data = base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        if (!dev)
            return CUDA_ERROR_INVALID_VALUE;
        *(size_t *)data = size;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUresult r = kcu_ready();

    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    return r != CUDA_SUCCESS ? r : pointer_attribute(data, attribute, ptr);
}

/* Like the real driver, unknown pointers and attributes get zeros rather than an error. */
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute *attributes, void **data,
                                        CUdeviceptr ptr)
{
    CUresult r = kcu_ready();

    if (!attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    for (unsigned i = 0; i < numAttributes; i++) {
        uint64_t zero[2] = {0, 0};
        if (!data[i])
            continue;
        if (pointer_attribute(data[i], attributes[i], ptr) != CUDA_SUCCESS)
            memcpy(data[i], zero, attributes[i] == CU_POINTER_ATTRIBUTE_CONTEXT ||
                                          attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
                                          attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER ||
                                          attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
                                          attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE ||
                                          attributes[i] == CU_POINTER_ATTRIBUTE_BUFFER_ID
                                      ? 8 : 4);
    }
    return CUDA_SUCCESS;
}
