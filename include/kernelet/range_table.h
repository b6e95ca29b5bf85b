/* A table of address ranges: which allocation an address falls in (library kernelet-common,
 * common/range_table.c). Used by every component that checks addresses against what it
 * handed out: the scheduler's per-tenant memory, the protocol server's per-connection
 * memory, the cuda and sim backends' allocations, and the guest libcuda's device ranges.
 *
 * Entries are the caller's structs, all of one size, whose first member is a krange; the
 * table keeps them sorted by base in one array, so lookups are binary searches and a
 * pointer to an entry stays valid only until the next insert or removal. Entries are not
 * checked for overlap on insert (krange_overlap tells, for callers that refuse it); the
 * lookups assume that ranges do not overlap, except that the same range may be present
 * more than once (one variable seen through two modules).
 *
 * No locking and no GLib: it is linked into the guest's libcuda.so.1 as well. */
#ifndef KERNELET_RANGE_TABLE_H
#define KERNELET_RANGE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct krange {
    uint64_t base, size;
} krange;

typedef struct krange_table {
    unsigned char *entries;     /* n entries of entry_size bytes, sorted by base */
    size_t n, cap, entry_size;
} krange_table;

/* An empty table of entries of entry_size bytes (>= sizeof(krange), a krange first). */
#define KRANGE_TABLE_INIT(entry_size) {NULL, 0, 0, (entry_size)}
void krange_table_init(krange_table *t, size_t entry_size);
/* Frees the storage; the table is empty and usable again. */
void krange_table_clear(krange_table *t);

static inline size_t krange_count(const krange_table *t)
{
    return t->n;
}

/* Entry i (0 <= i < count), in order of base. */
static inline void *krange_at(const krange_table *t, size_t i)
{
    return t->entries + i * t->entry_size;
}

/* How many entries start at or before addr. */
size_t krange_upper(const krange_table *t, uint64_t addr);

/* The entry that holds all of [addr, addr + bytes), or NULL. bytes 0 asks for the entry
 * holding addr. */
void *krange_find(const krange_table *t, uint64_t addr, uint64_t bytes);

/* The entry starting exactly at base (the last one, when the range is there twice), or
 * NULL. */
void *krange_exact(const krange_table *t, uint64_t base);

/* An entry that shares an address with [addr, addr + bytes) (bytes >= 1), or NULL. */
void *krange_overlap(const krange_table *t, uint64_t addr, uint64_t bytes);

/* Inserts [base, base + size) after any entry of the same base; the entry comes back with
 * everything after its krange zeroed, for the caller to fill. NULL when out of memory. */
void *krange_insert(krange_table *t, uint64_t base, uint64_t size);

/* Removes entry (a pointer into the table); the entries after it move down one. */
void krange_remove(krange_table *t, void *entry);

/* The lowest a in [lo, hi), a multiple of align (a power of two; 0 or 1: any), with
 * [a, a + span) inside [lo, hi) and sharing no address with an entry (the first fit of an
 * allocator over the table): 0 with it in *out, or -1 when nothing fits. */
int krange_first_fit(const krange_table *t, uint64_t lo, uint64_t hi, uint64_t span,
                     uint64_t align, uint64_t *out);

/* Removes every entry for which drop(entry, user) is nonzero, keeping the others' order;
 * how many it removed. */
size_t krange_remove_if(krange_table *t, int (*drop)(const void *entry, void *user),
                        void *user);

#ifdef __cplusplus
}
#endif

#endif
