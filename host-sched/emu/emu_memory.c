/* Device memory: allocations in a 2^44-byte range of device addresses.
 *
 * The table of live allocations is an immutable, reference-counted snapshot (emu_memmap)
 * that is replaced on every alloc and free. A launch takes the current snapshot and keeps
 * it (and every allocation in it) alive until it ends, so freeing memory a running kernel
 * uses is safe, and kernels look addresses up without any lock.
 *
 * Addresses grow monotonically with a guard gap between allocations, so off-by-some
 * accesses and stale pointers fault instead of reaching a neighbour. Only when the range
 * is used up does the allocator look for a free gap from the start.
 */
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>

#define EMU_ALLOC_ALIGN 256u
#define EMU_GUARD_BYTES 65536u

static void alloc_release(emu_alloc *a)
{
    if (a && atomic_fetch_sub(&a->refs, 1) == 1) {
        if (!a->external)
            free(a->host);
        free(a);
    }
}

void emu_memmap_release(emu_memmap *map)
{
    if (!map || atomic_fetch_sub(&map->refs, 1) != 1)
        return;
    for (size_t i = 0; i < map->n; i++)
        alloc_release(map->allocs[i]);
    free(map->allocs);
    free(map);
}

static emu_memmap *memmap_new(size_t n)
{
    emu_memmap *map = calloc(1, sizeof *map);
    if (!map)
        return NULL;
    map->allocs = calloc(n ? n : 1, sizeof *map->allocs);
    if (!map->allocs) {
        free(map);
        return NULL;
    }
    atomic_init(&map->refs, 1);
    map->n = n;
    return map;
}

int emu_memory_init(emu_memory *mem, uint64_t limit)
{
    memset(mem, 0, sizeof *mem);
    mem->map = memmap_new(0);
    if (!mem->map)
        return KEMU_ENOMEM;
    pthread_mutex_init(&mem->lock, NULL);
    mem->limit = limit;
    mem->cursor = EMU_GLOBAL_BASE;
    return 0;
}

void emu_memory_destroy(emu_memory *mem)
{
    emu_memmap_release(mem->map);
    mem->map = NULL;
    pthread_mutex_destroy(&mem->lock);
}

emu_memmap *emu_memory_snapshot(emu_memory *mem)
{
    pthread_mutex_lock(&mem->lock);
    emu_memmap *map = mem->map;
    atomic_fetch_add(&map->refs, 1);
    pthread_mutex_unlock(&mem->lock);
    return map;
}

