/* Arrivals: for each kernel of a workload an independent Poisson process of rate lambda
 * (the paper: every application has the same lambda), n arrivals each, merged in time.
 * Seeded: the same seed gives the same arrivals to every policy. */
#include <math.h>
#include <stdlib.h>

#include "bench.h"

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Exponential with rate lambda, from a uniform in [0, 1). */
static double exponential(uint64_t *state, double lambda)
{
    double u = (double)(splitmix(state) >> 11) / (double)(1ull << 53);
    return -log1p(-u) / lambda;
}

static int by_time(const void *a, const void *b)
{
    const bench_arrival *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    return x->kernel < y->kernel ? -1 : x->kernel > y->kernel;
}

int bench_arrivals(const bench_workload *wl, unsigned n, double lambda_per_ns, uint64_t seed,
                   bench_arrival **out, size_t *count)
{
    if (!wl || !n || !(lambda_per_ns > 0) || !out || !count)
        return -1;
    bench_arrival *a = malloc((size_t)wl->n * n * sizeof(*a));
    if (!a)
        return -1;
    size_t m = 0;
    for (unsigned i = 0; i < wl->n; i++) {
        uint64_t state = seed * 0x100000001b3ull + wl->kernel[i] * 0x9e3779b97f4a7c15ull;
        double t = 0;
        for (unsigned j = 0; j < n; j++) {
            t += exponential(&state, lambda_per_ns);
            a[m++] = (bench_arrival){.t_ns = (uint64_t)llround(t), .kernel = wl->kernel[i]};
        }
    }
    qsort(a, m, sizeof(*a), by_time);
    *out = a;
    *count = m;
    return 0;
}
