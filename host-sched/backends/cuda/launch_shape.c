/* Launch geometry: whole kernels and slices (see launch_shape.h). */
#include "launch_shape.h"

/* The slicer's arithmetic is 32-bit: bigger grids run whole (kernelet/ptx.h). */
#define SLICEABLE_BLOCKS (1ull << 32)

static int check_block(const kbackend_slice *s, unsigned fn_max_threads, const kcuda_limits *lim,
                       kbackend_error *err)
{
    uint64_t threads = 1;
    for (int i = 0; i < 3; i++) {
        if (!s->block[i] || s->block[i] > lim->max_block[i])
            return kbackend_fail(err, KBACKEND_EINVAL, "block dimension %d is %u (limit %u)", i,
                              s->block[i], lim->max_block[i]);
        threads *= s->block[i];
    }
    unsigned limit = lim->max_threads_per_block;
    if (fn_max_threads && fn_max_threads < limit)
        limit = fn_max_threads;
    if (threads > limit)
        return kbackend_fail(err, KBACKEND_EINVAL, "%llu threads per block (limit %u)",
                          (unsigned long long)threads, limit);
    return 0;
}

/* max NULL: only non-empty (a sliced kernel's grid is never launched as it is). */
static int check_grid(const unsigned grid[3], const unsigned *max, kbackend_error *err)
{
    for (int i = 0; i < 3; i++)
        if (!grid[i] || (max && grid[i] > max[i]))
            return kbackend_fail(err, KBACKEND_EINVAL, "grid dimension %d is %u (limit %u)", i,
                              grid[i], max ? max[i] : UINT32_MAX);
    return 0;
}

static int slice_shape(const kbackend_slice *s, const kcuda_limits *lim, kcuda_launch_shape *out,
                       kbackend_error *err)
{
    uint64_t total = kbackend_grid_blocks(s->grid);
    if (total >= SLICEABLE_BLOCKS)
        return kbackend_fail(err, KBACKEND_EINVAL, "a grid of %llu blocks cannot be sliced",
                          (unsigned long long)total);
    if (!s->count || s->first >= total || s->count > total - s->first)
        return kbackend_fail(err, KBACKEND_EINVAL, "slice [%llu, +%llu) outside the grid's %llu blocks",
                          (unsigned long long)s->first, (unsigned long long)s->count,
                          (unsigned long long)total);
    if (s->count > lim->max_grid[0])
        return kbackend_fail(err, KBACKEND_EINVAL, "slice of %llu blocks (limit %u)",
                          (unsigned long long)s->count, lim->max_grid[0]);
    out->grid[0] = (unsigned)s->count;
    out->grid[1] = out->grid[2] = 1;
    out->extra[0] = (uint32_t)s->first;
    for (int i = 0; i < 3; i++)
        out->extra[i + 1] = s->grid[i];
    return 0;
}

int kcuda_launch_shape_of(const kbackend_slice *s, int fn_sliced, unsigned fn_max_threads,
                          const kcuda_limits *lim, kcuda_launch_shape *out, kbackend_error *err)
{
    if (!s || !lim || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if (s->lane >= lim->lanes)
        return kbackend_fail(err, KBACKEND_EINVAL, "lane %u (the backend has %u)", s->lane, lim->lanes);
    if (!s->sliced != !fn_sliced)
        return kbackend_fail(err, KBACKEND_EINVAL, s->sliced
                          ? "a slice needs the sliced variant (\"<entry>" KBACKEND_SLICE_SUFFIX "\")"
                          : "the sliced variant runs only slices");
    *out = (kcuda_launch_shape){.sliced = s->sliced != 0};
    int rc = check_block(s, fn_max_threads, lim, err);
    if (!rc)
        rc = check_grid(s->grid, s->sliced ? NULL : lim->max_grid, err);
    if (rc)
        return rc;
    for (int i = 0; i < 3; i++)
        out->block[i] = s->block[i];
    if (s->sliced)
        return slice_shape(s, lim, out, err);
    if (s->first != 0 || s->count != kbackend_grid_blocks(s->grid))
        return kbackend_fail(err, KBACKEND_EINVAL, "a whole launch runs blocks [0, %llu), not "
                          "[%llu, +%llu)", (unsigned long long)kbackend_grid_blocks(s->grid),
                          (unsigned long long)s->first, (unsigned long long)s->count);
    for (int i = 0; i < 3; i++)
        out->grid[i] = s->grid[i];
    return 0;
}
