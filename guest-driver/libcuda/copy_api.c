/* The copy and memset entry points, each in its legacy-stream and per-thread-stream form
 * (the _ptds/_ptsz symbols differ only in what the default stream is). */
#include <string.h>

#include "libcuda_internal.h"

static CUresult linear(enum kcu_side dside, void *dh, CUdeviceptr dd, enum kcu_side sside,
                       const void *sh, CUdeviceptr sd, size_t bytes, CUstream s, bool pt,
                       bool async)
{
    struct kcu_copy c = {
        .dst_side = dside, .src_side = sside, .dst_host = dh, .src_host = sh, .dst_dev = dd,
        .src_dev = sd, .width = bytes, .height = 1, .dst_pitch = bytes, .src_pitch = bytes,
        .async = async,
    };
    CUresult r = kcu_stream_handle(s, pt, &c.stream);

    if (r == CUDA_SUCCESS)
        r = kcu_copy_run(&c);
    if (r == CUDA_SUCCESS && !async)
        kcu_printf_drain(false);    /* a blocking copy is a synchronisation point */
    return r;
}

/* Unified addressing: a pointer is device memory when it lies in one of our allocations. */
static CUresult unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s, bool pt,
                        bool async)
{
    bool ddev = kcu_device_lookup(dst, NULL, NULL), sdev = kcu_device_lookup(src, NULL, NULL);

    return linear(ddev ? KCU_DEVICE : KCU_HOST, (void *)(uintptr_t)dst, dst,
                  sdev ? KCU_DEVICE : KCU_HOST, (const void *)(uintptr_t)src, src, bytes, s, pt,
                  async);
}

#define H2D(dst, src, n, s, pt, a) linear(KCU_DEVICE, NULL, dst, KCU_HOST, src, 0, n, s, pt, a)
#define D2H(dst, src, n, s, pt, a) linear(KCU_HOST, dst, 0, KCU_DEVICE, NULL, src, n, s, pt, a)
#define D2D(dst, src, n, s, pt, a) linear(KCU_DEVICE, NULL, dst, KCU_DEVICE, NULL, src, n, s, pt, a)

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return unified(dst, src, n, NULL, false, false); }
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return unified(dst, src, n, NULL, true, false); }
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return unified(dst, src, n, s, false, true); }
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return unified(dst, src, n, s, true, true); }

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{ return H2D(dst, src, n, NULL, false, false); }
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{ return H2D(dst, src, n, NULL, true, false); }
CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{ return D2H(dst, src, n, NULL, false, false); }
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{ return D2H(dst, src, n, NULL, true, false); }
CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return D2D(dst, src, n, NULL, false, false); }
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ return D2D(dst, src, n, NULL, true, false); }

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{ return H2D(dst, src, n, s, false, true); }
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{ return H2D(dst, src, n, s, true, true); }
CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{ return D2H(dst, src, n, s, false, true); }
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{ return D2H(dst, src, n, s, true, true); }
CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return D2D(dst, src, n, s, false, true); }
CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ return D2D(dst, src, n, s, true, true); }

/* Peer copies between contexts of the one device this process sees are plain copies. */
CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc,
                              size_t n)
{
    (void)dc;
    (void)sc;
    return D2D(dst, src, n, NULL, false, false);
}
CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc,
                                   size_t n)
{
    (void)dc;
    (void)sc;
    return D2D(dst, src, n, NULL, true, false);
}
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
                                   CUcontext sc, size_t n, CUstream s)
{
    (void)dc;
    (void)sc;
    return D2D(dst, src, n, s, false, true);
}
CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
                                        CUcontext sc, size_t n, CUstream s)
{
    (void)dc;
    (void)sc;
    return D2D(dst, src, n, s, true, true);
}

/* ---- 2-D copies ------------------------------------------------------------------------ */

/* One side of a CUDA_MEMCPY2D: host or device (unified pointers classified); arrays are
 * not supported. */
static CUresult side(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y,
                     size_t pitch, enum kcu_side *out_side, const void **out_host,
                     CUdeviceptr *out_dev)
{
    size_t off = y * pitch + x;

    if (type == CU_MEMORYTYPE_UNIFIED)
        type = kcu_device_lookup(dev, NULL, NULL) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    if (type == CU_MEMORYTYPE_HOST) {
        if (!host && dev)
            host = (const void *)(uintptr_t)dev; /* unified pointer given as device */
        *out_side = KCU_HOST;
        *out_host = (const char *)host + off;
        return CUDA_SUCCESS;
    }
    if (type == CU_MEMORYTYPE_DEVICE) {
        *out_side = KCU_DEVICE;
        *out_dev = dev + off;
        return CUDA_SUCCESS;
    }
    return kcu_unsupported("2-D copy with a CUDA array");
}

/* The copy a CUDA_MEMCPY2D describes (stream and async left to the caller). */
static CUresult describe2d(const CUDA_MEMCPY2D *p, struct kcu_copy *c)
{
    const void *dst_host = NULL;
    CUresult r;

    *c = (struct kcu_copy){.width = p->WidthInBytes, .height = p->Height};
    c->dst_pitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    c->src_pitch = p->srcPitch ? p->srcPitch : p->WidthInBytes;
    if ((r = side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                  c->src_pitch, &c->src_side, &c->src_host, &c->src_dev)) != CUDA_SUCCESS ||
        (r = side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
                  c->dst_pitch, &c->dst_side, &dst_host, &c->dst_dev)) != CUDA_SUCCESS)
        return r;
    c->dst_host = (void *)(uintptr_t)dst_host;
    return CUDA_SUCCESS;
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream s, bool pt, bool async)
{
    struct kcu_copy c;
    CUresult r;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = describe2d(p, &c)) != CUDA_SUCCESS ||
        (r = kcu_stream_handle(s, pt, &c.stream)) != CUDA_SUCCESS)
        return r;
    c.async = async;
    if ((r = kcu_copy_run(&c)) == CUDA_SUCCESS && !async)
        kcu_printf_drain(false);
    return r;
}

CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) { return copy2d(p, NULL, false, false); }
CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) { return copy2d(p, NULL, true, false); }
CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p)
{ return copy2d(p, NULL, false, false); }
CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p)
{ return copy2d(p, NULL, true, false); }
CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s)
{ return copy2d(p, s, false, true); }
CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream s)
{ return copy2d(p, s, true, true); }

/* 3-D copies of depth 1 are 2-D copies; deeper ones are not supported. */
static CUresult as2d(const CUDA_MEMCPY3D *p, CUDA_MEMCPY2D *q)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->Depth > 1 || p->srcZ || p->dstZ)
        return kcu_unsupported("cuMemcpy3D with depth");
    memset(q, 0, sizeof(*q));
    q->srcXInBytes = p->srcXInBytes;
    q->srcY = p->srcY;
    q->srcMemoryType = p->srcMemoryType;
    q->srcHost = p->srcHost;
    q->srcDevice = p->srcDevice;
    q->srcPitch = p->srcPitch;
    q->dstXInBytes = p->dstXInBytes;
    q->dstY = p->dstY;
    q->dstMemoryType = p->dstMemoryType;
    q->dstHost = p->dstHost;
    q->dstDevice = p->dstDevice;
    q->dstPitch = p->dstPitch;
    q->WidthInBytes = p->WidthInBytes;
    q->Height = p->Height;
    return CUDA_SUCCESS;
}

CUresult kcu_copy_describe3d(const CUDA_MEMCPY3D *p, struct kcu_copy *c)
{
    CUDA_MEMCPY2D q;
    CUresult r = as2d(p, &q);

    return r != CUDA_SUCCESS ? r : describe2d(&q, c);
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, CUstream s, bool pt, bool async)
{
    CUDA_MEMCPY2D q;
    CUresult r = as2d(p, &q);

    return r != CUDA_SUCCESS ? r : copy2d(&q, s, pt, async);
}

CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) { return copy3d(p, NULL, false, false); }
CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) { return copy3d(p, NULL, true, false); }
CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream s)
{ return copy3d(p, s, false, true); }
CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream s)
{ return copy3d(p, s, true, true); }

/* ---- memsets ------------------------------------------------------------------------------ */

static CUresult fill(CUdeviceptr d, size_t pitch, uint32_t v, unsigned es, size_t w, size_t h,
                     CUstream s, bool pt)
{
    uint64_t stream;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r != CUDA_SUCCESS)
        return r;
    if (h == 1)
        pitch = w * es;
    return kcu_memset_run(d, pitch, v, es, w, h, stream);
}

#define MEMSET_1D(name, type, es)                                                           \
    CUresult CUDAAPI name(CUdeviceptr d, type v, size_t n)                                  \
    { return fill(d, 0, v, es, n, 1, NULL, false); }                                        \
    CUresult CUDAAPI name##_ptds(CUdeviceptr d, type v, size_t n)                           \
    { return fill(d, 0, v, es, n, 1, NULL, true); }
#define MEMSET_1D_ASYNC(name, type, es)                                                     \
    CUresult CUDAAPI name(CUdeviceptr d, type v, size_t n, CUstream s)                      \
    { return fill(d, 0, v, es, n, 1, s, false); }                                           \
    CUresult CUDAAPI name##_ptsz(CUdeviceptr d, type v, size_t n, CUstream s)               \
    { return fill(d, 0, v, es, n, 1, s, true); }
#define MEMSET_2D(name, type, es)                                                           \
    CUresult CUDAAPI name(CUdeviceptr d, size_t p, type v, size_t w, size_t h)              \
    { return fill(d, p, v, es, w, h, NULL, false); }                                        \
    CUresult CUDAAPI name##_ptds(CUdeviceptr d, size_t p, type v, size_t w, size_t h)       \
    { return fill(d, p, v, es, w, h, NULL, true); }
#define MEMSET_2D_ASYNC(name, type, es)                                                     \
    CUresult CUDAAPI name(CUdeviceptr d, size_t p, type v, size_t w, size_t h, CUstream s)  \
    { return fill(d, p, v, es, w, h, s, false); }                                           \
    CUresult CUDAAPI name##_ptsz(CUdeviceptr d, size_t p, type v, size_t w, size_t h,       \
                                 CUstream s)                                                \
    { return fill(d, p, v, es, w, h, s, true); }

MEMSET_1D(cuMemsetD8_v2, unsigned char, 1)
MEMSET_1D(cuMemsetD16_v2, unsigned short, 2)
MEMSET_1D(cuMemsetD32_v2, unsigned int, 4)
MEMSET_1D_ASYNC(cuMemsetD8Async, unsigned char, 1)
MEMSET_1D_ASYNC(cuMemsetD16Async, unsigned short, 2)
MEMSET_1D_ASYNC(cuMemsetD32Async, unsigned int, 4)
MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1)
MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2)
MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4)
MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1)
MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2)
MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4)
