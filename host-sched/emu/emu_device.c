/* The emulated device: configuration, worker pool and the public memory API. */
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EMU_DEFAULT_MEMORY (16ull << 30)
#define EMU_DEFAULT_SHARED (227u << 10)
#define EMU_DEFAULT_LOCAL (512u << 10)
#define EMU_MAX_WORKERS 1024u

int kemu_device_create(const kemu_device_config *cfg, kemu_device **out, kemu_error *err)
{
    if (!out)
        return emu_error_set(err, KEMU_EINVAL, "NULL output pointer");
    *out = NULL;
    kemu_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    if (cfg)
        dev->cfg = *cfg;
    if (dev->cfg.workers == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        dev->cfg.workers = n > 0 ? (unsigned)n : 1;
    }
    if (dev->cfg.workers > EMU_MAX_WORKERS)
        dev->cfg.workers = EMU_MAX_WORKERS;
    if (dev->cfg.memory_bytes == 0)
        dev->cfg.memory_bytes = EMU_DEFAULT_MEMORY;
    if (dev->cfg.max_shared_bytes == 0)
        dev->cfg.max_shared_bytes = EMU_DEFAULT_SHARED;
    if (dev->cfg.max_local_bytes == 0)
        dev->cfg.max_local_bytes = EMU_DEFAULT_LOCAL;
    if (emu_memory_init(&dev->mem, dev->cfg.memory_bytes) != 0) {
        free(dev);
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    }
    int rc = emu_pool_start(&dev->pool, dev->cfg.workers - 1, err);
    if (rc) {
        emu_memory_destroy(&dev->mem);
        free(dev);
        return rc;
    }
    pthread_mutex_init(&dev->modules_lock, NULL);
    *out = dev;
    return 0;
}

void kemu_device_destroy(kemu_device *dev)
{
    if (!dev)
        return;
    while (dev->modules)
        kemu_module_unload(dev->modules);
    emu_pool_stop(&dev->pool);
    emu_memory_destroy(&dev->mem);
    pthread_mutex_destroy(&dev->modules_lock);
    free(dev);
}

unsigned kemu_device_workers(const kemu_device *dev)
{
    return dev ? dev->cfg.workers : 0;
}

void kemu_mem_span(uint64_t *base, uint64_t *size)
{
    if (base)
        *base = EMU_GLOBAL_BASE;
    if (size)
        *size = EMU_GLOBAL_SPAN;
}

int kemu_mem_alloc(kemu_device *dev, size_t bytes, kemu_devptr *out, kemu_error *err)
{
    return kemu_mem_alloc_in(dev, NULL, bytes, out, err);
}

int kemu_mem_alloc_in(kemu_device *dev, const kemu_range *in, size_t bytes, kemu_devptr *out,
                      kemu_error *err)
{
    if (!dev || !out)
        return emu_error_set(err, KEMU_EINVAL, "NULL argument");
    *out = 0;
    emu_alloc *a;
    int rc = emu_memory_alloc(&dev->mem, bytes, false, in, &a, err);
    if (rc == 0)
        *out = a->base;
    return rc;
}

int kemu_mem_free(kemu_device *dev, kemu_devptr ptr, kemu_error *err)
{
    if (!dev)
        return emu_error_set(err, KEMU_EINVAL, "NULL device");
    return emu_memory_free(&dev->mem, ptr, false, err);
}

int kemu_host_map(kemu_device *dev, const kemu_range *in, void *host, size_t bytes,
                  kemu_devptr *out, kemu_error *err)
{
    if (!dev || !out)
        return emu_error_set(err, KEMU_EINVAL, "NULL argument");
    *out = 0;
    emu_alloc *a;
    int rc = emu_memory_map_host(&dev->mem, host, bytes, in, &a, err);
    if (rc == 0)
        *out = a->base;
    return rc;
}

int kemu_host_unmap(kemu_device *dev, kemu_devptr ptr, kemu_error *err)
{
    if (!dev)
        return emu_error_set(err, KEMU_EINVAL, "NULL device");
    return emu_memory_unmap_host(&dev->mem, ptr, err);
}

void kemu_mem_info(kemu_device *dev, uint64_t *free_bytes, uint64_t *total_bytes)
{
    pthread_mutex_lock(&dev->mem.lock);
    if (free_bytes)
        *free_bytes = dev->mem.limit - dev->mem.used;
    if (total_bytes)
        *total_bytes = dev->mem.limit;
    pthread_mutex_unlock(&dev->mem.lock);
}

