/* The Markov chain of one SM running a mix of kernels (docs/MODEL.md, "The chain").
 *
 * A state is, per kernel, the number of idle units (two-state warps) or the pair (idle on a
 * coalesced access, idle on an uncoalesced access) (three-state warps). One step is a round:
 * every ready unit issues once (g warp instructions) and then goes idle with probability
 * rm; every idle unit comes back with probability min(1, R / L), R the round's length in
 * cycles and L the latency of its kind of access in this state. Kernels move independently
 * given the state, so a row of the matrix is the outer product of per-kernel distributions.
 */
#include <math.h>
#include <string.h>

#include "model_internal.h"

/* x^n by squaring: exact enough and much cheaper than pow() for the small n used here. */
static double ipow(double x, unsigned n)
{
    double r = 1.0;
    while (n) {
        if (n & 1)
            r *= x;
        x *= x;
        n >>= 1;
    }
    return r;
}

void kmodel_binomial(unsigned n, double p, const double *recip, double *out)
{
    /* Multiplicative recurrence from the likelier end: with q = min(p, 1-p) <= 1/2 the
     * starting term (1-q)^n >= 2^-n never underflows for the sizes used here. */
    int flip = p > 0.5;
    double q = flip ? 1.0 - p : p;
    double t = ipow(1.0 - q, n);
    double ratio = q < 1.0 ? q / (1.0 - q) : 0.0;
    if (!flip) {
        for (unsigned k = 0; k <= n; k++) {
            out[k] = t;
            t *= (double)(n - k) * ratio * recip[k + 1];
        }
    } else {
        for (unsigned k = 0; k <= n; k++) {
            out[n - k] = t;
            t *= (double)(n - k) * ratio * recip[k + 1];
        }
    }
}

/* Local index of (a coalesced idle, b uncoalesced idle), a + b <= n. */
static size_t tri_index(unsigned n, unsigned a, unsigned b)
{
    return (size_t)a * (n + 1) - (size_t)a * (a - (a > 0)) / 2 + b;
}

static int setup_tables(kmodel_ctx *ctx, kchain *ch)
{
    size_t nloc_sum = 0, pmf_sum = 0;
    for (size_t k = 0; k < ch->nk; k++) {
        size_t m = ch->k[k].n + 1;
        nloc_sum += ch->k[k].nloc;
        pmf_sum += m * m * (ch->k[k].three ? 2 : 1);
    }
    if (kmodel_grow((void **)&ctx->loc_buf, &ctx->loc_cap, 2 * nloc_sum, sizeof(unsigned)) ||
        kmodel_grow((void **)&ctx->pmf_buf, &ctx->pmf_cap, pmf_sum, sizeof(double)))
        return kmodel_fail(ctx, KMODEL_ENOMEM, "cannot allocate chain tables");
    unsigned *lp = ctx->loc_buf;
    double *pp = ctx->pmf_buf;
    for (size_t k = 0; k < ch->nk; k++) {
        kchain_kernel *kk = &ch->k[k];
        unsigned n = kk->n;
        kk->ic = lp;
        kk->iu = lp + kk->nloc;
        lp += 2 * kk->nloc;
        if (kk->three) {
            for (unsigned a = 0; a <= n; a++)
                for (unsigned b = 0; a + b <= n; b++) {
                    size_t i = tri_index(n, a, b);
                    kk->ic[i] = a;
                    kk->iu[i] = b;
                }
        } else {
            for (unsigned i = 0; i <= n; i++) {
                kk->ic[i] = kk->u >= 1.0 ? 0 : i;
                kk->iu[i] = kk->u >= 1.0 ? i : 0;
            }
        }
        kk->rm_pmf = pp;
        pp += (size_t)(n + 1) * (n + 1);
        for (unsigned r = 0; r <= n; r++)
            kmodel_binomial(r, kk->rm, ctx->recip, kk->rm_pmf + (size_t)r * (n + 1));
        kk->u_pmf = NULL;
        if (kk->three) {
            kk->u_pmf = pp;
            pp += (size_t)(n + 1) * (n + 1);
            for (unsigned y = 0; y <= n; y++)
                kmodel_binomial(y, kk->u, ctx->recip, kk->u_pmf + (size_t)y * (n + 1));
        }
    }
    return KMODEL_OK;
}

