/* Steady state pi of a row-stochastic matrix P: pi P = pi, sum(pi) = 1.
 *
 * GTH (Grassmann, Taksar, Heyman 1985) eliminates states from the last one down, like
 * Gaussian elimination on I - P, but takes each pivot as the sum of the remaining row's
 * off-diagonal mass instead of 1 - P_nn, so it never subtracts and loses no precision even
 * when the chain nearly decouples. The LU path solves (P^T - I) pi = 0 with the last
 * equation replaced by sum(pi) = 1 through GSL. The power path iterates the lazy chain
 * (I + P)/2 (same pi, aperiodic) until the L1 change of one step is below tol. */
#include <math.h>
#include <string.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_permutation.h>

#include "model_internal.h"

static int normalise(kmodel_ctx *ctx, double *pi, size_t N)
{
    double sum = 0;
    for (size_t i = 0; i < N; i++) {
        if (pi[i] < 0)  /* round-off of a direct solve; GTH never produces it */
            pi[i] = 0;
        sum += pi[i];
    }
    if (!(sum > 0) || !isfinite(sum))
        return kmodel_fail(ctx, KMODEL_ESINGULAR, "steady state has no mass");
    for (size_t i = 0; i < N; i++)
        pi[i] /= sum;
    return KMODEL_OK;
}

/* The O(N^3) part of GTH. On x86-64 with GCC it is also built for AVX2 and picked at
 * load time (the model runs on whatever host kerneletd runs on). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static int gth_eliminate(double *restrict P, size_t N)
{
    for (size_t n = N - 1; n > 0; n--) {
        const double *restrict rown = P + n * N;
        double s = 0;
        for (size_t j = 0; j < n; j++)
            s += rown[j];
        if (!(s > 0))
            return (int)n;
        double inv = 1.0 / s;
        size_t i = 0;
        /* two rows at a time: each load of row n serves both */
        for (; i + 1 < n; i += 2) {
            double *restrict ra = P + i * N, *restrict rb = ra + N;
            double fa = ra[n] * inv, fb = rb[n] * inv;
            ra[n] = fa;
            rb[n] = fb;
            for (size_t j = 0; j < n; j++) {
                double v = rown[j];
                ra[j] += fa * v;
                rb[j] += fb * v;
            }
        }
        for (; i < n; i++) {
            double *restrict rowi = P + i * N;
            double f = rowi[n] * inv;
            rowi[n] = f;
            for (size_t j = 0; j < n; j++)
                rowi[j] += f * rown[j];
        }
    }
    return 0;
}

static int solve_gth(kmodel_ctx *ctx, size_t N)
{
    double *P = ctx->P, *pi = ctx->pi;
    int stuck = gth_eliminate(P, N);
    if (stuck)
        return kmodel_fail(ctx, KMODEL_ESINGULAR,
                           "state %d cannot reach lower states (chain is reducible)", stuck);
    pi[0] = 1.0;
    for (size_t n = 1; n < N; n++) {
        double v = 0;
        for (size_t i = 0; i < n; i++)
            v += pi[i] * P[i * N + n];
        pi[n] = v;
    }
    return normalise(ctx, pi, N);
}

static int solve_lu(kmodel_ctx *ctx, size_t N)
{
    double *A = ctx->P;
    /* A = P^T - I in place, then the last row becomes the normalisation sum(pi) = 1. */
    for (size_t i = 0; i < N; i++) {
        for (size_t j = i + 1; j < N; j++) {
            double t = A[i * N + j];
            A[i * N + j] = A[j * N + i];
            A[j * N + i] = t;
        }
        A[i * N + i] -= 1.0;
    }
    for (size_t j = 0; j < N; j++)
        A[(N - 1) * N + j] = 1.0;
    gsl_matrix_view m = gsl_matrix_view_array(A, N, N);
    gsl_permutation perm = {N, ctx->perm};
    int signum;
    if (gsl_linalg_LU_decomp(&m.matrix, &perm, &signum))
        return kmodel_fail(ctx, KMODEL_ESINGULAR, "LU decomposition failed");
    /* GSL's solve reports a zero pivot through its global error handler; check first. */
    for (size_t i = 0; i < N; i++)
        if (!(fabs(A[i * N + i]) > 1e-300))
            return kmodel_fail(ctx, KMODEL_ESINGULAR, "singular system (pivot %zu)", i);
    memset(ctx->pi2, 0, N * sizeof(double));
    ctx->pi2[N - 1] = 1.0;
    gsl_vector_view b = gsl_vector_view_array(ctx->pi2, N);
    gsl_vector_view x = gsl_vector_view_array(ctx->pi, N);
    if (gsl_linalg_LU_solve(&m.matrix, &perm, &b.vector, &x.vector))
        return kmodel_fail(ctx, KMODEL_ESINGULAR, "LU solve failed");
    return normalise(ctx, ctx->pi, N);
}

static int solve_power(kmodel_ctx *ctx, size_t N)
{
    const double *P = ctx->P;
    double *pi = ctx->pi, *next = ctx->pi2;
    for (size_t i = 0; i < N; i++)
        pi[i] = 1.0 / (double)N;
    for (unsigned it = 0; it < ctx->opt.max_iter; it++) {
        for (size_t j = 0; j < N; j++)
            next[j] = 0.5 * pi[j];
        for (size_t i = 0; i < N; i++) {
            double w = 0.5 * pi[i];
            if (w == 0)
                continue;
            const double *row = P + i * N;
            for (size_t j = 0; j < N; j++)
                next[j] += w * row[j];
        }
        double change = 0, sum = 0;
        for (size_t j = 0; j < N; j++) {
            change += fabs(next[j] - pi[j]);
            sum += next[j];
        }
        for (size_t j = 0; j < N; j++)
            pi[j] = next[j] / sum;
        if (change < ctx->opt.tol)
            return normalise(ctx, pi, N);
    }
    return kmodel_fail(ctx, KMODEL_ENOCONV, "power iteration did not reach tol %g in %u steps",
                       ctx->opt.tol, ctx->opt.max_iter);
}

int kmodel_solve(kmodel_ctx *ctx, size_t N)
{
    if (N == 1) {
        ctx->pi[0] = 1.0;
        return KMODEL_OK;
    }
    switch (ctx->opt.solver) {
    case KMODEL_SOLVER_GTH:
        return solve_gth(ctx, N);
    case KMODEL_SOLVER_LU:
        return solve_lu(ctx, N);
    case KMODEL_SOLVER_POWER:
        return solve_power(ctx, N);
    case KMODEL_SOLVER_AUTO:
    default:
        /* GTH: as fast as LU here and more robust; iteration is far slower on these
         * dense, slowly mixing chains (docs/perf/model.md). */
        return solve_gth(ctx, N);
    }
}