/* Runs fn on the host range of [ptr, ptr + bytes), which must lie in one allocation. */
static int with_range(kemu_device *dev, kemu_devptr ptr, size_t bytes, const char *what,
                      kemu_error *err, emu_memmap **map_out, uint8_t **host)
{
    if (!dev)
        return emu_error_set(err, KEMU_EINVAL, "NULL device");
    emu_memmap *map = emu_memory_snapshot(&dev->mem);
    emu_alloc *a = emu_memmap_find(map, ptr, bytes ? bytes : 1);
    if (!a) {
        emu_memmap_release(map);
        return emu_error_set(err, KEMU_EINVAL,
                             "%s: [0x%llx, +%zu) is not inside one allocation", what,
                             (unsigned long long)ptr, bytes);
    }
    *map_out = map;
    *host = a->host + (ptr - a->base);
    return 0;
}

int kemu_mem_range(kemu_device *dev, kemu_devptr ptr, kemu_devptr *base, size_t *bytes,
                   kemu_error *err)
{
    if (!dev)
        return emu_error_set(err, KEMU_EINVAL, "NULL device");
    emu_memmap *map = emu_memory_snapshot(&dev->mem);
    const emu_alloc *a = emu_memmap_find(map, ptr, 1);
    int rc = 0;
    if (!a) {
        rc = emu_error_set(err, KEMU_EINVAL, "0x%llx is not device memory",
                           (unsigned long long)ptr);
    } else {
        if (base)
            *base = a->base;
        if (bytes)
            *bytes = a->bytes;
    }
    emu_memmap_release(map);
    return rc;
}

/* A copy between host memory and [ptr, ptr + bytes) of device memory. */
static int copy_host(kemu_device *dev, kemu_devptr ptr, void *host, size_t bytes,
                     bool to_device, kemu_error *err)
{
    emu_memmap *map = NULL;
    uint8_t *dev_host = NULL;
    if (!host && bytes)
        return emu_error_set(err, KEMU_EINVAL, "NULL host pointer");
    int rc = with_range(dev, ptr, bytes, to_device ? "copy to device" : "copy from device",
                        err, &map, &dev_host);
    if (rc)
        return rc;
    if (bytes)
        memcpy(to_device ? dev_host : host, to_device ? host : dev_host, bytes);
    emu_memmap_release(map);
    return 0;
}

int kemu_memcpy_htod(kemu_device *dev, kemu_devptr dst, const void *src, size_t bytes,
                     kemu_error *err)
{
    return copy_host(dev, dst, (void *)src, bytes, true, err);
}

int kemu_memcpy_dtoh(kemu_device *dev, void *dst, kemu_devptr src, size_t bytes,
                     kemu_error *err)
{
    return copy_host(dev, src, dst, bytes, false, err);
}

int kemu_memcpy_dtod(kemu_device *dev, kemu_devptr dst, kemu_devptr src, size_t bytes,
                     kemu_error *err)
{
    emu_memmap *m1 = NULL, *m2 = NULL;
    uint8_t *h1 = NULL, *h2 = NULL;
    int rc = with_range(dev, dst, bytes, "device copy destination", err, &m1, &h1);
    if (rc)
        return rc;
    rc = with_range(dev, src, bytes, "device copy source", err, &m2, &h2);
    if (rc == 0) {
        if (bytes)
            memmove(h1, h2, bytes);
        emu_memmap_release(m2);
    }
    emu_memmap_release(m1);
    return rc;
}

int kemu_memset(kemu_device *dev, kemu_devptr dst, uint32_t value, unsigned elem_bytes,
                size_t count, kemu_error *err)
{
    if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)
        return emu_error_set(err, KEMU_EINVAL, "memset element of %u bytes", elem_bytes);
    if (dst % elem_bytes)
        return emu_error_set(err, KEMU_EINVAL, "memset destination 0x%llx not aligned to %u",
                             (unsigned long long)dst, elem_bytes);
    if (count > SIZE_MAX / elem_bytes)
        return emu_error_set(err, KEMU_EINVAL, "memset of %zu elements", count);
    emu_memmap *map = NULL;
    uint8_t *host = NULL;
    int rc = with_range(dev, dst, count * elem_bytes, "memset", err, &map, &host);
    if (rc)
        return rc;
    if (elem_bytes == 1) {
        memset(host, (int)(value & 0xffu), count);
    } else {
        for (size_t i = 0; i < count; i++)
            memcpy(host + i * elem_bytes, &value, elem_bytes);
    }
    emu_memmap_release(map);
    return 0;
}
