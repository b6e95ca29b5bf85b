/* An independent Monte-Carlo simulator of warps on one scheduler, for checking the model.
 *
 * It follows the process the model describes, unit by unit instead of by counts: each
 * round every ready unit issues (g warp instructions, g cycles), then goes idle with
 * probability rm (on an uncoalesced access with probability u, else coalesced); every unit
 * idle at the start of the round comes back with probability min(1, R / L), R the round's
 * length (ready warps, at least 1 cycle) and L the linear latency of its access kind:
 * L = l0 + b0 + (Q + extra) / (a0 * bw), Q the bytes outstanding at the start of the round
 * (128 per coalesced idle warp, bytes_u per uncoalesced one) and extra = bytes_u - 128
 * for an uncoalesced access. */
#ifndef WARP_SIM_H
#define WARP_SIM_H

#include <glib.h>

#define SIM_MAX_KERNELS 4

typedef struct {
    size_t nk;
    unsigned n[SIM_MAX_KERNELS];   /* units */
    double g[SIM_MAX_KERNELS];     /* warps per unit */
    double rm[SIM_MAX_KERNELS];
    double u[SIM_MAX_KERNELS];
    double l0, a0, b0, bw;         /* linear latency */
    double bytes_u;                /* bytes of an uncoalesced warp access */
} sim_params;

typedef struct {
    double util[SIM_MAX_KERNELS];  /* mean over batches of issued / cycles */
    double se[SIM_MAX_KERNELS];    /* standard error of that mean (batch means) */
    double total, total_se;
} sim_result;

/* Runs burn-in rounds, then batches x rounds rounds, with the given generator. */
void sim_run(const sim_params *p, GRand *rng, unsigned burn, unsigned batches,
             unsigned rounds, sim_result *out);

#endif