int kchain_setup(kmodel_ctx *ctx, kchain *ch, size_t nk, const unsigned n[], const double g[],
                 const double rm[], const double u[])
{
    memset(ch, 0, sizeof(*ch));
    ch->nk = nk;
    ch->recip = ctx->recip;
    ch->bytes_c = KMODEL_COALESCED_BYTES;
    ch->bytes_u = KMODEL_UNCOALESCED_TXNS * ctx->gpu.txn_bytes;
    if (ch->bytes_u < ch->bytes_c)
        ch->bytes_u = ch->bytes_c;
    double N = 1;
    for (size_t k = 0; k < nk; k++) {
        kchain_kernel *kk = &ch->k[k];
        if (n[k] == 0 || n[k] > KMODEL_MAX_UNITS)
            return kmodel_fail(ctx, KMODEL_EINVAL, "kernel %zu has %u units (1..%d)", k, n[k],
                               KMODEL_MAX_UNITS);
        kk->n = n[k];
        kk->g = g[k];
        kk->rm = rm[k];
        kk->u = u[k];
        kk->three = u[k] > 0 && u[k] < 1;
        ch->any_u |= u[k] > 0;
        kk->bytes_idle = u[k] >= 1 ? ch->bytes_u : ch->bytes_c;
        kk->extra_idle = u[k] >= 1 ? ch->bytes_u - ch->bytes_c : 0;
        kk->nloc = kk->three ? (size_t)(n[k] + 1) * (n[k] + 2) / 2 : n[k] + 1;
        N *= (double)kk->nloc;
    }
    if (N > (double)ctx->opt.max_states)
        return kmodel_fail(ctx, KMODEL_ETOOBIG,
                           "the chain has %.0f states, more than max_states %zu "
                           "(use block granularity or the virtual SM)", N, ctx->opt.max_states);
    ch->N = (size_t)N;
    size_t stride = 1;
    for (size_t k = nk; k-- > 0;) {
        ch->stride[k] = stride;
        stride *= ch->k[k].nloc;
    }
    return setup_tables(ctx, ch);
}

/* Next-state distribution of a two-state kernel with i idle units, each returning with p. */
static void next_two(const kchain *ch, const kchain_kernel *kk, unsigned i, double p,
                     double *ret, double *dist)
{
    unsigned n = kk->n, r = n - i;
    const double *rmp = kk->rm_pmf + (size_t)r * (n + 1);
    memset(dist, 0, (n + 1) * sizeof(double));
    kmodel_binomial(i, p, ch->recip, ret);
    for (unsigned x = 0; x <= i; x++) {
        double px = ret[x];
        if (px == 0)
            continue;
        double *d = dist + (i - x);
        for (unsigned y = 0; y <= r; y++)
            d[y] += px * rmp[y];
    }
}

/* Next-state distribution of a three-state kernel with a + b idle units. */
static void next_three(const kchain *ch, const kchain_kernel *kk, unsigned a, unsigned b,
                       double pc, double pu, double *ret, double *dist)
{
    unsigned n = kk->n, r = n - a - b;
    double *rc = ret, *ru = ret + n + 1;
    const double *rmp = kk->rm_pmf + (size_t)r * (n + 1);
    memset(dist, 0, kk->nloc * sizeof(double));
    kmodel_binomial(a, pc, ch->recip, rc);
    kmodel_binomial(b, pu, ch->recip, ru);
    for (unsigned xc = 0; xc <= a; xc++) {
        for (unsigned xu = 0; xu <= b; xu++) {
            double pxx = rc[xc] * ru[xu];
            if (pxx == 0)
                continue;
            unsigned a0 = a - xc, b0 = b - xu;
            for (unsigned y = 0; y <= r; y++) {
                double py = pxx * rmp[y];
                if (py == 0)
                    continue;
                const double *up = kk->u_pmf + (size_t)y * (n + 1);
                for (unsigned yu = 0; yu <= y; yu++)
                    dist[tri_index(n, a0 + y - yu, b0 + yu)] += py * up[yu];
            }
        }
    }
}

/* Writes the outer product of the per-kernel distributions into row (length ch->N). */
static void outer_row(const kmodel_ctx *ctx, const kchain *ch, double *row)
{
    if (ch->nk == 1) {
        memcpy(row, ctx->dist[0], ch->N * sizeof(double));
        return;
    }
    if (ch->nk == 2) {
        const double *d0 = ctx->dist[0], *d1 = ctx->dist[1];
        size_t n0 = ch->k[0].nloc, n1 = ch->k[1].nloc;
        for (size_t a = 0; a < n0; a++) {
            double f = d0[a];
            double *out = row + a * n1;
            for (size_t b = 0; b < n1; b++)
                out[b] = f * d1[b];
        }
        return;
    }
    /* General case: expand from the last kernel; row[t] = prod_k dist_k(local_k(t)). */
    size_t len = 1;
    row[0] = 1.0;
    for (size_t k = ch->nk; k-- > 0;) {
        size_t m = ch->k[k].nloc;
        const double *d = ctx->dist[k];
        /* blocks a = m-1..0 of length len; block 0 overwrites the source last */
        for (size_t a = m; a-- > 0;)
            for (size_t j = len; j-- > 0;)
                row[a * len + j] = d[a] * row[j];
        len *= m;
    }
}

