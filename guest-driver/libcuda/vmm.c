/* Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap and friends), as
 * XLA's allocator and PyTorch's expandable segments use it: each call is a VMM_* request
 * to kerneletd, which serves it where the tenant's kernels are not fenced (an isolated
 * tenant; the device's VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED says so) and answers CUDA's
 * not-supported error elsewhere. This file remembers the handles' properties and the
 * mappings, for the queries CUDA answers locally. Memory cannot be shared with other
 * processes (no shareable handle types). */
#include <stdlib.h>
#include <string.h>

#include "libcuda_internal.h"

#define GRANULE KERNELET_VMM_GRANULE

struct vmm_handle {
    uint64_t id;                /* the daemon's, also the CUmemGenericAllocationHandle */
    size_t size;
    CUmemAllocationProp prop;
    unsigned refs;              /* cuMemCreate's and cuMemRetainAllocationHandle's */
};

struct vmm_map {
    CUdeviceptr va;
    size_t size;
    uint64_t handle;
};

static struct {
    pthread_mutex_t lock;
    struct vmm_handle *handles;
    size_t n_handles;
    struct vmm_map *maps;
    size_t n_maps;
} vmm = {.lock = PTHREAD_MUTEX_INITIALIZER};

static CUresult request(uint16_t op, const struct kernelet_vmm *v, void *ans, size_t cap)
{
    struct kcu_ctx *x;
    CUresult r = kcu_ctx_require(&x);

    if (r != CUDA_SUCCESS)
        return r;
    r = kcu_call(kcu.client, op, v, sizeof(*v), NULL, 0, ans, cap, NULL);
    if (r == CUDA_ERROR_NOT_SUPPORTED)
        kcu_unsupported("virtual memory management (cuMemCreate, cuMemMap: kernels fenced "
                        "into device memory here; KERNELET_ISOLATE=1 gives a context of "
                        "its own)");
    return r;
}

/* A device-resident, pinned allocation of device 0 without shareable handles. */
static bool prop_ok(const CUmemAllocationProp *p)
{
    return p && p->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
           p->location.type == CU_MEM_LOCATION_TYPE_DEVICE && p->location.id >= 0 &&
           p->location.id < kcu.n_devices;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity,
                                               const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option)
{
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!granularity || !prop_ok(prop) || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                           option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = GRANULE;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags)
{
    struct kernelet_vmm v = {.size = size, .arg = alignment};
    struct kernelet_mem_ptr ans;
    CUresult r;

    (void)addr; /* a hint, as CUDA takes it */
    if (!ptr || !size || size % GRANULE || (alignment & (alignment - 1)) || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = request(KERNELET_OP_VMM_RESERVE, &v, &ans, sizeof(ans))) != CUDA_SUCCESS)
        return r;
    kcu_device_range_add(ans.dptr, size, false);
    *ptr = ans.dptr;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    struct kernelet_vmm v = {.va = ptr};
    CUresult r;

    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = request(KERNELET_OP_VMM_FREE, &v, NULL, 0)) == CUDA_SUCCESS)
        kcu_device_range_remove(ptr);
    return r;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
    struct kernelet_vmm v = {.size = size};
    struct kernelet_handle ans;
    CUresult r;

    if (!handle || !size || size % GRANULE || !prop_ok(prop) || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = request(KERNELET_OP_VMM_CREATE, &v, &ans, sizeof(ans))) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&vmm.lock);
    struct vmm_handle *grown = realloc(vmm.handles, (vmm.n_handles + 1) * sizeof(*grown));
    if (grown) {
        vmm.handles = grown;
        vmm.handles[vmm.n_handles++] = (struct vmm_handle){.id = ans.handle, .size = size,
                                                           .prop = *prop, .refs = 1};
    }
    pthread_mutex_unlock(&vmm.lock);
    if (!grown) {
        struct kernelet_vmm rel = {.arg = ans.handle};
        request(KERNELET_OP_VMM_RELEASE, &rel, NULL, 0);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = ans.handle;
    return CUDA_SUCCESS;
}

