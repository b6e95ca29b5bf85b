/* Kernel launches: checked here (the daemon checks again), marshalled into the function's
 * parameter block, and queued as a batch record: a launch never waits for the daemon. */
#include <string.h>

#include "graph_internal.h"

static CUresult check_shape(const struct kcu_function *f, int dev, const unsigned grid[3],
                            const unsigned block[3], unsigned smem)
{
    static const CUdevice_attribute gmax[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                               CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                               CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    static const CUdevice_attribute bmax[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                               CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                               CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    int fmax = f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    int dyn_max = f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES];

    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0 || block[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
        if (grid[i] > (unsigned)kcu_attr(dev, gmax[i]) || block[i] > (unsigned)kcu_attr(dev, bmax[i]))
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (threads > (uint64_t)kcu_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) ||
        (fmax > 0 && threads > (uint64_t)fmax))
        return CUDA_ERROR_INVALID_VALUE;
    if (smem > (unsigned)(dyn_max > 0 ? dyn_max : 0) && smem > 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Fills the parameter block from kernelParams (one pointer per parameter) or from extra
 * (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE). */
static CUresult marshal(const struct kcu_function *f, void **params, void **extra, uint8_t *block)
{
    memset(block, 0, f->param_bytes);
    if (params) {
        for (uint32_t i = 0; i < f->n_params; i++) {
            if (!params[i])
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(block + f->params[i].offset, params[i], f->params[i].size);
        }
        return CUDA_SUCCESS;
    }
    if (extra) {
        const void *buf = NULL;
        size_t size = 0;
        for (unsigned i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (i > 64)
                return CUDA_ERROR_INVALID_VALUE;
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
                size = *(const size_t *)extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (!buf || size < f->param_bytes)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(block, buf, f->param_bytes);
        return CUDA_SUCCESS;
    }
    return f->n_params == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult kcu_launch_prepare(struct kcu_function *f, const unsigned grid[3],
                            const unsigned block[3], unsigned smem, void **params, void **extra,
                            uint8_t *pblock)
{
    struct kcu_ctx *ctx;
    CUresult r;

    if ((r = kcu_ctx_require(&ctx)) != CUDA_SUCCESS)
        return r;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = check_shape(f, ctx->device, grid, block, smem)) != CUDA_SUCCESS) {
        kcu_log("launch of %s refused: grid %ux%ux%u, block %ux%ux%u (at most %d threads), "
                "%u bytes of dynamic shared memory (at most %d)", f->name, grid[0], grid[1],
                grid[2], block[0], block[1], block[2],
                f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK], smem,
                f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES]);
        return r;
    }
    if ((r = marshal(f, params, extra, pblock)) != CUDA_SUCCESS)
        kcu_log("launch of %s refused: its parameters (%u of them, %u bytes) were not given "
                "as kernelParams or a large enough extra buffer", f->name, f->n_params,
                f->param_bytes);
    return r;
}

CUresult kcu_launch_block(const struct kcu_function *f, const unsigned grid[3],
                          const unsigned block[3], unsigned smem, uint64_t stream,
                          const uint8_t *pblock)
{
    struct kernelet_rec_launch rec = {
        .h = {.op = KERNELET_REC_LAUNCH, .stream = stream},
        .grid = {grid[0], grid[1], grid[2]},
        .block = {block[0], block[1], block[2]},
        .shared_mem = smem,
        .function = f->handle,
        .param_bytes = f->param_bytes,
    };

    rec.h.length = (uint32_t)(sizeof(rec) + ((f->param_bytes + 7u) & ~7u));
    return kcu_batch_add(kcu.client, &rec, sizeof(rec), pblock, f->param_bytes);
}

/* On a capturing stream the launch becomes a kernel node of the capture instead. */
static CUresult capture_launch(struct kcu_function *f, const unsigned grid[3],
                               const unsigned block[3], unsigned smem, uint64_t stream,
                               const uint8_t *pblock, bool *taken)
{
    struct kcu_op op;
    CUresult r;

    *taken = false;
    if (!kcu_capture_any())
        return CUDA_SUCCESS;
    if ((r = kcu_kernel_op_from_block(&op, f, grid, block, smem, pblock)) != CUDA_SUCCESS)
        return r;
    r = kcu_capture_take(stream, &op, taken);
    if (!*taken)
        kcu_op_free(&op);
    return r;
}

CUresult kcu_launch(struct kcu_function *f, const unsigned grid[3], const unsigned block[3],
                    unsigned smem, uint64_t stream, void **params, void **extra)
{
    static __thread uint8_t pblock[KERNELET_MAX_PARAM_BYTES];
    bool taken;
    CUresult r = kcu_launch_prepare(f, grid, block, smem, params, extra, pblock);

    if (r == CUDA_SUCCESS)
        r = capture_launch(f, grid, block, smem, stream, pblock, &taken);
    if (r != CUDA_SUCCESS || taken)
        return r;
    return kcu_launch_block(f, grid, block, smem, stream, pblock);
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
                       void **extra, bool pt)
{
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    uint64_t stream;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r != CUDA_SUCCESS)
        return r;
    return kcu_launch(kcu_function_from(f), grid, block, smem, stream, params, extra);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int smem, CUstream s, void **params, void **extra)
{
    return launch(f, gx, gy, gz, bx, by, bz, smem, s, params, extra, false);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int smem, CUstream s,
                                     void **params, void **extra)
{
    return launch(f, gx, gy, gz, bx, by, bz, smem, s, params, extra, true);
}

/* What cuLaunchKernelEx's attributes ask beyond a plain launch: thread-block clusters and
 * a cooperative launch, which the daemon runs whole where its backend can (else CUDA's
 * not-supported error). */
