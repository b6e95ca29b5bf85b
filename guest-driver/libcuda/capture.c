/* Stream capture queries (cuStreamIsCapturing, cuStreamGetCaptureInfo): what
 * graph_capture.c knows of the stream. Frameworks ask before every allocation and launch
 * (PyTorch's caching allocator, CuPy, cudart), so a stream that does not capture costs
 * one handle check and one atomic load. */
#include "graph_internal.h"

static CUresult capture_info(CUstream s, bool pt, CUstreamCaptureStatus *status,
                             cuuint64_t *id, CUgraph *g, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *n)
{
    uint64_t h;
    CUresult r = status ? kcu_stream_handle(s, pt, &h) : CUDA_ERROR_INVALID_VALUE;

    if (r != CUDA_SUCCESS)
        return r;
    if (edges && !deps)
        return CUDA_ERROR_INVALID_VALUE; /* CUDA: edge data only with the dependencies */
    if (!kcu_capture_any()) {
        *status = CU_STREAM_CAPTURE_STATUS_NONE;
        if (id)
            *id = 0;
        return CUDA_SUCCESS;
    }
    return kcu_capture_info(h, status, id, g, deps, edges, n);
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    return capture_info(s, false, st, NULL, NULL, NULL, NULL, NULL);
}

CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    return capture_info(s, true, st, NULL, NULL, NULL, NULL, NULL);
}

#undef cuStreamGetCaptureInfo
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id);
CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                             cuuint64_t *id);

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id)
{
    return capture_info(s, false, st, id, NULL, NULL, NULL, NULL);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                             cuuint64_t *id)
{
    return capture_info(s, true, st, id, NULL, NULL, NULL, NULL);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,
                                           CUgraph *g, const CUgraphNode **deps, size_t *n)
{
    return capture_info(s, false, st, id, g, deps, NULL, n);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                                cuuint64_t *id, CUgraph *g,
                                                const CUgraphNode **deps, size_t *n)
{
    return capture_info(s, true, st, id, g, deps, NULL, n);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,
                                           CUgraph *g, const CUgraphNode **deps,
                                           const CUgraphEdgeData **edges, size_t *n)
{
    return capture_info(s, false, st, id, g, deps, edges, n);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                                cuuint64_t *id, CUgraph *g,
                                                const CUgraphNode **deps,
                                                const CUgraphEdgeData **edges, size_t *n)
{
    return capture_info(s, true, st, id, g, deps, edges, n);
}
