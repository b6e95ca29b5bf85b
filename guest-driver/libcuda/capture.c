/* Stream capture queries. Capture itself (cuStreamBeginCapture, CUDA graphs) is not
 * supported and fails with CUDA_ERROR_NOT_SUPPORTED, so no stream is ever capturing: the
 * queries that frameworks make before every allocation and launch (PyTorch's caching
 * allocator, CuPy, cudart) answer "not capturing" for every valid stream. */
#include "libcuda_internal.h"

static __thread CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static CUresult not_capturing(CUstream s, bool pt, CUstreamCaptureStatus *status)
{
    uint64_t h;
    CUresult r = status ? kcu_stream_handle(s, pt, &h) : CUDA_ERROR_INVALID_VALUE;

    if (r == CUDA_SUCCESS)
        *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return r;
}

/* The capture info of a stream that is not capturing: only the status and id are set, as
 * CUDA does; the graph and dependency outputs are valid only while capturing. */
static CUresult capture_info(CUstream s, bool pt, CUstreamCaptureStatus *status,
                             cuuint64_t *id)
{
    CUresult r = not_capturing(s, pt, status);

    if (r == CUDA_SUCCESS && id)
        *id = 0;
    return r;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) { return not_capturing(s, false, st); }
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st) { return not_capturing(s, true, st); }

CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,
                                           CUgraph *g, const CUgraphNode **deps, size_t *n)
{
    (void)g, (void)deps, (void)n;
    return capture_info(s, false, st, id);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                                cuuint64_t *id, CUgraph *g,
                                                const CUgraphNode **deps, size_t *n)
{
    (void)g, (void)deps, (void)n;
    return capture_info(s, true, st, id);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,
                                           CUgraph *g, const CUgraphNode **deps,
                                           const CUgraphEdgeData **edges, size_t *n)
{
    (void)g, (void)deps, (void)edges, (void)n;
    return capture_info(s, false, st, id);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                                cuuint64_t *id, CUgraph *g,
                                                const CUgraphNode **deps,
                                                const CUgraphEdgeData **edges, size_t *n)
{
    (void)g, (void)deps, (void)edges, (void)n;
    return capture_info(s, true, st, id);
}

/* The calling thread's capture interaction mode, swapped as CUDA does; with no capture
 * ever running it changes nothing else. */
CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}
