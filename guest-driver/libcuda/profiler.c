/* The profiler control API (cudaProfiler.h). No profiler is attached to a tenant: the
 * daemon profiles kernels itself, and a tenant's profiler could not see the shared GPU.
 * CUDA's driver answers start and stop with success when no profiler is attached (they
 * then have no effect), so programs that bracket a region with them run unchanged. */
#include <cudaProfiler.h>

#include "libcuda_internal.h"

/* Both need a current context, as in CUDA. */
static CUresult no_profiler(void)
{
    struct kcu_ctx *ctx;

    return kcu_ctx_require(&ctx);
}

CUresult CUDAAPI cuProfilerStart(void)
{
    return no_profiler();
}

CUresult CUDAAPI cuProfilerStop(void)
{
    return no_profiler();
}