/* Index of the first allocation whose end is above addr. */
static size_t first_ending_above(const emu_memmap *map, uint64_t addr)
{
    size_t lo = 0, hi = map->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const emu_alloc *a = map->allocs[mid];
        if (a->base + a->bytes <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

emu_alloc *emu_memmap_find(const emu_memmap *map, uint64_t addr, uint64_t bytes)
{
    size_t i = first_ending_above(map, addr);
    if (i == map->n)
        return NULL;
    emu_alloc *a = map->allocs[i];
    if (addr < a->base || addr - a->base > a->bytes || bytes > a->bytes - (addr - a->base))
        return NULL;
    return a;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
    return (v + to - 1) / to * to;
}

/* First fit of span bytes in [lo, hi) between live allocations, or 0. */
static uint64_t first_fit(const emu_memmap *map, uint64_t span, uint64_t lo, uint64_t hi)
{
    uint64_t candidate = lo;
    for (size_t i = first_ending_above(map, lo); i <= map->n; i++) {
        uint64_t next = i < map->n && map->allocs[i]->base < hi ? map->allocs[i]->base : hi;
        if (next >= candidate && next - candidate >= span)
            return candidate;
        if (i == map->n || map->allocs[i]->base >= hi)
            return 0;
        const emu_alloc *a = map->allocs[i];
        candidate = round_up(a->base + a->bytes + EMU_GUARD_BYTES, EMU_GUARD_BYTES);
    }
    return 0;
}

/* A free address range of span bytes, guard gaps included, or 0: inside in when given
 * (first fit: a window is one tenant's, whose stale pointers can only reach its own
 * memory), else after the cursor, and from the start once the span is used up. */
static uint64_t find_range(const emu_memory *mem, uint64_t span, const kemu_range *in)
{
    const emu_memmap *map = mem->map;
    const uint64_t end = EMU_GLOBAL_BASE + EMU_GLOBAL_SPAN;
    if (in)
        return first_fit(map, span, in->lo, in->hi);
    if (mem->cursor + span <= end && mem->cursor + span > mem->cursor) {
        size_t i = first_ending_above(map, mem->cursor);
        if (i == map->n || map->allocs[i]->base >= mem->cursor + span)
            return mem->cursor;
    }
    return first_fit(map, span, EMU_GLOBAL_BASE, end);
}

/* Replaces mem->map by a copy with a inserted (or with index `remove` dropped). */
static int memmap_replace(emu_memory *mem, emu_alloc *insert, size_t remove)
{
    const emu_memmap *old = mem->map;
    size_t n = insert ? old->n + 1 : old->n - 1;
    emu_memmap *map = memmap_new(n);
    if (!map)
        return KEMU_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < old->n; i++) {
        if (!insert && i == remove)
            continue;
        if (insert && j == i && old->allocs[i]->base > insert->base)
            map->allocs[j++] = insert;
        map->allocs[j] = old->allocs[i];
        atomic_fetch_add(&map->allocs[j]->refs, 1);
        j++;
    }
    if (insert && j < n)
        map->allocs[j++] = insert;
    emu_memmap_release(mem->map);
    mem->map = map;
    return 0;
}

/* Gives a (host and bytes set) an address: in `in` when given, else anywhere in the
 * device's range; device memory (not external) counts against the limit. */
static int place(emu_memory *mem, emu_alloc *a, const kemu_range *in, kemu_error *err)
{
    const uint64_t bytes = a->bytes;
    const bool counted = !a->external;
    pthread_mutex_lock(&mem->lock);
    int rc = 0;
    uint64_t span = round_up(bytes, EMU_ALLOC_ALIGN) + EMU_GUARD_BYTES;
    uint64_t base = 0;
    if (counted && (mem->used + bytes > mem->limit || mem->used + bytes < mem->used))
        rc = emu_error_set(err, KEMU_ENOMEM,
                           "device memory limit: %llu bytes in use of %llu, %llu asked",
                           (unsigned long long)mem->used, (unsigned long long)mem->limit,
                           (unsigned long long)bytes);
    else if ((base = find_range(mem, span, in)) == 0)
        rc = emu_error_set(err, KEMU_ENOMEM, in ? "address window full" :
                           "device address range exhausted");
    if (rc == 0) {
        a->base = base;
        rc = memmap_replace(mem, a, 0);
        if (rc)
            emu_error_set(err, rc, "out of host memory");
    }
    if (rc == 0) {
        if (counted)
            mem->used += bytes;
        if (!in)
            mem->cursor = round_up(base + span, EMU_GUARD_BYTES);
    }
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

static int check_range(const kemu_range *in, uint64_t bytes, kemu_error *err)
{
    if (in && (in->lo < EMU_GLOBAL_BASE || in->hi > EMU_GLOBAL_BASE + EMU_GLOBAL_SPAN ||
               in->lo >= in->hi))
        return emu_error_set(err, KEMU_EINVAL, "address range [0x%llx, 0x%llx) is not inside "
                             "the device's", (unsigned long long)in->lo,
                             (unsigned long long)in->hi);
    if (bytes == 0 || bytes > EMU_GLOBAL_SPAN / 2)
        return emu_error_set(err, bytes ? KEMU_ENOMEM : KEMU_EINVAL,
                             "cannot allocate %llu bytes of device memory",
                             (unsigned long long)bytes);
    return 0;
}

int emu_memory_alloc(emu_memory *mem, uint64_t bytes, bool module_var, const kemu_range *in,
                     emu_alloc **out, kemu_error *err)
{
    *out = NULL;
    int rc = check_range(in, bytes, err);
    if (rc)
        return rc;
    emu_alloc *a = calloc(1, sizeof *a);
    uint8_t *host = calloc(1, bytes);
    if (!a || !host) {
        free(a);
        free(host);
        return emu_error_set(err, KEMU_ENOMEM, "out of host memory for %llu bytes",
                             (unsigned long long)bytes);
    }
    a->host = host;
    a->bytes = bytes;
    a->module_var = module_var;
    atomic_init(&a->refs, 1);
    if ((rc = place(mem, a, in, err))) {
        free(host);
        free(a);
        return rc;
    }
    *out = a;
    return 0;
}

int emu_memory_map_host(emu_memory *mem, uint8_t *host, uint64_t bytes, const kemu_range *in,
                        emu_alloc **out, kemu_error *err)
{
    *out = NULL;
    int rc = host ? check_range(in, bytes, err)
                  : emu_error_set(err, KEMU_EINVAL, "NULL host memory");
    if (rc)
        return rc;
    emu_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return emu_error_set(err, KEMU_ENOMEM, "out of host memory");
    *a = (emu_alloc){.host = host, .bytes = bytes, .external = true};
    atomic_init(&a->refs, 1);
    if ((rc = place(mem, a, in, err))) {
        free(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* Drops the allocation starting at base if it is of the kind asked for. */
static int remove_at(emu_memory *mem, uint64_t base, bool module_var, bool external,
                     kemu_error *err)
{
    pthread_mutex_lock(&mem->lock);
    const emu_memmap *map = mem->map;
    size_t i = first_ending_above(map, base);
    int rc = 0;
    if (i == map->n || map->allocs[i]->base != base || map->allocs[i]->module_var != module_var ||
        map->allocs[i]->external != external) {
        rc = emu_error_set(err, KEMU_EINVAL, "0x%llx is not the start of an allocation",
                           (unsigned long long)base);
    } else {
        emu_alloc *a = map->allocs[i];
        uint64_t bytes = a->bytes;
        rc = memmap_replace(mem, NULL, i);
        if (rc)
            emu_error_set(err, rc, "out of host memory");
        else if (!external)
            mem->used -= bytes;
    }
    pthread_mutex_unlock(&mem->lock);
    return rc;
}

int emu_memory_free(emu_memory *mem, uint64_t base, bool module_var, kemu_error *err)
{
    return remove_at(mem, base, module_var, false, err);
}

int emu_memory_unmap_host(emu_memory *mem, uint64_t base, kemu_error *err)
{
    return remove_at(mem, base, false, true, err);
}