/* The handle's entry (lock held), or NULL. */
static struct vmm_handle *handle_find(uint64_t id)
{
    for (size_t i = 0; i < vmm.n_handles; i++)
        if (vmm.handles[i].id == id)
            return &vmm.handles[i];
    return NULL;
}

/* The daemon gets the handle back with its last reference (retains count too). */
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct kernelet_vmm v = {.arg = handle};
    bool last = true;

    pthread_mutex_lock(&vmm.lock);
    struct vmm_handle *h = handle_find(handle);
    if (h && h->refs > 1) {
        h->refs--;
        last = false;
    }
    pthread_mutex_unlock(&vmm.lock);
    if (!last)
        return CUDA_SUCCESS;
    CUresult r = request(KERNELET_OP_VMM_RELEASE, &v, NULL, 0);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&vmm.lock);
        if ((h = handle_find(handle)))
            *h = vmm.handles[--vmm.n_handles];
        pthread_mutex_unlock(&vmm.lock);
    }
    return r;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    struct kernelet_vmm v = {.va = ptr, .size = size, .offset = offset, .arg = handle};
    CUresult r;

    if (!ptr || !size || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = request(KERNELET_OP_VMM_MAP, &v, NULL, 0)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&vmm.lock);
    struct vmm_map *grown = realloc(vmm.maps, (vmm.n_maps + 1) * sizeof(*grown));
    if (grown) {    /* without room, only the local queries miss it */
        vmm.maps = grown;
        vmm.maps[vmm.n_maps++] = (struct vmm_map){.va = ptr, .size = size, .handle = handle};
    }
    pthread_mutex_unlock(&vmm.lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    struct kernelet_vmm v = {.va = ptr, .size = size};
    CUresult r;

    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = request(KERNELET_OP_VMM_UNMAP, &v, NULL, 0)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&vmm.lock);
    for (size_t i = 0; i < vmm.n_maps;)
        if (vmm.maps[i].va >= ptr && vmm.maps[i].va - ptr < size)
            vmm.maps[i] = vmm.maps[--vmm.n_maps];
        else
            i++;
    pthread_mutex_unlock(&vmm.lock);
    return CUDA_SUCCESS;
}

/* The mapping holding ptr (lock held), or NULL. */
static const struct vmm_map *map_find(CUdeviceptr ptr)
{
    for (size_t i = 0; i < vmm.n_maps; i++)
        if (ptr - vmm.maps[i].va < vmm.maps[i].size)
            return &vmm.maps[i];
    return NULL;
}

/* kerneletd maps memory readable and writable by its device: access is granted already;
 * what cannot be granted (another device, host access) is refused. */
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                size_t count)
{
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!ptr || !size || !desc || !count)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            desc[i].location.id < 0 || desc[i].location.id >= kcu.n_devices ||
            desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm.lock);
    bool mapped = map_find(ptr) != NULL;
    pthread_mutex_unlock(&vmm.lock);
    return mapped ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                CUdeviceptr ptr)
{
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm.lock);
    bool mapped = map_find(ptr) != NULL;
    pthread_mutex_unlock(&vmm.lock);
    *flags = mapped && location->type == CU_MEM_LOCATION_TYPE_DEVICE
                 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return mapped ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                        CUmemGenericAllocationHandle handle)
{
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm.lock);
    const struct vmm_handle *h = handle_find(handle);
    if (h)
        *prop = h->prop;
    pthread_mutex_unlock(&vmm.lock);
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The handle mapped at addr, with one more reference that the caller releases. */
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm.lock);
    const struct vmm_map *m = map_find((CUdeviceptr)(uintptr_t)addr);
    struct vmm_handle *h = m ? handle_find(m->handle) : NULL;
    if (h) {
        h->refs++;
        *handle = h->id;
    }
    pthread_mutex_unlock(&vmm.lock);
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
