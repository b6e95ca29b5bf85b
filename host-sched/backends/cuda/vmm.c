/* Virtual memory management for tenants whose kernels are not fenced (executor.h, the
 * vmm_* ops): reservations, physical memory and mappings straight from the driver. The
 * reservations join the ranges copies and memsets may name (kc->reserved); what is not
 * mapped in them fails in the driver, as it does for a program on its own GPU. */
#include <stdio.h>

#include "backend_internal.h"

int kcuda_vmm_reserve(void *state, uint64_t bytes, uint64_t align, kbackend_devptr *va,
                      kbackend_error *err)
{
    kcuda *kc = state;
    int rc = kcuda_bind(kc, err);
    if (rc)
        return rc;
    CUdeviceptr p = 0;
    CUresult r = cuMemAddressReserve(&p, bytes, align, 0, 0);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EDEVMEM, r, "cuMemAddressReserve");
    pthread_mutex_lock(&kc->lock);
    rc = kcuda_alloc_add(&kc->reserved, p, bytes, err);
    pthread_mutex_unlock(&kc->lock);
    if (rc) {
        cuMemAddressFree(p, bytes);
        return rc;
    }
    *va = p;
    return 0;
}

void kcuda_vmm_free(void *state, kbackend_devptr va, uint64_t bytes)
{
    kcuda *kc = state;
    pthread_mutex_lock(&kc->lock);
    int rc = kcuda_alloc_remove(&kc->reserved, va, NULL, NULL);
    pthread_mutex_unlock(&kc->lock);
    if (!rc && !kcuda_bind(kc, NULL))
        cuMemAddressFree(va, bytes);
}

/* va's bytes mapped to handle from offset, readable and writable by the device. */
static CUresult map_rw(kcuda *kc, CUdeviceptr va, uint64_t bytes, uint64_t handle,
                       uint64_t offset, const char **what)
{
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = kc->dev},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUresult r = cuMemMap(va, bytes, offset, (CUmemGenericAllocationHandle)handle, 0);
    *what = "cuMemMap";
    if (r == CUDA_SUCCESS && (r = cuMemSetAccess(va, bytes, &access, 1)) != CUDA_SUCCESS) {
        *what = "cuMemSetAccess";
        cuMemUnmap(va, bytes);
    }
    return r;
}

/* New physical memory holds a past tenant's bytes: cleared through a mapping of its own
 * before the tenant gets it. */
static CUresult clear_new(kcuda *kc, uint64_t handle, uint64_t bytes, const char **what)
{
    CUdeviceptr p = 0;
    CUresult r = cuMemAddressReserve(&p, bytes, 0, 0, 0);
    *what = "cuMemAddressReserve";
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = map_rw(kc, p, bytes, handle, 0, what)) == CUDA_SUCCESS) {
        if ((r = kcuda_zero_now(kc, p, bytes)) != CUDA_SUCCESS)
            *what = "clearing new memory";
        cuMemUnmap(p, bytes);
    }
    cuMemAddressFree(p, bytes);
    return r;
}

int kcuda_vmm_create(void *state, uint64_t bytes, uint64_t *handle, kbackend_error *err)
{
    kcuda *kc = state;
    int rc = kcuda_bind(kc, err);
    if (rc)
        return rc;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE,
                                             .id = kc->dev}};
    CUmemGenericAllocationHandle h = 0;
    const char *what = "cuMemCreate";
    CUresult r = cuMemCreate(&h, bytes, &prop, 0);
    if (r == CUDA_SUCCESS && (r = clear_new(kc, (uint64_t)h, bytes, &what)) != CUDA_SUCCESS)
        cuMemRelease(h);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EDEVMEM, r, what);
    *handle = (uint64_t)h;
    return 0;
}

void kcuda_vmm_release(void *state, uint64_t handle)
{
    kcuda *kc = state;
    if (!kcuda_bind(kc, NULL))
        cuMemRelease((CUmemGenericAllocationHandle)handle);
}

int kcuda_vmm_map(void *state, kbackend_devptr va, uint64_t bytes, uint64_t handle,
                  uint64_t offset, kbackend_error *err)
{
    kcuda *kc = state;
    const char *what;
    int rc = kcuda_bind(kc, err);
    if (rc)
        return rc;
    CUresult r = map_rw(kc, va, bytes, handle, offset, &what);
    return r == CUDA_SUCCESS ? 0 : kcuda_cu_fail(err, r, what);
}

void kcuda_vmm_unmap(void *state, kbackend_devptr va, uint64_t bytes)
{
    kcuda *kc = state;
    if (!kcuda_bind(kc, NULL))
        cuMemUnmap(va, bytes);
}
