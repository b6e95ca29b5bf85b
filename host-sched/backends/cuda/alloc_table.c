/* Device allocations, sorted by address (see alloc_table.h). */
#include "alloc_table.h"

#include <stdlib.h>
#include <string.h>

void kcuda_alloc_table_clear(kcuda_alloc_table *t)
{
    if (!t)
        return;
    free(t->a);
    memset(t, 0, sizeof(*t));
}

/* Number of allocations starting at or before addr. */
static size_t upper_bound(const kcuda_alloc_table *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->a[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int kcuda_alloc_add(kcuda_alloc_table *t, uint64_t addr, uint64_t size, kexec_error *err)
{
    if (!t || !size || !addr || addr > UINT64_MAX - size)
        return kexec_fail(err, KEXEC_EINVAL, "allocation [0x%llx, +%llu) is not valid",
                          (unsigned long long)addr, (unsigned long long)size);
    size_t i = upper_bound(t, addr);
    if ((i > 0 && t->a[i - 1].addr + t->a[i - 1].size > addr) ||
        (i < t->n && t->a[i].addr < addr + size))
        return kexec_fail(err, KEXEC_EINVAL, "allocation at 0x%llx overlaps another",
                          (unsigned long long)addr);
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        kcuda_alloc *grown = realloc(t->a, cap * sizeof(*grown));
        if (!grown)
            return kexec_fail(err, KEXEC_ENOMEM, "out of host memory");
        t->a = grown;
        t->cap = cap;
    }
    memmove(&t->a[i + 1], &t->a[i], (t->n - i) * sizeof(*t->a));
    t->a[i] = (kcuda_alloc){.addr = addr, .size = size};
    t->n++;
    t->in_use += size;
    return 0;
}

int kcuda_alloc_remove(kcuda_alloc_table *t, uint64_t addr, uint64_t *size, kexec_error *err)
{
    size_t i = t ? upper_bound(t, addr) : 0;
    if (!i || t->a[i - 1].addr != addr)
        return kexec_fail(err, KEXEC_EINVAL, "0x%llx is not an allocation",
                          (unsigned long long)addr);
    i--;
    if (size)
        *size = t->a[i].size;
    t->in_use -= t->a[i].size;
    memmove(&t->a[i], &t->a[i + 1], (t->n - i - 1) * sizeof(*t->a));
    t->n--;
    return 0;
}

int kcuda_alloc_contains(const kcuda_alloc_table *t, uint64_t addr, uint64_t bytes)
{
    size_t i = t && bytes ? upper_bound(t, addr) : 0;
    if (!i)
        return 0;
    const kcuda_alloc *a = &t->a[i - 1];
    uint64_t off = addr - a->addr;
    return off < a->size && bytes <= a->size - off;
}
