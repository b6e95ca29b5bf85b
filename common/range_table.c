/* The table of address ranges (include/kernelet/range_table.h). */
#include <stdlib.h>
#include <string.h>

#include "kernelet/range_table.h"

void krange_table_init(krange_table *t, size_t entry_size)
{
    *t = (krange_table)KRANGE_TABLE_INIT(entry_size);
}

void krange_table_clear(krange_table *t)
{
    free(t->entries);
    t->entries = NULL;
    t->n = t->cap = 0;
}

static const krange *range_at(const krange_table *t, size_t i)
{
    return (const krange *)(const void *)(t->entries + i * t->entry_size);
}

size_t krange_upper(const krange_table *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (range_at(t, mid)->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void *krange_find(const krange_table *t, uint64_t addr, uint64_t bytes)
{
    size_t i = krange_upper(t, addr);
    if (!i)
        return NULL;
    const krange *r = range_at(t, i - 1);
    uint64_t off = addr - r->base;
    return off < r->size && bytes <= r->size - off ? krange_at(t, i - 1) : NULL;
}

void *krange_exact(const krange_table *t, uint64_t base)
{
    size_t i = krange_upper(t, base);
    return i && range_at(t, i - 1)->base == base ? krange_at(t, i - 1) : NULL;
}

/* Sorted and not overlapping, the ranges' ends are sorted too: only the last range that
 * starts inside [addr, addr + bytes) can reach it. */
void *krange_overlap(const krange_table *t, uint64_t addr, uint64_t bytes)
{
    uint64_t last = bytes && addr + (bytes - 1) >= addr ? addr + (bytes - 1) : UINT64_MAX;
    size_t i = bytes ? krange_upper(t, last) : 0;
    if (!i)
        return NULL;
    const krange *r = range_at(t, i - 1);
    return r->base + r->size > addr ? krange_at(t, i - 1) : NULL;
}

/* Room for one more entry; -1 when out of memory. */
static int reserve_one(krange_table *t)
{
    if (t->n < t->cap)
        return 0;
    size_t cap = t->cap ? 2 * t->cap : 32;
    if (cap > SIZE_MAX / t->entry_size)
        return -1;
    unsigned char *grown = realloc(t->entries, cap * t->entry_size);
    if (!grown)
        return -1;
    t->entries = grown;
    t->cap = cap;
    return 0;
}

void *krange_insert(krange_table *t, uint64_t base, uint64_t size)
{
    if (reserve_one(t))
        return NULL;
    size_t i = krange_upper(t, base), es = t->entry_size;
    unsigned char *e = t->entries + i * es;
    memmove(e + es, e, (t->n - i) * es);
    memset(e, 0, es);
    *(krange *)(void *)e = (krange){.base = base, .size = size};
    t->n++;
    return e;
}

void krange_remove(krange_table *t, void *entry)
{
    unsigned char *e = entry;
    size_t i = (size_t)(e - t->entries) / t->entry_size;
    memmove(e, e + t->entry_size, (t->n - i - 1) * t->entry_size);
    t->n--;
}

size_t krange_remove_if(krange_table *t, int (*drop)(const void *entry, void *user),
                        void *user)
{
    size_t kept = 0, n = t->n;
    for (size_t i = 0; i < n; i++) {
        const void *e = krange_at(t, i);
        if (drop(e, user))
            continue;
        if (kept != i)
            memcpy(krange_at(t, kept), e, t->entry_size);
        kept++;
    }
    t->n = kept;
    return n - kept;
}

/* v rounded up to a multiple of align (a power of two, or 0 / 1), or 0 on overflow. */
static uint64_t align_up(uint64_t v, uint64_t align)
{
    if (align <= 1)
        return v;
    return v > UINT64_MAX - (align - 1) ? 0 : (v + align - 1) & ~(align - 1);
}

int krange_first_fit(const krange_table *t, uint64_t lo, uint64_t hi, uint64_t span,
                     uint64_t align, uint64_t *out)
{
    uint64_t a = align_up(lo, align);
    size_t i = krange_upper(t, lo);
    if (i && range_at(t, i - 1)->base + range_at(t, i - 1)->size > lo)
        a = align_up(range_at(t, i - 1)->base + range_at(t, i - 1)->size, align);
    for (; a >= lo && a < hi; i++) {
        const krange *r = i < t->n && range_at(t, i)->base < hi ? range_at(t, i) : NULL;
        uint64_t next = r ? r->base : hi;
        if (next >= a && next - a >= span) {
            *out = a;
            return 0;
        }
        if (!r)
            return -1;
        if (r->base + r->size > a)
            a = align_up(r->base + r->size, align);
    }
    return -1;
}
