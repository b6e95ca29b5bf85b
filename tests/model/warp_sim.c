/* Monte-Carlo warp simulator (see warp_sim.h). */
#include <math.h>
#include <string.h>

#include "warp_sim.h"

enum { READY = 0, IDLE_C = 1, IDLE_U = 2 };

typedef struct {
    const sim_params *p;
    GRand *rng;
    unsigned char *state[SIM_MAX_KERNELS];
} sim;

static double latency(const sim_params *p, double q)
{
    return p->l0 + p->b0 + q / (p->a0 * p->bw);
}

/* One round; adds each kernel's issued warp instructions to issued[] and returns cycles. */
static double round_once(sim *s, double issued[])
{
    const sim_params *p = s->p;
    double ready = 0, q = 0;
    for (size_t k = 0; k < p->nk; k++)
        for (unsigned i = 0; i < p->n[k]; i++) {
            unsigned char st = s->state[k][i];
            if (st == READY)
                ready += p->g[k];
            else
                q += p->g[k] * (st == IDLE_C ? 128.0 : p->bytes_u);
        }
    double R = ready > 1 ? ready : 1;
    double pc = fmin(1.0, R / latency(p, q));
    double pu = fmin(1.0, R / latency(p, q + p->bytes_u - 128.0));
    for (size_t k = 0; k < p->nk; k++)
        for (unsigned i = 0; i < p->n[k]; i++) {
            unsigned char *st = &s->state[k][i];
            if (*st == READY) {
                issued[k] += p->g[k];
                if (g_rand_double(s->rng) < p->rm[k])
                    *st = g_rand_double(s->rng) < p->u[k] ? IDLE_U : IDLE_C;
            } else if (g_rand_double(s->rng) < (*st == IDLE_C ? pc : pu)) {
                *st = READY;
            }
        }
    return R;
}

void sim_run(const sim_params *p, GRand *rng, unsigned burn, unsigned batches,
             unsigned rounds, sim_result *out)
{
    sim s = {.p = p, .rng = rng};
    for (size_t k = 0; k < p->nk; k++)
        s.state[k] = g_malloc0(p->n[k]);
    double scratch[SIM_MAX_KERNELS] = {0};
    for (unsigned r = 0; r < burn; r++)
        round_once(&s, scratch);

    double sum[SIM_MAX_KERNELS] = {0}, sum2[SIM_MAX_KERNELS] = {0}, tsum = 0, tsum2 = 0;
    for (unsigned b = 0; b < batches; b++) {
        double issued[SIM_MAX_KERNELS] = {0}, cycles = 0, tot = 0;
        for (unsigned r = 0; r < rounds; r++)
            cycles += round_once(&s, issued);
        for (size_t k = 0; k < p->nk; k++) {
            double v = issued[k] / cycles;
            sum[k] += v;
            sum2[k] += v * v;
            tot += v;
        }
        tsum += tot;
        tsum2 += tot * tot;
    }
    memset(out, 0, sizeof(*out));
    for (size_t k = 0; k < p->nk; k++) {
        out->util[k] = sum[k] / batches;
        double var = (sum2[k] - batches * out->util[k] * out->util[k]) / (batches - 1);
        out->se[k] = sqrt(fmax(var, 0) / batches);
    }
    out->total = tsum / batches;
    out->total_se = sqrt(fmax((tsum2 - batches * out->total * out->total) / (batches - 1), 0) /
                         batches);
    for (size_t k = 0; k < p->nk; k++)
        g_free(s.state[k]);
}
