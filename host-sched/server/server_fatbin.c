/* Fatbin modules: the entry for the device is its PTX when there is one that fits (sliced,
 * fenced: ks_ptx_load), else its cubin for the device's architecture (whole, natively:
 * ks_cubin_load). When the PTX cannot be loaded (our parser or the backend's JIT refuses
 * it) and a cubin fits, the cubin is loaded instead: the driver itself prefers a matching
 * cubin, so such a module works natively and should work here. A worker of the isolation
 * tier takes the cubin first, as the driver does: its one tenant's kernels run whole and
 * need no fence for memory, and the PTX of a library's kernels (cuBLAS, PyTorch) costs
 * the driver's JIT minutes at a framework's start. */
#include <stdlib.h>

#include "kernelet/fatbin.h"
#include "server_internal.h"

/* Extracts entry idx and loads it as what it is. */
static uint32_t load_entry(struct ks_load *l, const kfatbin *fb, unsigned idx,
                           struct ks_module *mod)
{
    uint8_t *payload = NULL;
    size_t len = 0;
    kptx_error err;
    uint32_t code;
    uint64_t t0 = ks_now_ns();

    int rc = kfatbin_extract(fb, idx, &payload, &len, &err);
    ks_latency_load(l, KS_LOAD_UNPACK, t0);
    if (rc != 0)
        return err.code == KPTX_ENOMEM ? KS_CUDA_OUT_OF_MEMORY : KS_CUDA_INVALID_IMAGE;
    if (kfatbin_entry_at(fb, idx)->kind == KFATBIN_PTX)
        code = ks_ptx_load(l, (const char *)payload, len, mod);
    else
        code = ks_cubin_load(l, payload, len, mod);
    free(payload);
    return code;
}

/* The fitting entry of kind, or -1 (kfatbin_select gives the other kind when none fits). */
static long fitting(const kfatbin *fb, unsigned arch, kfatbin_kind kind)
{
    unsigned idx;

    if (kfatbin_select(fb, arch, kind == KFATBIN_PTX, &idx, NULL) != 0 ||
        kfatbin_entry_at(fb, idx)->kind != kind)
        return -1;
    return idx;
}

uint32_t ks_fatbin_load(struct ks_load *l, const uint8_t *img, size_t size,
                        struct ks_module *mod)
{
    unsigned arch = ks_device_arch(l->srv);
    uint32_t code = KS_CUDA_NO_BINARY_FOR_GPU;
    kfatbin *fb = NULL;
    kptx_error err;

    if (kfatbin_open(img, size, &fb, &err) != 0)
        return err.code == KPTX_ENOMEM ? KS_CUDA_OUT_OF_MEMORY : KS_CUDA_INVALID_IMAGE;
    long ptx = fitting(fb, arch, KFATBIN_PTX), cubin = fitting(fb, arch, KFATBIN_ELF);
    long first = ptx, second = cubin;
    if (l->srv->cfg.adopt && l->srv->runs_cubins && cubin >= 0) {
        first = cubin;
        second = ptx;
    }
    if (first >= 0)
        code = load_entry(l, fb, (unsigned)first, mod);
    if (second >= 0 && (first < 0 || code == KS_CUDA_INVALID_PTX ||
                        code == KS_CUDA_INVALID_IMAGE || code == KS_CUDA_NO_BINARY_FOR_GPU)) {
        ks_module_reset(mod);
        code = load_entry(l, fb, (unsigned)second, mod);
    }
    kfatbin_free(fb);
    return code;
}
