/* Internal declarations shared by the files of the model library. */
#ifndef KMODEL_INTERNAL_H
#define KMODEL_INTERNAL_H

#include <stddef.h>

#include "kernelet/model.h"

/* Bytes a coalesced warp-wide memory instruction moves (32 lanes x 4 bytes). */
#define KMODEL_COALESCED_BYTES 128.0
/* Transactions an uncoalesced warp-wide access needs (one per lane). */
#define KMODEL_UNCOALESCED_TXNS 32.0

/* Most units (warps or blocks) one kernel may have on the modelled SM. */
#define KMODEL_MAX_UNITS 256

/* One kernel as a dimension of the chain: n units of g warps each. A unit is a warp
 * (warp granularity) or a thread block's share of one scheduler (block granularity). */
typedef struct kchain_kernel {
    unsigned n;         /* units */
    double g;           /* warps per unit */
    double rm;          /* probability that a ready warp issues a memory instruction */
    double u;           /* fraction of memory instructions that are uncoalesced */
    int three;          /* 1: idle splits into coalesced/uncoalesced (0 < u < 1) */
    double bytes_idle;  /* two-state: bytes one idle warp has in flight */
    double extra_idle;  /* two-state: extra latency bytes of its own access (uncoalesced) */
    size_t nloc;        /* local states: n+1, or (n+1)(n+2)/2 when three */
    unsigned *ic, *iu;  /* local state -> idle counts (coalesced, uncoalesced) */
    double *rm_pmf;     /* (n+1)^2: row r = Binomial(r, rm) */
    double *u_pmf;      /* three only: (n+1)^2: row y = Binomial(y, u), uncoalesced of y */
} kchain_kernel;

typedef struct kchain {
    size_t nk;
    kchain_kernel k[KMODEL_MAX_KERNELS];
    size_t N;                           /* product of nloc */
    size_t stride[KMODEL_MAX_KERNELS];  /* global index = sum local * stride */
    double bytes_c, bytes_u;            /* per idle warp, coalesced / uncoalesced */
    int any_u;                          /* some kernel makes uncoalesced accesses */
    const double *recip;                /* recip[k] = 1 / k, from the context */
} kchain;

struct kmodel_ctx {
    kmodel_gpu gpu;
    char gpu_name[32];
    kmodel_options opt;
    unsigned ns;        /* schedulers the SM is split into (1 without virtual SM) */
    double bw;          /* peak bytes per cycle of the modelled SM (latency.c applies a0) */
    double l0;          /* base latency used */
    char err[256];
    double recip[KMODEL_MAX_UNITS + 2]; /* recip[k] = 1 / k (k >= 1) for the binomials */

    /* work buffers, grown on demand */
    double *P;          /* N x N transition matrix */
    size_t P_cap;
    double *pi, *pi2, *row;
    size_t *perm;
    size_t vec_cap;
    double *dist[KMODEL_MAX_KERNELS];   /* next-state distribution per kernel */
    size_t dist_cap;
    unsigned *loc_buf;                  /* ic/iu tables */
    size_t loc_cap;
    double *pmf_buf;                    /* rm_pmf / mn_pmf tables */
    size_t pmf_cap;
    double *scratch;                    /* binomials of returns */
    size_t scratch_cap;
};

/* Sets ctx->err (printf-style) and returns code. */
int kmodel_fail(kmodel_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Makes sure ctx buffers hold an N-state chain. */
int kmodel_reserve(kmodel_ctx *ctx, size_t N);
/* Grows *buf to hold n elements of size sz. */
int kmodel_grow(void **buf, size_t *cap, size_t n, size_t sz);

/* latency.c: latency in cycles for q outstanding bytes, given the context's model. */
double kmodel_latency_eval(const kmodel_ctx *ctx, double q);

/* chain.c: builds the chain of nk kernels with n units of g warps each. */
int kchain_setup(kmodel_ctx *ctx, kchain *ch, size_t nk, const unsigned n[], const double g[],
                 const double rm[], const double u[]);
/* Fills ctx->P (N x N row-major) with the transition matrix of ch. */
int kchain_transitions(kmodel_ctx *ctx, const kchain *ch);
/* Utilisation of each kernel and idle fraction from the steady state pi. */
void kchain_ipc(const kchain *ch, const double *pi, double util[], double *idle);
/* Binomial(n, p) pmf into out[0..n]; recip[k] = 1 / k for k = 1..n. */
void kmodel_binomial(unsigned n, double p, const double *recip, double *out);

/* solve.c: steady state of the N x N row-stochastic matrix ctx->P into ctx->pi. The
 * matrix is destroyed. */
int kmodel_solve(kmodel_ctx *ctx, size_t N);

/* occupancy.c */
int kmodel_check_kernel(kmodel_ctx *ctx, const kmodel_kernel *k);
/* 1 if the (already validated) kernels fit one SM together, else 0; sets no message. */
int kmodel_fits_quiet(const kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                      const unsigned blocks[]);

/* mix.c: the units of kernel k with b blocks on the modelled SM. */
void kmodel_units(const kmodel_ctx *ctx, const kmodel_kernel *k, unsigned b, unsigned *n,
                  double *g);
/* mix of n kernels, utilisations util[] in [0,1] (no validation of fit). */
int kmodel_mix_util(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                    const unsigned blocks[], double util[], double *idle, size_t *states);

#endif
