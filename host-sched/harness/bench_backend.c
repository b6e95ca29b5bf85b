/* The executor backends the harness runs on: the sim (model-timed, no data), and where
 * built the emulator (emu) and the GPU (cuda, through kerneletd's module), which compute:
 * their kernels are the bench PTX with the slicer's variants, and the run gives them real
 * data and verifies every output (bench_data.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sim.h"
#ifdef KERNELET_BENCH_HAVE_EMU
#include "emu_backend.h"
#endif
#ifdef KERNELET_BENCH_HAVE_CUDA
#include "cuda_module.h"
#endif

struct bench_backend {
    const char *name;
    ksim *sim;
    kbackend be;            /* a computing backend's, destroyed with it */
    const char *ptx_dir;
};

static int sim_new(const bench_options *o, const ksched_profile_cache *profiles,
                   bench_backend *b, kbackend *be, char *msg, size_t len)
{
    ksim_config c;
    ksim_config_default(&c);
    const kmodel_gpu *g = kmodel_gpu_lookup(o->gpu);
    if (!g) {
        snprintf(msg, len, "unknown GPU '%s'", o->gpu);
        return -1;
    }
    c.gpu = *g;
    c.model.latency.a0 = o->a0;
    c.launch_latency_ns = o->launch_latency_ns;
    c.stream_gap_ns = o->stream_gap_ns;
    c.back_memory = 0;
    ksched_err e;
    if (ksim_new(&b->sim, &c, &e) || ksim_add_kernels(b->sim, profiles, &e)) {
        snprintf(msg, len, "sim: %s", e.msg);
        return -1;
    }
    ksim_backend(b->sim, be);
    return 0;
}

const char *bench_backends_built(void)
{
    return "sim"
#ifdef KERNELET_BENCH_HAVE_EMU
           ", emu"
#endif
#ifdef KERNELET_BENCH_HAVE_CUDA
           ", cuda"
#endif
        ;
}

static int computing_new(const bench_options *o, bench_backend *b, kbackend *be, char *msg,
                         size_t len)
{
    int rc = -2;
#ifdef KERNELET_BENCH_HAVE_EMU
    if (!strcmp(o->backend, "emu"))
        rc = kd_emu_backend_open(&b->be, KBACKEND_WINDOW_DEFAULT, NULL, NULL, msg, len);
#endif
#ifdef KERNELET_BENCH_HAVE_CUDA
    if (!strcmp(o->backend, "cuda"))
        rc = kbackend_cuda_module_open(&b->be, NULL, KBACKEND_WINDOW_DEFAULT, false, msg, len);
#endif
    if (rc == -2)
        snprintf(msg, len, "backend '%s' is not built into kernelet-bench (available: %s)",
                 o->backend, bench_backends_built());
    if (rc)
        return -1;
    b->name = o->backend;
    b->ptx_dir = o->ptx_dir;
    *be = b->be;
    return 0;
}

int bench_backend_new(const bench_options *o, const ksched_profile_cache *profiles,
                      bench_backend **out, kbackend *be, char *msg, size_t len)
{
    bench_backend *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    int rc;
    if (!strcmp(o->backend, "sim")) {
        b->name = "sim";
        rc = sim_new(o, profiles, b, be, msg, len);
    } else {
        rc = computing_new(o, b, be, msg, len);
    }
    if (rc) {
        bench_backend_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

void bench_backend_free(bench_backend *b)
{
    if (!b)
        return;
    ksim_free(b->sim);
    if (b->be.ops)
        b->be.ops->destroy(b->be.state);
    free(b);
}

int bench_backend_computes(const bench_backend *b)
{
    return b->be.ops != NULL;
}

int bench_module_text(const bench_backend *b, const bench_kernel *k, char **text, size_t *len,
                      char *msg, size_t msglen)
{
    if (bench_backend_computes(b)) {
        *text = bench_data_ptx(b->ptx_dir, k, len, msg, msglen);
        return *text ? 0 : -1;
    }
    /* the sim reads only the entry names */
    size_t cap = 2 * strlen(k->entry) + 64;
    char *t = malloc(cap);
    if (!t) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    int n = snprintf(t, cap, ".visible .entry %s()\n.visible .entry %s%s()\n", k->entry,
                     k->entry, KBACKEND_SLICE_SUFFIX);
    *text = t;
    *len = (size_t)n;
    return 0;
}

int bench_backend_blocks_once(const bench_backend *b, uint64_t tag, uint64_t total)
{
    if (!b->sim)
        return -1;
    ksim_coverage_result c;
    if (ksim_coverage(b->sim, tag, total, &c, NULL))
        return -1;
    return !c.missing && !c.duplicated && !c.outside;
}
