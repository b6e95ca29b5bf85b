/* Memory latency as a function of the memory traffic in flight (docs/MODEL.md, "Latency").
 *
 * The default form rises linearly with the outstanding bytes Q of the modelled SM:
 * L = L0 + b0 + Q / (a0 * B). Q / (a0 * B) is the time the memory system needs to drain
 * what is queued ahead at the achieved bandwidth a0 * B (Little's law), so the request
 * throughput of many idle warps, warps / L, tends to the bandwidth bound a0 * B / bytes. */
#include <math.h>

#include "model_internal.h"

double kmodel_latency_eval(const kmodel_ctx *ctx, double q)
{
    const kmodel_latency *lat = &ctx->opt.latency;
    switch (lat->form) {
    case KMODEL_LAT_CONSTANT:
        return ctx->l0 + lat->b0;
    case KMODEL_LAT_PAPER: {
        /* As printed: B in requests per cycle, S_i the idle warps (one request each). */
        double s = q / KMODEL_COALESCED_BYTES;
        if (s < 1)
            s = 1;
        return ctx->l0 + lat->b0 + (ctx->bw / KMODEL_COALESCED_BYTES) / (lat->a0 * s);
    }
    case KMODEL_LAT_CUSTOM:
        return lat->custom(lat, q, lat->user);
    case KMODEL_LAT_LINEAR:
    default:
        return ctx->l0 + lat->b0 + q / (lat->a0 * ctx->bw);
    }
}

double kmodel_latency_at(const kmodel_ctx *ctx, double outstanding_bytes)
{
    if (!ctx || !isfinite(outstanding_bytes) || outstanding_bytes < 0)
        return NAN;
    return kmodel_latency_eval(ctx, outstanding_bytes);
}
