/* Device allocations of the CUDA backend (plain C, no Driver API), on the range table.
 *
 * The backend keeps every allocation it made, sorted by address, so that it can refuse a
 * free of something it never allocated and a copy or memset that leaves its allocation
 * before the driver sees them (executor.h: "unknown device pointer" is KBACKEND_EINVAL).
 */
#ifndef KERNELET_CUDA_ALLOC_TABLE_H
#define KERNELET_CUDA_ALLOC_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"
#include "kernelet/range_table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kcuda_alloc_table {
    krange_table ranges;        /* bare kranges, never overlapping */
    uint64_t in_use;            /* sum of sizes */
} kcuda_alloc_table;

/* A zeroed table is empty and valid; kcuda_alloc_table_clear frees its storage. */
void kcuda_alloc_table_clear(kcuda_alloc_table *t);

/* Records [addr, addr + size); KBACKEND_EINVAL when empty, wrapping or overlapping another. */
int kcuda_alloc_add(kcuda_alloc_table *t, uint64_t addr, uint64_t size, kbackend_error *err);

/* Forgets the allocation starting at addr (its size into *size, may be NULL);
 * KBACKEND_EINVAL when no allocation starts there. */
int kcuda_alloc_remove(kcuda_alloc_table *t, uint64_t addr, uint64_t *size, kbackend_error *err);

/* 1 when [addr, addr + bytes) lies inside one allocation (bytes >= 1), else 0. */
int kcuda_alloc_contains(const kcuda_alloc_table *t, uint64_t addr, uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif
