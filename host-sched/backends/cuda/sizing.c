/* Slice sizes and measurement arithmetic (see sizing.h). */
#include "sizing.h"

#include <math.h>
#include <stdlib.h>

#define MAX_SLICE_BLOCKS ((uint64_t)1 << 40)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double kcuda_median(double *v, size_t n)
{
    if (!v || !n)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_double);
    return v[n / 2];
}

uint64_t kcuda_profile_blocks(uint64_t total, unsigned sms, unsigned blocks_per_sm)
{
    uint64_t wave = (uint64_t)(sms ? sms : 1) * (blocks_per_sm ? blocks_per_sm : 1);
    uint64_t n = total < wave ? total : wave;
    return n ? n : 1;
}

uint64_t kcuda_min_slice(double overhead_ns, uint64_t blocks, double duration_ns,
                         unsigned sms, double p)
{
    if (!(overhead_ns > 0) || !blocks || !(duration_ns > 0) || !sms || !(p > 0) ||
        !isfinite(overhead_ns) || !isfinite(duration_ns) || !isfinite(p))
        return 0;
    double rate = (double)blocks / duration_ns;
    double waves = ceil(overhead_ns * rate / p / sms);
    if (waves < 1)
        waves = 1;
    if (waves * sms >= (double)MAX_SLICE_BLOCKS)
        return MAX_SLICE_BLOCKS;
    return (uint64_t)waves * sms;
}

unsigned kcuda_trial_slices(double alone_bps, uint64_t size, double target_ns,
                            unsigned max_slices)
{
    if (max_slices < 2)
        max_slices = 2;
    if (!(alone_bps > 0) || !size || !(target_ns > 0) || !isfinite(alone_bps * target_ns))
        return 2;
    double n = ceil(alone_bps * target_ns * 1e-9 / (double)size);
    return n < 2 ? 2 : n > max_slices ? max_slices : (unsigned)n;
}

static int run_valid(const kcuda_trial_run *r)
{
    if (!r->n || !r->blocks || !r->end_ns)
        return 0;
    for (size_t i = 0; i < r->n; i++)
        if (!(r->end_ns[i] > 0) || !isfinite(r->end_ns[i]) || !r->blocks[i])
            return 0;
    return 1;
}

int kcuda_trial_rates(const kcuda_trial_run run[2], double bps[2])
{
    if (!run || !bps || !run_valid(&run[0]) || !run_valid(&run[1]))
        return -1;
    double t0 = run[0].end_ns[run[0].n - 1], t1 = run[1].end_ns[run[1].n - 1];
    double common = t0 < t1 ? t0 : t1;
    for (int k = 0; k < 2; k++) {
        uint64_t blocks = run[k].blocks[0];
        double t = run[k].end_ns[0];
        for (size_t i = 1; i < run[k].n && run[k].end_ns[i] <= common; i++) {
            blocks += run[k].blocks[i];
            t = run[k].end_ns[i];
        }
        bps[k] = (double)blocks / t * 1e9;
    }
    return 0;
}
