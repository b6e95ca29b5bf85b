/* The fake driver's virtual memory management API (see fake_driver.h): a reservation is
 * host address space without access, physical memory is a memfd, mapping puts the memfd at
 * the reserved address, and access makes it readable and writable, so that the backend's
 * copies and memsets reach mapped memory as they reach cuMemAlloc's. */
#define _GNU_SOURCE
#include "fake_driver.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define GRANULARITY ((size_t)2 << 20)

#define MAX_MAPS 4096

static struct {
    pthread_mutex_t lock;
    fake_vmm_stats stats;
    int one_access_per_map;         /* fake_vmm_one_access_per_map */
    unsigned map_delay_us;          /* fake_vmm_map_delay */
    struct { uintptr_t base; size_t size; } maps[MAX_MAPS];  /* with one_access_per_map */
    unsigned n_maps;
} v = {.lock = PTHREAD_MUTEX_INITIALIZER};

EXPORT void fake_vmm_map_delay(unsigned us)
{
    pthread_mutex_lock(&v.lock);
    v.map_delay_us = us;
    pthread_mutex_unlock(&v.lock);
}

EXPORT void fake_vmm_one_access_per_map(int on)
{
    pthread_mutex_lock(&v.lock);
    v.one_access_per_map = on;
    v.n_maps = 0;
    pthread_mutex_unlock(&v.lock);
}

/* With one_access_per_map: [p, p + size) is exactly one mapping. */
static int one_mapping(uintptr_t p, size_t size)
{
    int ok = !v.one_access_per_map;
    for (unsigned i = 0; !ok && i < v.n_maps; i++)
        ok = v.maps[i].base == p && v.maps[i].size == size;
    return ok;
}

static void note_map(uintptr_t p, size_t size, int mapped)
{
    for (unsigned i = 0; i < v.n_maps; i++)
        if (v.maps[i].base == p) {
            v.maps[i] = v.maps[--v.n_maps];
            break;
        }
    if (mapped && v.n_maps < MAX_MAPS)
        v.maps[v.n_maps++].base = p, v.maps[v.n_maps - 1].size = size;
}

EXPORT void fake_vmm_get_stats(fake_vmm_stats *out)
{
    pthread_mutex_lock(&v.lock);
    *out = v.stats;
    pthread_mutex_unlock(&v.lock);
}

static void count(unsigned *n, int delta)
{
    pthread_mutex_lock(&v.lock);
    *n += (unsigned)delta;
    pthread_mutex_unlock(&v.lock);
}

static int device_prop(const CUmemAllocationProp *prop)
{
    return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
           prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop->location.id == 0;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                              const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!granularity || !device_prop(prop))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = GRANULARITY;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags)
{
    if (!ptr || !size || size % GRANULARITY || addr || flags ||
        (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment ? alignment : GRANULARITY;
    uint8_t *raw = mmap(NULL, size + align, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
    if (base > (uintptr_t)raw)                      /* keep exactly [base, base + size) */
        munmap(raw, base - (uintptr_t)raw);
    munmap((void *)(base + size), (uintptr_t)raw + size + align - (base + size));
    *ptr = (CUdeviceptr)base;
    count(&v.stats.reservations, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    if (!ptr || munmap((void *)(uintptr_t)ptr, size))
        return CUDA_ERROR_INVALID_VALUE;
    count(&v.stats.reservations, -1);
    return CUDA_SUCCESS;
}

/* The handle is the memfd + 1 (0 is never a handle). */
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!handle || !size || size % GRANULARITY || flags || !device_prop(prop))
        return CUDA_ERROR_INVALID_VALUE;
    int fd = memfd_create("fake-vmm", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size)) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    void *m = mmap(NULL, size, PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {      /* what a real device hands out: the last user's bytes */
        memset(m, 0xa5, size);
        munmap(m, size);
    }
    *handle = (CUmemGenericAllocationHandle)fd + 1;
    count(&v.stats.handles, 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    if (!handle || close((int)(handle - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    count(&v.stats.handles, -1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    if (!ptr || !handle || !size || size % GRANULARITY || ptr % GRANULARITY || offset || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&v.lock);
    unsigned delay = v.map_delay_us;
    pthread_mutex_unlock(&v.lock);
    if (delay)
        usleep(delay);
    void *m = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                   (int)(handle - 1), 0);
    if (m == MAP_FAILED)
        return CUDA_ERROR_INVALID_VALUE;
    count(&v.stats.mappings, 1);
    pthread_mutex_lock(&v.lock);
    note_map((uintptr_t)ptr, size, 1);
    pthread_mutex_unlock(&v.lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                               size_t n)
{
    if (!ptr || !desc || n != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&v.lock);
    int one = one_mapping((uintptr_t)ptr, size);
    pthread_mutex_unlock(&v.lock);
    if (!one)
        return CUDA_ERROR_INVALID_VALUE;
    int prot = desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
               : desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READ ? PROT_READ : PROT_NONE;
    return mprotect((void *)(uintptr_t)ptr, size, prot) ? CUDA_ERROR_INVALID_VALUE
                                                        : CUDA_SUCCESS;
}

/* The addresses stay reserved: back to inaccessible anonymous memory. */
EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    void *m = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (!ptr || m == MAP_FAILED)
        return CUDA_ERROR_INVALID_VALUE;
    count(&v.stats.mappings, -1);
    pthread_mutex_lock(&v.lock);
    note_map((uintptr_t)ptr, size, 0);
    pthread_mutex_unlock(&v.lock);
    return CUDA_SUCCESS;
}