static bool attributed(const struct kcu_launch_attrs *a)
{
    return a->cooperative || a->cluster[0] * a->cluster[1] * a->cluster[2] > 1;
}

/* A launch with attributes, as a LAUNCH_EX record, or a kernel node that keeps them on a
 * capturing stream. */
static CUresult launch_attributed(struct kcu_function *f, const unsigned grid[3],
                                  const unsigned block[3], unsigned smem, uint64_t stream,
                                  void **params, void **extra, const struct kcu_launch_attrs *a)
{
    static __thread uint8_t pblock[KERNELET_MAX_PARAM_BYTES];
    struct kernelet_rec_launch_ex rec = {
        .l = {.h = {.op = KERNELET_REC_LAUNCH_EX, .stream = stream},
              .grid = {grid[0], grid[1], grid[2]}, .block = {block[0], block[1], block[2]},
              .shared_mem = smem, .param_bytes = f ? f->param_bytes : 0},
        .flags = a->cooperative ? KERNELET_LAUNCH_COOPERATIVE : 0,
    };
    CUresult r;

    /* refused at once where the daemon's backend cannot, as CUDA refuses on such a device */
    if (kcu.n_devices > 0 &&
        !kcu.dev[0].props.attrs[a->cooperative ? CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
                                               : CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH])
        return kcu_unsupported(a->cooperative ? "cuLaunchCooperativeKernel (this backend)"
                                              : "cuLaunchKernelEx(cluster dimension) (this backend)");
    for (int i = 0; i < 3; i++) {
        rec.cluster[i] = a->cluster[i] ? a->cluster[i] : 1;
        if (grid[i] % rec.cluster[i])
            return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    if (rec.cluster[0] * rec.cluster[1] * rec.cluster[2] > KERNELET_MAX_CLUSTER_BLOCKS)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    if ((r = kcu_launch_prepare(f, grid, block, smem, params, extra, pblock)) != CUDA_SUCCESS)
        return r;
    if (kcu_capture_any()) {
        struct kcu_op op;
        bool taken = false;
        if ((r = kcu_kernel_op_from_block(&op, f, grid, block, smem, pblock)) != CUDA_SUCCESS)
            return r;
        op.u.kernel.attrs = *a;
        r = kcu_capture_take(stream, &op, &taken);
        if (!taken)
            kcu_op_free(&op);
        if (r != CUDA_SUCCESS || taken)
            return r;
    }
    rec.l.function = f->handle;
    rec.l.h.length = (uint32_t)(sizeof(rec) + ((f->param_bytes + 7u) & ~7u));
    return kcu_batch_add(kcu.client, &rec, sizeof(rec), pblock, f->param_bytes);
}

CUresult kcu_launch_with_attrs(struct kcu_function *f, const unsigned grid[3],
                               const unsigned block[3], unsigned smem, uint64_t stream,
                               void **params, void **extra, const struct kcu_launch_attrs *a)
{
    return attributed(a) ? launch_attributed(f, grid, block, smem, stream, params, extra, a)
                         : kcu_launch(f, grid, block, smem, stream, params, extra);
}

/* Launch attributes that change nothing here are accepted; clusters and cooperative
 * launches are gathered into *out; anything else is not supported. */
static CUresult check_attrs(const CUlaunchConfig *c, struct kcu_launch_attrs *out)
{
    *out = (struct kcu_launch_attrs){.cluster = {1, 1, 1}};
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        switch (a->id) {
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
            break;
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
            break; /* serialised anyway */
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            out->cooperative = a->value.cooperative != 0;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            if (!a->value.clusterDim.x || !a->value.clusterDim.y || !a->value.clusterDim.z)
                return CUDA_ERROR_INVALID_CLUSTER_SIZE;
            out->cluster[0] = a->value.clusterDim.x;
            out->cluster[1] = a->value.clusterDim.y;
            out->cluster[2] = a->value.clusterDim.z;
            break;
        default:
            return kcu_unsupported("cuLaunchKernelEx(attribute)");
        }
    }
    return CUDA_SUCCESS;
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                          bool pt)
{
    struct kcu_launch_attrs a;
    uint64_t stream;
    CUresult r;

    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_attrs(c, &a)) != CUDA_SUCCESS)
        return r;
    if (!attributed(&a))
        return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                      c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra, pt);
    if ((r = kcu_stream_handle(c->hStream, pt, &stream)) != CUDA_SUCCESS)
        return r;
    const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ},
                   block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
    return launch_attributed(kcu_function_from(f), grid, block, c->sharedMemBytes, stream,
                             params, extra, &a);
}

/* Every block resident at once, for grid-wide synchronisation. */
static CUresult launch_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                   CUstream s, void **params, bool pt)
{
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    const struct kcu_launch_attrs a = {.cluster = {1, 1, 1}, .cooperative = true};
    uint64_t stream;
    CUresult r = kcu_stream_handle(s, pt, &stream);

    if (r != CUDA_SUCCESS)
        return r;
    return launch_attributed(kcu_function_from(f), grid, block, smem, stream, params, NULL, &a);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                           unsigned int gz, unsigned int bx, unsigned int by,
                                           unsigned int bz, unsigned int smem, CUstream s,
                                           void **params)
{
    return launch_cooperative(f, gx, gy, gz, bx, by, bz, smem, s, params, false);
}

CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
                                                unsigned int gy, unsigned int gz,
                                                unsigned int bx, unsigned int by,
                                                unsigned int bz, unsigned int smem,
                                                CUstream s, void **params)
{
    return launch_cooperative(f, gx, gy, gz, bx, by, bz, smem, s, params, true);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                  void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, false);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, true);
}