int kchain_transitions(kmodel_ctx *ctx, const kchain *ch)
{
    int rc = kmodel_reserve(ctx, ch->N);
    if (rc)
        return rc;
    size_t maxloc = 0, maxn = 0;
    for (size_t k = 0; k < ch->nk; k++) {
        if (ch->k[k].nloc > maxloc)
            maxloc = ch->k[k].nloc;
        if (ch->k[k].n + 1 > maxn)
            maxn = ch->k[k].n + 1;
    }
    if (maxloc > ctx->dist_cap) {
        for (size_t k = 0; k < KMODEL_MAX_KERNELS; k++) {
            size_t cap = ctx->dist_cap;
            if (kmodel_grow((void **)&ctx->dist[k], &cap, maxloc, sizeof(double)))
                return kmodel_fail(ctx, KMODEL_ENOMEM, "cannot allocate distributions");
        }
        ctx->dist_cap = maxloc;
    }
    if (kmodel_grow((void **)&ctx->scratch, &ctx->scratch_cap, 2 * maxn, sizeof(double)))
        return kmodel_fail(ctx, KMODEL_ENOMEM, "cannot allocate scratch");

    const double extra_u = ch->bytes_u - ch->bytes_c;
    for (size_t s = 0; s < ch->N; s++) {
        unsigned loc[KMODEL_MAX_KERNELS];
        double ready = 0, q = 0;
        for (size_t k = 0; k < ch->nk; k++) {
            const kchain_kernel *kk = &ch->k[k];
            loc[k] = (unsigned)((s / ch->stride[k]) % kk->nloc);
            unsigned a = kk->ic[loc[k]], b = kk->iu[loc[k]];
            ready += kk->g * (kk->n - a - b);
            q += kk->g * (a * ch->bytes_c + b * ch->bytes_u);
        }
        double R = ready > 1 ? ready : 1;
        double lc = kmodel_latency_eval(ctx, q);
        double lu = ch->any_u ? kmodel_latency_eval(ctx, q + extra_u) : lc;
        if (!(lc >= 1 && lu >= 1) || !isfinite(lc) || !isfinite(lu))
            return kmodel_fail(ctx, KMODEL_EINVAL,
                               "latency model gave %g cycles for %g bytes (need finite >= 1)",
                               lc, q);
        double pc = R / lc < 1 ? R / lc : 1, pu = R / lu < 1 ? R / lu : 1;
        for (size_t k = 0; k < ch->nk; k++) {
            const kchain_kernel *kk = &ch->k[k];
            if (kk->three)
                next_three(ch, kk, kk->ic[loc[k]], kk->iu[loc[k]], pc, pu, ctx->scratch,
                           ctx->dist[k]);
            else
                next_two(ch, kk, kk->ic[loc[k]] + kk->iu[loc[k]], kk->u >= 1 ? pu : pc,
                         ctx->scratch, ctx->dist[k]);
        }
        outer_row(ctx, ch, ctx->P + s * ch->N);
    }
    return KMODEL_OK;
}

void kchain_ipc(const kchain *ch, const double *pi, double util[], double *idle)
{
    double num[KMODEL_MAX_KERNELS] = {0}, den = 0, idle_cycles = 0;
    for (size_t s = 0; s < ch->N; s++) {
        double ready = 0;
        for (size_t k = 0; k < ch->nk; k++) {
            const kchain_kernel *kk = &ch->k[k];
            unsigned loc = (unsigned)((s / ch->stride[k]) % kk->nloc);
            double rk = kk->g * (kk->n - kk->ic[loc] - kk->iu[loc]);
            num[k] += pi[s] * rk;
            ready += rk;
        }
        double R = ready > 1 ? ready : 1;
        den += pi[s] * R;
        idle_cycles += pi[s] * (R - ready);
    }
    for (size_t k = 0; k < ch->nk; k++)
        util[k] = den > 0 ? num[k] / den : 0;
    if (idle)
        *idle = den > 0 ? idle_cycles / den : 1;
}
