/* Device allocations, on the range table (see alloc_table.h). */
#include "alloc_table.h"

#include <string.h>

void kcuda_alloc_table_clear(kcuda_alloc_table *t)
{
    if (!t)
        return;
    krange_table_clear(&t->ranges);
    memset(t, 0, sizeof(*t));
}

int kcuda_alloc_add(kcuda_alloc_table *t, uint64_t addr, uint64_t size, kbackend_error *err)
{
    if (!t || !size || !addr || addr > UINT64_MAX - size)
        return kbackend_fail(err, KBACKEND_EINVAL, "allocation [0x%llx, +%llu) is not valid",
                          (unsigned long long)addr, (unsigned long long)size);
    if (!t->ranges.entry_size)          /* a zeroed table holds bare ranges */
        krange_table_init(&t->ranges, sizeof(krange));
    if (krange_overlap(&t->ranges, addr, size))
        return kbackend_fail(err, KBACKEND_EINVAL, "allocation at 0x%llx overlaps another",
                          (unsigned long long)addr);
    if (!krange_insert(&t->ranges, addr, size))
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    t->in_use += size;
    return 0;
}

int kcuda_alloc_remove(kcuda_alloc_table *t, uint64_t addr, uint64_t *size, kbackend_error *err)
{
    krange *r = t ? krange_exact(&t->ranges, addr) : NULL;
    if (!r)
        return kbackend_fail(err, KBACKEND_EINVAL, "0x%llx is not an allocation",
                          (unsigned long long)addr);
    if (size)
        *size = r->size;
    t->in_use -= r->size;
    krange_remove(&t->ranges, r);
    return 0;
}

int kcuda_alloc_contains(const kcuda_alloc_table *t, uint64_t addr, uint64_t bytes)
{
    return t && bytes && krange_find(&t->ranges, addr, bytes);
}
