/* The cuda backend (host-sched/backends/cuda/cuda_backend.h) on the fake driver
 * (fake/fake_driver.h): its threads, queues, parameter blocks, slices, module cache, memory
 * checks, trial and overhead arithmetic and its handling of a device fault, without a GPU. The
 * expectations come from the fake's exact virtual clock and from counting blocks. */
#include "cuda_backend.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "fake/fake_driver.h"
#include "kernelet/protocol.h"
#include "kernelet/ptx.h"
#include "kernels_ptx.h"

#define LANES 4

/* ---- completions ----------------------------------------------------------------------- */

typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned done, failed;
    int last_status;
    char last_msg[256];
    uint64_t min_start, max_end;
    int times_ok;               /* every completion had start <= end */
    uint64_t lane_order[LANES]; /* last tag seen per lane, tags grow per lane */
    int order_ok;
} waiter;

typedef struct ticket {
    waiter *w;
    unsigned lane;
    uint64_t tag;
} ticket;

static void waiter_init(waiter *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->times_ok = w->order_ok = 1;
    w->min_start = UINT64_MAX;
}

static void on_done(void *user, const kbackend_completion *c)
{
    ticket *t = user;
    waiter *w = t->w;
    pthread_mutex_lock(&w->lock);
    w->done++;
    w->failed += c->status != 0;
    w->last_status = c->status;
    g_strlcpy(w->last_msg, c->msg, sizeof(w->last_msg));
    w->times_ok &= c->start_ns <= c->end_ns;
    w->min_start = MIN(w->min_start, c->start_ns);
    w->max_end = MAX(w->max_end, c->end_ns);
    if (t->tag) {
        w->order_ok &= t->tag > w->lane_order[t->lane];
        w->lane_order[t->lane] = t->tag;
    }
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static void waiter_wait(waiter *w, unsigned n)
{
    pthread_mutex_lock(&w->lock);
    while (w->done < n)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

/* ---- set-up ---------------------------------------------------------------------------- */

/* The tests' configuration with address windows of 16 MiB a domain (so control words). */
static void windowed_config(kcuda_config *cfg)
{
    kcuda_config_default(cfg);
    cfg->lanes = LANES;
    cfg->window_bytes = 16u << 20;
}

static kbackend open_backend_cfg(const kcuda_config *cfg)
{
    kcuda *kc;
    kbackend_error e = {0};
    if (kcuda_new(&kc, cfg, &e))
        g_error("kcuda_new: %s", e.msg);
    kbackend be;
    kcuda_backend(kc, &be);
    g_assert_cmpint(kbackend_validate(&be, NULL), ==, 0);
    return be;
}

static kbackend open_backend_timed(const char *calibration_dir, int timed_events)
{
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    cfg.lanes = LANES;
    cfg.calibration_dir = calibration_dir;
    cfg.timed_events = timed_events;
    return open_backend_cfg(&cfg);
}

static kbackend open_backend(const char *calibration_dir)
{
    return open_backend_timed(calibration_dir, 0);
}

/* ptx with the sliced variants of its n_entries entries, as the daemon gives it. */
static char *sliced_text_of(const char *ptx, unsigned n_entries, size_t *len)
{
    kptx_module *m;
    kptx_error pe;
    g_assert_cmpint(kptx_parse(ptx, strlen(ptx), &m, &pe), ==, 0);
    unsigned n = 0;
    g_assert_cmpint(kptx_slice_module(m, &n, &pe), ==, 0);
    g_assert_cmpuint(n, ==, n_entries);
    char *text;
    g_assert_cmpint(kptx_print(m, &text, len, &pe), ==, 0);
    kptx_module_free(m);
    return text;
}

static char *sliced_module_text(size_t *len)
{
    return sliced_text_of(kcuda_test_ptx, 3, len);
}

typedef struct kernels {
    kbackend_module *mod;
    kbackend_function *count, *count_sliced, *fault;
} kernels;

static kernels load_kernels(const kbackend *be)
{
    size_t len;
    char *text = sliced_module_text(&len);
    kernels k;
    kbackend_error e = {0};
    g_assert_cmpint(be->ops->module_load_ptx(be->state, 0, text, len, &k.mod, &e), ==, 0);
    g_assert_cmpint(be->ops->function_get(be->state, k.mod, "count_blocks", &k.count, NULL, &e),
                    ==, 0);
    g_assert_cmpint(be->ops->function_get(be->state, k.mod, "count_blocks__kslice",
                                          &k.count_sliced, NULL, &e), ==, 0);
    g_assert_cmpint(be->ops->function_get(be->state, k.mod, "fault", &k.fault, NULL, &e), ==, 0);
    free(text);
    return k;
}

/* count_blocks' parameters as a caller packs them: u64, u32 and 4 bytes of tail padding
 * (16, where the kernel takes 12). */
typedef struct count_params {
    uint64_t counts;
    uint32_t tag;
    uint32_t padding;
} count_params;

static kbackend_slice count_launch(const kernels *k, const unsigned grid[3], const count_params *p)
{
    kbackend_slice s = {.fn = k->count, .grid = {grid[0], grid[1], grid[2]}, .block = {32, 1, 1},
                     .count = (uint64_t)grid[0] * grid[1] * grid[2], .params = p,
                     .params_size = sizeof(*p)};
    return s;
}

static uint32_t *read_counts(const kbackend *be, kbackend_devptr d, size_t n)
{
    uint32_t *host = g_new0(uint32_t, n);
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    g_assert_cmpint(be->ops->copy_d2h(be->state, host, d, n * 4, on_done, &t, NULL), ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpuint(w.failed, ==, 0);
    return host;
}

/* ---- tests ----------------------------------------------------------------------------- */

static void test_device_and_calibration(void)
{
    gchar *dir = g_dir_make_tmp("kcuda-fake-XXXXXX", NULL);
    gchar *path = g_build_filename(dir, "NVIDIA_H100_80GB_HBM3.calib", NULL);
    g_assert_true(g_file_set_contents(path, "device=" FAKE_DEVICE_NAME "\n"
                                      "dram_latency_cycles=400\na0=0.9\nslice_overhead_ns=2500\n",
                                      -1, NULL));
    kbackend be = open_backend(dir);
    kbackend_device_info in;
    g_assert_cmpint(be.ops->device_info(be.state, &in, NULL), ==, 0);
    g_assert_cmpstr(in.name, ==, FAKE_DEVICE_NAME);
    g_assert_cmpuint(in.sms, ==, 132);
    g_assert_cmpuint(in.lanes, ==, LANES);
    g_assert_false(in.virtual_time);
    /* the context's stack raised from the driver's 1024 to the default, and reported for
     * the fencing pass's stack guard */
    fake_stats fs;
    fake_driver_stats(&fs);
    g_assert_cmpuint(fs.stack_bytes, ==, 4096);
    g_assert_cmpuint(in.stack_bytes, ==, 4096);
    g_assert_cmpuint(in.stack_top, ==, 0x1000000);  /* 0xfffdc0 read, rounded up */
    g_assert_cmpuint(in.slice_overhead_ns, ==, 2500);      /* from the file, not measured */
    g_assert_nonnull(in.model_gpu);
    g_assert_cmpfloat(in.model_gpu->mem_latency_cycles, ==, 400);
    g_assert_cmpuint(in.model_gpu->sms, ==, 132);
    const kcuda_calibration *c = kcuda_calibration_of(be.state);
    g_assert_nonnull(c);
    g_assert_cmpfloat(c->a0, ==, 0.9);
    g_assert_cmpfloat(in.a0, ==, 0.9);
    kmodel_options mo;
    kmodel_options_default(&mo);
    kbackend_device_model_options(&in, &mo);
    g_assert_cmpfloat(mo.latency.a0, ==, 0.9);
    g_assert_null(be.ops->progress);
    be.ops->destroy(be.state);
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

/* Without a calibration the backend measures the launch overhead: the fake charges
 * FAKE_LAUNCH_NS per launch and nothing else differs. */
static void test_overhead_measured(void)
{
    kbackend be = open_backend(NULL);
    kbackend_device_info in;
    g_assert_cmpint(be.ops->device_info(be.state, &in, NULL), ==, 0);
    g_assert_null(in.model_gpu);
    g_assert_cmpfloat(in.a0, ==, 0);                        /* no calibration: unknown */
    g_assert_cmpuint(in.slice_overhead_ns, >=, FAKE_LAUNCH_NS - 1);
    g_assert_cmpuint(in.slice_overhead_ns, <=, FAKE_LAUNCH_NS + 1);
    be.ops->destroy(be.state);
}

/* Where stacks start is measured, not assumed: a GPU whose threads' stacks start at
 * 0x7ff000 gets a guard counted from 0x800000. */
static void test_stack_top_measured(void)
{
    fake_driver_set_stack_top(0x7ff000);
    kbackend be = open_backend(NULL);
    kbackend_device_info in;
    g_assert_cmpint(be.ops->device_info(be.state, &in, NULL), ==, 0);
    g_assert_cmpuint(in.stack_top, ==, 0x800000);
    be.ops->destroy(be.state);
    fake_driver_set_stack_top(0);
}

static void test_memory(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    kbackend_devptr a, b;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->mem_alloc(st, 0, 4096, &a, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(st, 0, 4096, &b, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(st, 0, 0, &b, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->mem_alloc(st, 0, (uint64_t)1 << 40, &b, &e), ==, KBACKEND_EDEVMEM);
    kcuda_stats s;
    kcuda_get_stats(st, &s);
    g_assert_cmpuint(s.mem_in_use, ==, 8192);

    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    unsigned char in[4096], out[4096];
    for (int i = 0; i < 4096; i++)
        in[i] = (unsigned char)(i * 7);
    g_assert_cmpint(be.ops->copy_h2d(st, a, in, 4096, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpint(be.ops->copy_d2d(st, b, a, 4096, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 2);
    g_assert_cmpint(be.ops->memset_d8(st, b + 100, 0xEE, 10, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 3);
    g_assert_cmpint(be.ops->copy_d2h(st, out, b, 4096, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 4);
    g_assert_cmpuint(w.failed, ==, 0);
    g_assert_true(w.times_ok);
    g_assert_cmpmem(out, 100, in, 100);
    for (int i = 100; i < 110; i++)
        g_assert_cmpuint(out[i], ==, 0xEE);
    g_assert_cmpmem(out + 110, 4096 - 110, in + 110, 4096 - 110);

    /* refused before the driver sees them; done is never called for them */
    g_assert_cmpint(be.ops->copy_h2d(st, a + 1, in, 4096, on_done, &t, &e), ==, KBACKEND_EINVAL);
    g_assert_nonnull(strstr(e.msg, "not inside one allocation"));
    g_assert_cmpint(be.ops->copy_d2h(st, out, a, 0, on_done, &t, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->copy_d2h(st, NULL, a, 16, on_done, &t, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->memset_d8(st, 0x1000, 0, 16, on_done, &t, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->mem_free(st, a + 8, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->mem_free(st, a, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_free(st, a, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpuint(w.done, ==, 4);
    be.ops->destroy(be.state);     /* frees b */
    fake_stats fs;
    fake_driver_stats(&fs);
    g_assert_cmpuint(fs.live_allocations, ==, 0);
}

/* Host memory registered for the device: pinned and mapped (the flags that make kernels
 * reach it), its device address handed back, a memset may name it there (CUDA's mapped
 * pinned memory) until it is unregistered. */
static void test_host_register(void)
{
    kbackend be = open_backend(NULL);
    kbackend_error e = {0};
    fake_stats fs;
    void *host = g_malloc0(8192);
    kbackend_devptr d = 0;
    g_assert_nonnull(be.ops->host_register);
    g_assert_cmpint(be.ops->host_register(be.state, host, 8192, &d, &e), ==, 0);
    g_assert_cmpuint(d, ==, (uintptr_t)host); /* the fake shares the host's addresses */
    fake_driver_stats(&fs);
    g_assert_cmpuint(fs.host_registered, ==, 1);
    g_assert_cmpuint(fs.last_register_flags & CU_MEMHOSTREGISTER_DEVICEMAP, !=, 0);
    g_assert_cmpint(be.ops->host_register(be.state, NULL, 8192, &d, &e), ==, KBACKEND_EINVAL);
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    g_assert_cmpint(be.ops->memset_d8(be.state, d + 4096, 0x5a, 4096, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpuint(w.failed, ==, 0);
    g_assert_cmpuint(((unsigned char *)host)[4096], ==, 0x5a);
    g_assert_cmpuint(((unsigned char *)host)[4095], ==, 0);
    be.ops->host_unregister(be.state, host);
    fake_driver_stats(&fs);
    g_assert_cmpuint(fs.host_registered, ==, 0);
    g_assert_cmpint(be.ops->memset_d8(be.state, d, 0, 16, on_done, &t, &e), ==, KBACKEND_EINVAL);
    be.ops->destroy(be.state);
    g_free(host);
}

/* Virtual memory management: two pieces of memory mapped side by side in a reservation
 * take a copy across their seam; a copy beyond the reservation is refused before the
 * driver; unmapping, releasing and freeing give everything back (the driver's counts). */
static void test_vmm(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    const uint64_t g = KBACKEND_VMM_GRANULE;
    kbackend_error e = {0};
    kbackend_devptr va = 0;
    uint64_t h[2];
    fake_vmm_stats before, vs;
    fake_vmm_get_stats(&before);
    g_assert_nonnull(be.ops->vmm_reserve);
    g_assert_cmpint(be.ops->vmm_reserve(st, 3 * g, 0, &va, &e), ==, 0);
    g_assert_cmpint(be.ops->vmm_create(st, g, &h[0], &e), ==, 0);
    g_assert_cmpint(be.ops->vmm_create(st, g, &h[1], &e), ==, 0);
    g_assert_cmpint(be.ops->vmm_map(st, va, g, h[0], 0, &e), ==, 0);
    g_assert_cmpint(be.ops->vmm_map(st, va + g, g, h[1], 0, &e), ==, 0);
    fake_vmm_get_stats(&vs);
    g_assert_cmpuint(vs.mappings - before.mappings, ==, 2);   /* the clearing ones went */
    g_assert_cmpuint(vs.handles - before.handles, ==, 2);

    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    unsigned char in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = (unsigned char)(i * 13 + 5);
    g_assert_cmpint(be.ops->copy_h2d(st, va + g - 128, in, 256, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpint(be.ops->copy_d2h(st, out, va + g - 128, 256, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 2);
    g_assert_cmpuint(w.failed, ==, 0);
    g_assert_cmpmem(out, 256, in, 256);
    g_assert_cmpint(be.ops->copy_h2d(st, va + 3 * g - 8, in, 16, on_done, &t, &e), ==,
                    KBACKEND_EINVAL);

    be.ops->vmm_unmap(st, va, g);
    be.ops->vmm_unmap(st, va + g, g);
    be.ops->vmm_release(st, h[0]);
    be.ops->vmm_release(st, h[1]);
    be.ops->vmm_free(st, va, 3 * g);
    fake_vmm_get_stats(&vs);
    g_assert_cmpuint(vs.mappings, ==, before.mappings);
    g_assert_cmpuint(vs.handles, ==, before.handles);
    g_assert_cmpuint(vs.reservations, ==, before.reservations);
    /* freed: no longer a range copies may name */
    g_assert_cmpint(be.ops->copy_h2d(st, va, in, 16, on_done, &t, &e), ==, KBACKEND_EINVAL);
    be.ops->destroy(st);
}

static uint64_t tmap_word(const uint8_t *map, unsigned i)
{
    uint64_t w;
    memcpy(&w, map + 8 * i, sizeof(w));
    return w;
}

/* Tensor maps come from the driver with the tenant's arguments as asked (the fake encodes
 * them readably); the driver's refusal is the backend's EINVAL; an address put into an
 * existing map changes that and nothing else. */
static void test_tensor_map(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    kbackend_error e = {0};
    uint8_t map[KERNELET_TENSOR_MAP_BYTES], again[KERNELET_TENSOR_MAP_BYTES];
    struct kernelet_tensor_map m = {
        .kind = KERNELET_TENSOR_MAP_TILED, .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        .rank = 2, .global_address = 0x7f0000001000ull, .global_dim = {1024, 768},
        .global_strides = {4096}, .box_dim = {64, 32}, .element_strides = {1, 1},
    };

    g_assert_nonnull(be.ops->tensor_map_encode);
    g_assert_cmpint(be.ops->tensor_map_encode(st, &m, map, &e), ==, 0);
    g_assert_cmphex(tmap_word(map, FAKE_TMAP_ADDRESS), ==, m.global_address);
    g_assert_cmphex(tmap_word(map, FAKE_TMAP_SHAPE), ==,
                    1u << 16 | 2u << 8 | CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    g_assert_cmpuint(tmap_word(map, FAKE_TMAP_DIMS), ==, 1024);
    g_assert_cmpuint(tmap_word(map, FAKE_TMAP_DIMS + 1), ==, 768);

    m.box_dim[1] = 512;                 /* the driver's limit is 256 */
    g_assert_cmpint(be.ops->tensor_map_encode(st, &m, again, &e), ==, KBACKEND_EINVAL);

    struct kernelet_tensor_map r = {.kind = KERNELET_TENSOR_MAP_REPLACE_ADDRESS,
                                    .global_address = 0x7f0000200000ull};
    memcpy(r.map, map, sizeof(map));
    g_assert_cmpint(be.ops->tensor_map_encode(st, &r, again, &e), ==, 0);
    g_assert_cmphex(tmap_word(again, FAKE_TMAP_ADDRESS), ==, r.global_address);
    g_assert_cmpmem(again + 8, sizeof(again) - 8, map + 8, sizeof(map) - 8);
    r.global_address += 4;              /* not 16-byte aligned */
    g_assert_cmpint(be.ops->tensor_map_encode(st, &r, again, &e), ==, KBACKEND_EINVAL);
    be.ops->destroy(st);
}

/* A fresh allocation reads as zeros although the (fake) driver hands out memory with the
 * last user's bytes in it: a tenant never sees what another left behind (issue 15). */
static void test_memory_cleared(void)
{
    kbackend be = open_backend(NULL);
    kbackend_devptr a;
    kbackend_error e = {0};
    waiter w;
    unsigned char out[4096], zero[4096] = {0};

    waiter_init(&w);
    ticket t = {&w, 0, 0};
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, sizeof(out), &a, &e), ==, 0);
    memset(out, 0x5a, sizeof(out));
    g_assert_cmpint(be.ops->copy_d2h(be.state, out, a, sizeof(out), on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpuint(w.failed, ==, 0);
    g_assert_cmpmem(out, sizeof(out), zero, sizeof(zero));
    g_assert_cmpint(be.ops->mem_free(be.state, a, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* Each domain's memory lies in a window of its own, reserved with cuMemAddressReserve and
 * mapped allocation by allocation (cuMemCreate, cuMemMap, cuMemSetAccess): aligned to its
 * size, disjoint from the other domains', zeroed although the fake hands out dirty
 * memory, usable by copies; a full window is EDEVMEM; a free unmaps, and a released
 * domain's addresses go back. Domain 0 still allocates from the driver. */
static void test_windows(void)
{
    kcuda_config cfg;
    windowed_config(&cfg);
    kcuda *kc;
    kbackend be;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_new(&kc, &cfg, &e), ==, 0);
    kcuda_backend(kc, &be);
    g_assert_nonnull(be.ops->domain_window);
    kbackend_device_info info;
    g_assert_cmpint(be.ops->device_info(be.state, &info, NULL), ==, 0);
    g_assert_cmpint(info.module_vars_outside, ==, 1);
    fake_vmm_stats vs;
    kbackend_window w[3];
    kbackend_devptr p[3], q;
    for (uint32_t d = 1; d <= 2; d++) {
        g_assert_cmpint(be.ops->domain_window(be.state, d, &w[d], &e), ==, 0);
        g_assert_cmpuint(w[d].size, ==, 16u << 20);
        g_assert_cmpuint(w[d].base % w[d].size, ==, 0);
        g_assert_cmpint(be.ops->mem_alloc(be.state, d, 3u << 20, &p[d], &e), ==, 0);
        g_assert_cmpuint(p[d], >=, w[d].base);
        g_assert_cmpuint(p[d] + (3u << 20), <=, w[d].base + w[d].size);
    }
    g_assert_true(w[1].base + w[1].size <= w[2].base || w[2].base + w[2].size <= w[1].base);
    fake_vmm_get_stats(&vs);
    g_assert_cmpuint(vs.reservations, ==, 2);
    g_assert_cmpuint(vs.mappings, ==, 2);

    waiter wt;
    waiter_init(&wt);
    ticket t = {&wt, 0, 0};
    static unsigned char in[3u << 20], out[3u << 20], zero[3u << 20];
    g_assert_cmpint(be.ops->copy_d2h(be.state, out, p[1], sizeof(out), on_done, &t, &e), ==, 0);
    waiter_wait(&wt, 1);
    g_assert_cmpmem(out, sizeof(out), zero, sizeof(zero));   /* cleared, not 0xa5 */
    /* and so is the rest of the last 2 MiB granule, which the tenant's kernels reach too */
    /* (the backend copies only allocations; the fake's device memory is host memory) */
    g_assert_cmpmem((const void *)(uintptr_t)(p[1] + (3u << 20)), 1u << 20, zero, 1u << 20);
    memset(in, 0x3c, sizeof(in));
    g_assert_cmpint(be.ops->copy_h2d(be.state, p[2], in, sizeof(in), on_done, &t, &e), ==, 0);
    waiter_wait(&wt, 2);        /* copies have no order of their own: the scheduler's */
    g_assert_cmpint(be.ops->copy_d2h(be.state, out, p[2], sizeof(out), on_done, &t, &e), ==, 0);
    waiter_wait(&wt, 3);
    g_assert_cmpuint(wt.failed, ==, 0);
    g_assert_cmpmem(out, sizeof(out), in, sizeof(in));

    /* 3 MiB take two 2 MiB granules: 12 more MiB fit, then the window is full */
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 12u << 20, &q, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1, &p[0], &e), ==, KBACKEND_EDEVMEM);
    g_assert_cmpint(be.ops->mem_free(be.state, q, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 4096, &p[0], &e), ==, 0);
    g_assert_true(p[0] < w[1].base || p[0] >= w[1].base + w[1].size);
    for (uint32_t d = 1; d <= 2; d++) {
        g_assert_cmpint(be.ops->mem_free(be.state, p[d], &e), ==, 0);
        be.ops->domain_release(be.state, d);
    }
    fake_vmm_get_stats(&vs);
    g_assert_cmpuint(vs.reservations, ==, 0);
    g_assert_cmpuint(vs.mappings, ==, 0);
    g_assert_cmpuint(vs.handles, ==, 0);
    g_assert_cmpint(be.ops->mem_free(be.state, p[0], &e), ==, 0);
    be.ops->destroy(be.state);
}

/* Whether the fake device's memory at p can be read (the fake's device memory is host
 * memory; an unmapped address of a window is inaccessible): write() says EFAULT rather
 * than fault. */
static int readable(kbackend_devptr p)
{
    int fd[2];
    g_assert_cmpint(pipe(fd), ==, 0);
    char c;
    int ok = write(fd[1], (const void *)(uintptr_t)p, 1) == 1 && read(fd[0], &c, 1) == 1;
    close(fd[0]);
    close(fd[1]);
    return ok;
}

/* Every granule of [base, base + bytes) is mapped. */
static void assert_mapped(kbackend_devptr base, uint64_t bytes)
{
    for (uint64_t off = 0; off < bytes; off += 1u << 20)
        g_assert_true(readable(base + off));
}

/* A window's reach, where its fenced kernels' addresses are confined, is mapped all
 * through: allocations, and the domain's own sink in the holes between and after them, so
 * that a made-up address inside it cannot fault; it grows by powers of two with the
 * allocations and keeps its size when they are freed. The sink is the domain's own. */
static void window_reach(void)
{
    kcuda_config cfg;
    windowed_config(&cfg);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_window w, w2;
    kbackend_devptr a, b, c;
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    g_assert_cmpuint(w.reach, ==, 2u << 20);            /* nothing allocated: the sink */
    assert_mapped(w.base, w.reach);
    g_assert_false(readable(w.base + w.reach));
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1u << 20, &a, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 3u << 20, &b, &e), ==, 0);
    g_assert_cmpuint(a, ==, w.base);
    g_assert_cmpuint(b, ==, w.base + (2u << 20));       /* [2, 6) MiB: reach 8 MiB */
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    g_assert_cmpuint(w.reach, ==, 8u << 20);
    g_assert_cmpuint(kbackend_window_mask(&w), ==, (8u << 20) - 1);    /* the server's */
    assert_mapped(w.base, w.reach);
    g_assert_false(readable(w.base + w.reach));
    g_assert_cmpint(be.ops->mem_free(be.state, a, &e), ==, 0);
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    g_assert_cmpuint(w.reach, ==, 8u << 20);
    assert_mapped(w.base, w.reach);
    /* the freed granule and the tail are the same sink; another domain's is not (volatile:
     * the compiler cannot know that two addresses alias) */
    volatile uint8_t *head = (volatile uint8_t *)(uintptr_t)w.base;
    volatile uint8_t *tail = (volatile uint8_t *)(uintptr_t)(w.base + (6u << 20));
    *head = 0x77;
    g_assert_cmpuint(*tail, ==, 0x77);
    g_assert_cmpint(be.ops->domain_window(be.state, 2, &w2, &e), ==, 0);
    g_assert_cmpuint(*(volatile const uint8_t *)(uintptr_t)w2.base, !=, 0x77);
    /* an allocation where the sink was gets fresh cleared memory, the sink stays */
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 4096, &c, &e), ==, 0);
    g_assert_cmpuint(c, ==, w.base);
    g_assert_cmpuint(*head, ==, 0);
    g_assert_cmpuint(*tail, ==, 0x77);
    g_assert_cmpint(be.ops->mem_free(be.state, b, &e), ==, 0);   /* a hole of two granules */
    assert_mapped(w.base, w.reach);
    g_assert_cmpint(be.ops->mem_free(be.state, c, &e), ==, 0);
    be.ops->domain_release(be.state, 1);
    be.ops->domain_release(be.state, 2);
    fake_vmm_stats vs;
    fake_vmm_get_stats(&vs);
    g_assert_cmpuint(vs.reservations, ==, 0);
    g_assert_cmpuint(vs.mappings, ==, 0);
    g_assert_cmpuint(vs.handles, ==, 0);
    be.ops->destroy(be.state);
}

static void test_window_reach(void)
{
    window_reach();
    /* the same where the driver sets access one mapping at a time (the sink's runs fall
     * back to one call per granule) */
    fake_vmm_one_access_per_map(1);
    window_reach();
    fake_vmm_one_access_per_map(0);
}

typedef struct {
    kbackend *be;
    kbackend_devptr p;
    int rc;
} slow_alloc;

static void *alloc_thread(void *arg)
{
    slow_alloc *a = arg;
    kbackend_error e = {0};
    a->rc = a->be->ops->mem_alloc(a->be->state, 1, 12u << 20, &a->p, &e);
    return NULL;
}

/* While one tenant's allocation maps memory and its window's sink (slow driver calls),
 * another tenant's window, which every launch of it reads, is answered at once: the
 * mapping runs without the windows' lock. */
static void test_window_alloc_not_blocking(void)
{
    kcuda_config cfg;
    windowed_config(&cfg);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_window w;
    for (uint32_t d = 1; d <= 2; d++)     /* both windows made (one granule each) first */
        g_assert_cmpint(be.ops->domain_window(be.state, d, &w, &e), ==, 0);
    fake_vmm_map_delay(200000);     /* 12 MiB: one chunk and two sink granules, 0.6 s */
    slow_alloc a = {&be, 0, -1};
    pthread_t t;
    int64_t t0 = g_get_monotonic_time();
    g_assert_cmpint(pthread_create(&t, NULL, alloc_thread, &a), ==, 0);
    g_usleep(100000);               /* the allocation is under way */
    int64_t t1 = g_get_monotonic_time();
    g_assert_cmpint(be.ops->domain_window(be.state, 2, &w, &e), ==, 0);
    int64_t waited = g_get_monotonic_time() - t1;
    pthread_join(t, NULL);
    int64_t took = g_get_monotonic_time() - t0;
    fake_vmm_map_delay(0);
    g_test_message("the allocation took %.0f ms; the other window was answered in %.1f ms",
                   took / 1e3, waited / 1e3);
    g_assert_cmpint(a.rc, ==, 0);
    /* a functional check with a wide margin, not a speed target: held up by the lock, the
     * answer would come when the allocation ends, 0.5 s later */
    g_assert_cmpint(took, >=, 500000);
    g_assert_cmpint(waited, <, 250000);
    g_assert_cmpint(be.ops->mem_free(be.state, a.p, &e), ==, 0);
    be.ops->destroy(be.state);
}

static void test_modules(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    fake_stats before, after;
    fake_driver_stats(&before);
    size_t len;
    char *text = sliced_module_text(&len);
    kbackend_module *m1, *m2;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, text, len, &m1, &e), ==, 0);
    char *copy = g_memdup2(text, len);  /* not NUL-terminated: len bytes only */
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, copy, len, &m2, &e), ==, 0);
    g_assert_true(m1 == m2);
    kbackend_module *m3;                   /* with its NUL: still the same text */
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, text, len + 1, &m3, &e), ==, 0);
    g_assert_true(m3 == m1);
    g_assert_cmpint(be.ops->module_unload(st, m3, &e), ==, 0);
    fake_driver_stats(&after);
    g_assert_cmpuint(after.module_loads - before.module_loads, ==, 1);
    kcuda_stats s;
    kcuda_get_stats(st, &s);
    g_assert_cmpuint(s.module_cache_hits, ==, 2);

    kbackend_function *f, *f2;
    kbackend_func_info info;
    g_assert_cmpint(be.ops->function_get(st, m1, "count_blocks", &f, &info, &e), ==, 0);
    g_assert_cmpuint(info.regs_per_thread, ==, 32);
    g_assert_cmpuint(info.max_threads_per_block, ==, 1024);
    g_assert_cmpint(be.ops->function_get(st, m1, "count_blocks", &f2, NULL, &e), ==, 0);
    g_assert_true(f == f2);
    g_assert_cmpint(be.ops->function_get(st, m1, "nothing", &f, NULL, &e), ==, KBACKEND_ENOTFOUND);
    g_assert_nonnull(strstr(e.msg, "nothing"));
    /* a name as long as a templated C++ kernel's is looked up, not refused */
    char *long_name = g_strnfill(3000, 'z');
    g_assert_cmpint(be.ops->function_get(st, m1, long_name, &f, NULL, &e), ==,
                    KBACKEND_ENOTFOUND);
    g_free(long_name);

    g_assert_cmpint(be.ops->module_unload(st, m1, &e), ==, 0);
    g_assert_cmpint(be.ops->function_get(st, m2, "fault", &f, NULL, &e), ==, 0); /* still held */
    g_assert_cmpint(be.ops->module_unload(st, m2, &e), ==, 0);
    g_assert_cmpint(be.ops->module_unload(st, m2, &e), ==, KBACKEND_EINVAL);

    const char bad[] = ".version 7.5\n.target sm_75\n.address_size 64\n.visible .entry x(\n";
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, bad, strlen(bad), &m1, &e), ==, KBACKEND_EMODULE);
    g_assert_nonnull(strstr(e.msg, "CUDA_ERROR_INVALID_PTX"));
    g_assert_nonnull(strstr(e.msg, "line"));
    const char nul[] = ".version 7.5\0junk";
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, nul, sizeof(nul), &m1, &e), ==, KBACKEND_EMODULE);
    g_free(copy);
    free(text);
    be.ops->destroy(be.state);
}

static void copy_sync(const kbackend *be, int to_device, kbackend_devptr d, void *h,
                      uint64_t bytes)
{
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    kbackend_error e = {0};
    g_assert_cmpint(to_device ? be->ops->copy_h2d(be->state, d, h, bytes, on_done, &t, &e)
                              : be->ops->copy_d2h(be->state, h, d, bytes, on_done, &t, &e),
                    ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpuint(w.failed, ==, 0);
}

/* A text with module variables is loaded anew for each load (each tenant's variables are
 * its own); its variables are reachable by copies until their module goes. */
static void test_module_variables(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    fake_stats before, after;
    fake_driver_stats(&before);
    /* an extern declaration defines no variable */
    gchar *text = g_strconcat(kcuda_test_vars_ptx, ".extern .global .align 4 .u32 elsewhere;\n",
                              NULL);
    size_t len = strlen(text);
    kbackend_module *m1, *m2;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, text, len, &m1, &e), ==, 0);
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, text, len, &m2, &e), ==, 0);
    g_assert_true(m1 != m2);
    fake_driver_stats(&after);
    g_assert_cmpuint(after.module_loads - before.module_loads, ==, 2);
    kcuda_stats s;
    kcuda_get_stats(st, &s);
    g_assert_cmpuint(s.module_cache_hits, ==, 0);
    g_assert_cmpuint(s.modules_private, ==, 2);

    kbackend_devptr c1, c2, t1;
    uint64_t bytes = 0;
    g_assert_cmpint(be.ops->global_get(st, m1, "counter", &c1, &bytes, &e), ==, 0);
    g_assert_cmpuint(bytes, ==, 4);
    g_assert_cmpint(be.ops->global_get(st, m2, "counter", &c2, NULL, &e), ==, 0);
    g_assert_cmphex(c1, !=, c2);
    g_assert_cmpint(be.ops->global_get(st, m1, "table", &t1, &bytes, &e), ==, 0);
    g_assert_cmpuint(bytes, ==, 16);
    kbackend_devptr again;                 /* a second look-up: the same range */
    g_assert_cmpint(be.ops->global_get(st, m1, "counter", &again, NULL, &e), ==, 0);
    g_assert_cmphex(again, ==, c1);
    g_assert_cmpint(be.ops->global_get(st, m1, "elsewhere", NULL, NULL, &e), ==, KBACKEND_ENOTFOUND);
    g_assert_cmpint(be.ops->global_get(st, m1, "nothing", NULL, NULL, &e), ==, KBACKEND_ENOTFOUND);
    g_assert_nonnull(strstr(e.msg, "nothing"));
    g_assert_cmpint(be.ops->global_get(st, m1, "", NULL, NULL, &e), ==, KBACKEND_EINVAL);

    /* each load's counter holds what was written to it */
    uint32_t v1 = 0x11111111, v2 = 0x22222222, r1 = 0, r2 = 0;
    copy_sync(&be, 1, c1, &v1, 4);
    copy_sync(&be, 1, c2, &v2, 4);
    copy_sync(&be, 0, c1, &r1, 4);
    copy_sync(&be, 0, c2, &r2, 4);
    g_assert_cmphex(r1, ==, v1);
    g_assert_cmphex(r2, ==, v2);
    uint8_t tab[16] = {1, 2, 3}, tab_back[16] = {0};
    copy_sync(&be, 1, t1, tab, 16);
    copy_sync(&be, 0, t1, tab_back, 16);
    g_assert_cmpmem(tab, 16, tab_back, 16);
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    g_assert_cmpint(be.ops->copy_h2d(st, c1, &v1, 8, on_done, &t, &e), ==, KBACKEND_EINVAL);

    /* unloaded: its variables are no longer reachable; the other load's still are */
    g_assert_cmpint(be.ops->module_unload(st, m1, &e), ==, 0);
    g_assert_cmpint(be.ops->copy_h2d(st, c1, &v1, 4, on_done, &t, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpint(be.ops->global_get(st, m1, "counter", NULL, NULL, &e), ==, KBACKEND_EINVAL);
    copy_sync(&be, 0, c2, &r2, 4);
    g_assert_cmphex(r2, ==, v2);
    g_assert_cmpuint(w.done, ==, 0);

    /* a text without variables stays shared and has none to give */
    size_t plen;
    char *plain = sliced_module_text(&plen);
    kbackend_module *p1, *p2;
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, plain, plen, &p1, &e), ==, 0);
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, plain, plen, &p2, &e), ==, 0);
    g_assert_true(p1 == p2);
    g_assert_cmpint(be.ops->global_get(st, p1, "counter", NULL, NULL, &e), ==, KBACKEND_ENOTFOUND);
    free(plain);
    g_free(text);
    be.ops->destroy(be.state);          /* unloads m2 and p1 */
}

/* use_vars reads an initialised table through a computed address and bumps a counter,
 * as sinf reads __cudart_i2opi_f and a program its __device__ variables. */
static const char window_vars_ptx[] =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .global .align 4 .u32 counter = 7;\n"
    ".global .align 4 .b8 tbl[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
    ".const .align 8 .b8 table[16];\n"
    ".visible .entry use_vars(.param .u64 out)\n{\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<4>;\n"
    "  mov.u32 %r1, %tid.x;\n  and.b32 %r1, %r1, 1;\n  mul.wide.u32 %rd1, %r1, 4;\n"
    "  mov.u64 %rd2, tbl;\n  add.s64 %rd3, %rd2, %rd1;\n  ld.global.u32 %r2, [%rd3];\n"
    "  atom.global.add.u32 %r2, [counter], %r2;\n  ret;\n}\n";

/* The text as the daemon gives it to a backend with windows: fenced. */
static char *fenced_vars_text(void)
{
    kptx_module *m;
    kptx_error pe = {0};
    unsigned n = 0;
    g_assert_cmpint(kptx_parse(window_vars_ptx, strlen(window_vars_ptx), &m, &pe), ==, 0);
    g_assert_cmpint(kptx_fence_verdict(m, "use_vars", KPTX_FENCE_VARS_OUTSIDE, pe.message,
                                       sizeof(pe.message), &pe), ==, 0);
    g_assert_nonnull(strstr(pe.message, "outside the tenant's window"));   /* before */
    g_assert_cmpint(kptx_fence_module(m, KPTX_FENCE_VARS_OUTSIDE | KPTX_FENCE_VARS_RELOCATED,
                                      &n, &pe), ==, 0);
    g_assert_cmpuint(n, ==, 1);
    char *text;
    size_t len;
    g_assert_cmpint(kptx_print(m, &text, &len, &pe), ==, 0);
    kptx_module_free(m);
    return text;
}

static int in_window(const kbackend_window *w, kbackend_devptr p, uint64_t bytes)
{
    return p >= w->base && p + bytes <= w->base + w->size;
}

/* With windows, a tenant's module variables live in its window: the driver gets a text
 * without their declarations whose uses are window addresses (still masked by the
 * fence), global_get answers those addresses, the initial values are there (the rest of
 * the mapping zeroed), each load has its own, and unloading gives the block back. */
static void test_module_variables_window(void)
{
    kcuda_config cfg;
    windowed_config(&cfg);
    kbackend be = open_backend_cfg(&cfg);
    void *st = be.state;
    kbackend_device_info info;
    g_assert_cmpint(be.ops->device_info(st, &info, NULL), ==, 0);
    g_assert_cmpint(info.module_vars_outside, ==, 1);
    g_assert_cmpint(info.module_vars_relocated, ==, 1);
    char *text = fenced_vars_text();
    kbackend_window w[3];
    kbackend_module *m[3];
    kbackend_devptr c[3], t[3];
    kbackend_error e = {0};
    uint64_t bytes = 0;
    for (uint32_t d = 1; d <= 2; d++) {
        g_assert_cmpint(be.ops->domain_window(st, d, &w[d], &e), ==, 0);
        g_assert_cmpint(be.ops->module_load_ptx(st, d, text, strlen(text), &m[d], &e), ==, 0);
        g_assert_cmpint(be.ops->global_get(st, m[d], "counter", &c[d], &bytes, &e), ==, 0);
        g_assert_cmpuint(bytes, ==, 4);
        g_assert_true(in_window(&w[d], c[d], 4));
        g_assert_cmpint(be.ops->global_get(st, m[d], "tbl", &t[d], &bytes, &e), ==, 0);
        g_assert_cmpuint(bytes, ==, 8);
        g_assert_true(in_window(&w[d], t[d], 8));
    }
    /* the driver's text: no declaration left, the window address in its place, every
     * global access still masked (one and.b64 per access, and one for the mask of their
     * width, computed as the kernel starts) */
    char *jit = fake_driver_last_ptx(), addr[32];
    g_assert_nonnull(jit);
    g_assert_null(strstr(jit, ".u32 counter"));
    g_assert_null(strstr(jit, "tbl"));
    g_snprintf(addr, sizeof(addr), "%" G_GUINT64_FORMAT, (guint64)t[2]);
    g_assert_nonnull(strstr(jit, addr));
    g_assert_nonnull(strstr(jit, ".const .align 8 .b8 table[16]"));    /* .const stays */
    unsigned ands = 0;
    for (const char *p = jit; (p = strstr(p, "and.b64")); p++)
        ands++;
    g_assert_cmpuint(ands, ==, 3);
    free(jit);
    /* initial values, and each load's own storage */
    uint32_t v = 0;
    uint8_t tab[8] = {0}, want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    copy_sync(&be, 0, c[1], &v, 4);
    g_assert_cmpuint(v, ==, 7);
    copy_sync(&be, 0, t[2], tab, 8);
    g_assert_cmpmem(tab, 8, want, 8);
    v = 99;
    copy_sync(&be, 1, c[1], &v, 4);
    copy_sync(&be, 0, c[2], &v, 4);
    g_assert_cmpuint(v, ==, 7);
    /* the rest of the block's 2 MiB mapping is zeroed, not the fake's dirty 0xa5 (the
     * fake's device memory is this process's) */
    const uint8_t *tail = (const uint8_t *)(uintptr_t)c[2];
    for (size_t i = 12; i < (2u << 20); i++)
        if (tail[i])
            g_error("byte %zu of the variables' mapping is 0x%02x", i, tail[i]);
    /* a module without a domain keeps the driver's placement */
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, text, strlen(text), &m[0], &e), ==, 0);
    g_assert_cmpint(be.ops->global_get(st, m[0], "counter", &c[0], NULL, &e), ==, 0);
    g_assert_false(in_window(&w[1], c[0], 4) || in_window(&w[2], c[0], 4));
    fake_vmm_stats before, after;
    fake_vmm_get_stats(&before);
    for (uint32_t d = 0; d <= 2; d++)
        g_assert_cmpint(be.ops->module_unload(st, m[d], &e), ==, 0);
    fake_vmm_get_stats(&after);
    /* the two blocks' memory goes back (their addresses get the window's sink) */
    g_assert_cmpuint(before.handles - after.handles, ==, 2);
    g_assert_cmpuint(before.mappings, ==, after.mappings);
    for (uint32_t d = 1; d <= 2; d++)
        be.ops->domain_release(st, d);
    fake_vmm_get_stats(&after);
    g_assert_cmpuint(after.reservations, ==, 0);
    free(text);
    be.ops->destroy(st);
}

/* A cluster launch and a cooperative one go to the driver whole with their attributes
 * (cuLaunchKernelEx) and run every block once; sliced, they are refused. */
static void test_launch_attrs(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    kernels k = load_kernels(&be);
    const unsigned grid[3] = {4, 2, 1};
    kbackend_devptr counts;
    kbackend_error e = {0};
    fake_stats fs;
    g_assert_cmpint(be.ops->mem_alloc(st, 0, 8 * 4, &counts, &e), ==, 0);
    waiter w;
    waiter_init(&w);
    count_params p = {.counts = counts, .tag = 1};
    kbackend_slice s = count_launch(&k, grid, &p);
    s.cluster[0] = 2;
    s.cluster[1] = 2;
    s.cluster[2] = 1;
    ticket t1 = {&w, 0, 1}, t2 = {&w, 0, 2};
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &t1, &e), ==, 0);
    waiter_wait(&w, 1);
    fake_driver_stats(&fs);
    g_assert_cmpuint(fs.last_cluster[0], ==, 2);
    g_assert_cmpuint(fs.last_cluster[1], ==, 2);
    g_assert_cmpuint(fs.last_cooperative, ==, 0);
    s.cluster[0] = s.cluster[1] = 0;
    s.cooperative = 1;
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &t2, &e), ==, 0);
    waiter_wait(&w, 2);
    fake_driver_stats(&fs);
    g_assert_cmpuint(fs.last_cooperative, ==, 1);
    g_assert_cmpuint(fs.last_cluster[0], ==, 1);
    g_assert_cmpuint(w.failed, ==, 0);
    uint32_t *c = read_counts(&be, counts, 8);
    for (int i = 0; i < 8; i++)
        g_assert_cmpuint(c[i], ==, 2);
    g_free(c);
    s.fn = k.count_sliced;
    s.sliced = 1;
    s.count = 4;
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &t2, &e), ==, KBACKEND_EINVAL);
    be.ops->destroy(st);
}

/* A 3-D grid run whole on lane 0, then as random slices over every lane: each block is
 * counted twice, never more, and each lane completes in submission order. */
static void test_launch_whole_and_slices(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    kernels k = load_kernels(&be);
    const unsigned grid[3] = {7, 5, 3};
    const size_t total = 105;
    kbackend_devptr counts;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->mem_alloc(st, 0, total * 4, &counts, &e), ==, 0);
    waiter w;
    waiter_init(&w);
    ticket zero = {&w, 0, 0};
    uint64_t before = be.ops->now_ns(st);
    g_assert_cmpint(be.ops->memset_d8(st, counts, 0, total * 4, on_done, &zero, &e), ==, 0);
    waiter_wait(&w, 1);

    count_params p = {.counts = counts, .tag = 1, .padding = 0xdeadbeef};
    kbackend_slice s = count_launch(&k, grid, &p);
    ticket tickets[64];
    unsigned n = 0;
    tickets[n] = (ticket){&w, 0, 1};
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &tickets[n++], &e), ==, 0);
    fake_stats fs;
    fake_driver_stats(&fs);
    g_assert_cmpuint(fs.last_param_bytes, ==, 12);     /* the tail padding was dropped */
    g_assert_cmpuint(fs.last_grid[1], ==, 5);

    GRand *rng = g_rand_new_with_seed(42);
    s.fn = k.count_sliced;
    s.sliced = 1;
    for (uint64_t first = 0; first < total; n++) {
        uint64_t want = (uint64_t)g_rand_int_range(rng, 1, 20);
        uint64_t count = MIN(want, total - first);
        s.first = first;
        s.count = count;
        s.lane = (unsigned)g_rand_int_range(rng, 0, LANES);
        tickets[n] = (ticket){&w, s.lane, 2 + n};
        if (be.ops->launch(st, &s, on_done, &tickets[n], &e))
            g_error("slice [%llu, +%llu): %s", (unsigned long long)first, (unsigned long long)count, e.msg);
        fake_driver_stats(&fs);
        g_assert_cmpuint(fs.last_grid[0], ==, count);
        g_assert_cmpuint(fs.last_grid[1], ==, 1);
        g_assert_cmpuint(fs.last_param_bytes, ==, 28);
        first += count;
    }
    g_rand_free(rng);
    waiter_wait(&w, 1 + n);
    g_assert_cmpuint(w.failed, ==, 0);
    g_assert_true(w.times_ok);
    g_assert_true(w.order_ok);
    g_assert_cmpuint(w.min_start, >=, before);
    g_assert_cmpuint(w.max_end, <=, be.ops->now_ns(st));
    uint32_t *host = read_counts(&be, counts, total);
    for (size_t i = 0; i < total; i++)
        if (host[i] != 2)
            g_error("block %zu counted %u times", i, host[i]);
    g_free(host);

    /* refused launches: no completion */
    unsigned done = w.done;
    s.lane = LANES;
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &zero, &e), ==, KBACKEND_EINVAL);
    s.lane = 0;
    s.fn = k.count;
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &zero, &e), ==, KBACKEND_EINVAL);
    s = count_launch(&k, grid, &p);
    s.params_size = 8;
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &zero, &e), ==, KBACKEND_EINVAL);
    g_assert_nonnull(strstr(e.msg, "takes 12"));
    g_assert_cmpuint(w.done, ==, done);
    kcuda_stats ks;
    kcuda_get_stats(st, &ks);
    g_assert_cmpuint(ks.launches, ==, n);
    be.ops->destroy(be.state);
}

/* A slice with a residency cap goes to the device one wave (cap x SMs blocks) per launch,
 * in order on its lane, each block once; without a cap it is one launch. */
static void test_capped_slice_waves(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    kernels k = load_kernels(&be);
    const unsigned grid[3] = {700, 1, 1};
    const size_t total = 700, first = 50, count = 600;    /* 132 SMs: 5 waves at cap 1 */
    kbackend_devptr counts;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->mem_alloc(st, 0, total * 4, &counts, &e), ==, 0);
    waiter w;
    waiter_init(&w);
    ticket t0 = {&w, 0, 0};
    g_assert_cmpint(be.ops->memset_d8(st, counts, 0, total * 4, on_done, &t0, &e), ==, 0);
    waiter_wait(&w, 1);
    count_params p = {.counts = counts, .tag = 1, .padding = 0xdeadbeef};
    kbackend_slice s = count_launch(&k, grid, &p);
    s.fn = k.count_sliced;
    s.sliced = 1;
    s.first = first;
    s.count = count;
    s.max_blocks_per_sm = 1;
    fake_stats before, after;
    fake_driver_stats(&before);
    ticket t1 = {&w, 0, 1};
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &t1, &e), ==, 0);
    waiter_wait(&w, 2);
    fake_driver_stats(&after);
    g_assert_cmpuint(after.launches - before.launches, ==, 5);
    g_assert_cmpuint(after.last_grid[0], ==, count - 4 * 132);
    s.max_blocks_per_sm = 0;                /* no cap: one launch */
    ticket t2 = {&w, 0, 2};
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &t2, &e), ==, 0);
    waiter_wait(&w, 3);
    fake_driver_stats(&before);
    g_assert_cmpuint(before.launches - after.launches, ==, 1);
    g_assert_cmpuint(w.failed, ==, 0);
    uint32_t *host = read_counts(&be, counts, total);
    for (size_t i = 0; i < total; i++)
        if (host[i] != (i >= first && i < first + count ? 2u : 0u))
            g_error("block %zu counted %u times", i, host[i]);
    g_free(host);
    be.ops->destroy(be.state);
}

/* Two kernels side by side: the fake runs streams without contention, so each runs at its
 * own slice rate (s blocks per FAKE_LAUNCH_NS + s x FAKE_BLOCK_NS), and alone at its whole
 * rate (N blocks per FAKE_LAUNCH_NS + N x FAKE_BLOCK_NS). */
static void test_trial(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    kernels k = load_kernels(&be);
    kbackend_devptr counts;
    g_assert_cmpint(be.ops->mem_alloc(st, 0, 2640 * 4, &counts, NULL), ==, 0);
    count_params p = {.counts = counts};
    kbackend_trial t = {.blocks_per_sm = {1, 2}};
    t.kernel[0] = count_launch(&k, (const unsigned[3]){1320, 1, 1}, &p);
    t.kernel[1] = count_launch(&k, (const unsigned[3]){2640, 1, 1}, &p);
    kbackend_trial_result r;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->trial(st, &t, &r, &e), ==, 0);
    const double n[2] = {1320, 2640}, size[2] = {132, 264};
    for (int i = 0; i < 2; i++) {
        double alone = n[i] / (FAKE_LAUNCH_NS + FAKE_BLOCK_NS * n[i]) * 1e9;
        double together = size[i] / (FAKE_LAUNCH_NS + FAKE_BLOCK_NS * size[i]) * 1e9;
        g_assert_cmpfloat_with_epsilon(r.alone_bps[i], alone, alone * 1e-4);
        g_assert_cmpfloat_with_epsilon(r.together_bps[i], together, together * 1e-4);
    }
    t.blocks_per_sm[1] = 0;
    g_assert_cmpint(be.ops->trial(st, &t, &r, &e), ==, KBACKEND_EINVAL);
    kcuda_stats ks;
    kcuda_get_stats(st, &ks);
    g_assert_cmpuint(ks.trials, ==, 1);
    be.ops->destroy(be.state);
}

/* Timed runs: whole, N blocks take FAKE_LAUNCH_NS + N x FAKE_BLOCK_NS; as slices of s,
 * one FAKE_LAUNCH_NS per slice more. */
static void test_time_launch(void)
{
    kbackend be = open_backend(NULL);
    kernels k = load_kernels(&be);
    kbackend_devptr counts;
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 1000 * 4, &counts, NULL), ==, 0);
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->memset_d8(be.state, counts, 0, 4000, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    count_params p = {.counts = counts};
    kbackend_slice s = count_launch(&k, (const unsigned[3]){10, 10, 10}, &p);
    double whole, sliced;
    g_assert_cmpint(kcuda_time_launch(be.state, &s, 0, 3, &whole, &e), ==, 0);
    g_assert_cmpfloat_with_epsilon(whole, FAKE_LAUNCH_NS + 1000 * FAKE_BLOCK_NS, 1);
    g_assert_cmpint(kcuda_time_launch(be.state, &s, 300, 3, &sliced, &e), ==, 0);
    g_assert_cmpfloat_with_epsilon(sliced, 4 * FAKE_LAUNCH_NS + 1000 * FAKE_BLOCK_NS, 1);
    uint32_t *host = read_counts(&be, counts, 1000);
    for (int i = 0; i < 1000; i++)      /* 4 runs whole, 4 as slices */
        g_assert_cmpuint(host[i], ==, 8);
    g_free(host);
    s.fn = k.count_sliced;
    g_assert_cmpint(kcuda_time_launch(be.state, &s, 0, 3, &whole, &e), ==, KBACKEND_EINVAL);
    be.ops->destroy(be.state);
}

/* Times of the slices of one lane, by ticket. */
typedef struct {
    waiter *w;
    uint64_t start_ns, end_ns;
} timed_ticket;

static void on_timed(void *user, const kbackend_completion *c)
{
    timed_ticket *t = user;
    t->start_ns = c->start_ns;
    t->end_ns = c->end_ns;
    ticket plain = {t->w, 0, 0};
    on_done(&plain, c);
}

/* Six slices queued in one lane: the events recorded for them, and their times. */
static unsigned run_six_slices(int timed_events, timed_ticket t[6], waiter *w)
{
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    cfg.lanes = LANES;
    cfg.timed_events = timed_events;
    cfg.shared_end_max = 1;     /* each its own event (shared ones: test_shared_end_events) */
    kbackend be = open_backend_cfg(&cfg);
    kernels k = load_kernels(&be);
    kbackend_devptr counts;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 600 * 4, &counts, &e), ==, 0);
    count_params p = {.counts = counts};
    kbackend_slice s = count_launch(&k, (const unsigned[3]){600, 1, 1}, &p);
    s.fn = k.count_sliced;
    s.sliced = 1;
    waiter_init(w);
    fake_stats before, after;
    fake_driver_stats(&before);
    for (unsigned i = 0; i < 6; i++) {
        s.first = 100 * i;
        s.count = 10 * (i + 1);
        t[i] = (timed_ticket){w, 0, 0};
        g_assert_cmpint(be.ops->launch(be.state, &s, on_timed, &t[i], &e), ==, 0);
    }
    waiter_wait(w, 6);
    fake_driver_stats(&after);
    g_assert_cmpuint(w->failed, ==, 0);
    be.ops->destroy(be.state);
    return after.event_records - before.event_records;
}

/* By default a slice records one event, without timing, and its times are the host's: one
 * after the other in its lane. With timed_events, two timing events give the device's
 * times (the fake's: exactly the launch's cost). */
static void test_completion_events(void)
{
    timed_ticket t[6];
    waiter w;
    g_assert_cmpuint(run_six_slices(0, t, &w), ==, 6);
    g_assert_true(w.times_ok);
    for (unsigned i = 1; i < 6; i++)
        g_assert_cmpuint(t[i].start_ns, >=, t[i - 1].end_ns);
    g_assert_cmpuint(run_six_slices(1, t, &w), ==, 12);
    for (unsigned i = 0; i < 6; i++)
        g_assert_cmpfloat_with_epsilon((double)(t[i].end_ns - t[i].start_ns),
                                       FAKE_LAUNCH_NS + 10 * (i + 1) * FAKE_BLOCK_NS, 2);
}

/* A completion thread polls a job's end for spin_us before it sleeps in the driver: with
 * the end not ready for 20 polls, a long window sees it by polling alone; no window, or no
 * poller allowed (max_spinners 0), goes to the driver's sleeping wait without polling. */
static void test_completion_spin(void)
{
    const unsigned spins[] = {0, 2000000, 2000000}, spinners[] = {1, 1, 0};
    for (unsigned i = 0; i < 3; i++) {
        kcuda_config cfg;
        kcuda_config_default(&cfg);
        cfg.lanes = LANES;
        cfg.spin_us = spins[i];
        cfg.max_spinners = spinners[i];
        kbackend be = open_backend_cfg(&cfg);
        kernels k = load_kernels(&be);
        count_params p = {0};
        kbackend_slice s = count_launch(&k, (const unsigned[3]){4, 1, 1}, &p);
        kbackend_error e = {0};
        g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 16, &p.counts, &e), ==, 0);
        waiter w;
        waiter_init(&w);
        ticket t = {&w, 0, 0};
        fake_stats before, after;
        fake_driver_stats(&before);
        fake_driver_events_busy(20);
        g_assert_cmpint(be.ops->launch(be.state, &s, on_done, &t, &e), ==, 0);
        waiter_wait(&w, 1);
        fake_driver_stats(&after);
        g_assert_cmpuint(w.failed, ==, 0);
        unsigned queries = after.event_queries - before.event_queries;
        unsigned syncs = after.event_syncs - before.event_syncs;
        g_test_message("spin %u us, %u spinners: %u queries, %u synchronisations", spins[i],
                       spinners[i], queries, syncs);
        int polls = spins[i] && spinners[i];
        g_assert_cmpuint(queries, ==, polls ? 21 : 0);
        g_assert_cmpuint(syncs, ==, polls ? 0 : 1);
        be.ops->destroy(be.state);
    }
}

static void test_profile_refusals(void)
{
    kbackend be = open_backend(NULL);
    kernels k = load_kernels(&be);
    count_params p = {0};
    kbackend_slice s = count_launch(&k, (const unsigned[3]){10, 1, 1}, &p);
    kbackend_profile prof;
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    kbackend_error e = {0};
    s.sliced = 1;                       /* the unsliced function as a slice */
    g_assert_cmpint(be.ops->profile(be.state, &s, &prof, on_done, &t, &e), ==, KBACKEND_EINVAL);
    s.sliced = 0;
    s.fn = k.count_sliced;              /* and the other way round */
    g_assert_cmpint(be.ops->profile(be.state, &s, &prof, on_done, &t, &e), ==, KBACKEND_EINVAL);
    s.fn = k.count_sliced;
    s.sliced = 1;
    s.first = 3;
    s.count = 7;
    g_assert_cmpint(be.ops->profile(be.state, &s, &prof, on_done, &t, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpuint(w.done, ==, 0);
    be.ops->destroy(be.state);
}

/* A whole (unsliced) launch is accepted for profiling (it would run once, as its own
 * profile: blocks_done = count). Without counters (no CUPTI device here) it completes with
 * KBACKEND_EUNSUPPORTED and runs no block, and later profiles are refused at once. */
static void test_profile_whole_without_counters(void)
{
    kbackend be = open_backend(NULL);
    kernels k = load_kernels(&be);
    kbackend_devptr d;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 40, &d, &e), ==, 0);
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    g_assert_cmpint(be.ops->memset_d8(be.state, d, 0, 40, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    count_params p = {.counts = d};
    kbackend_slice s = count_launch(&k, (const unsigned[3]){10, 1, 1}, &p);
    kbackend_profile prof = {.blocks_done = 99};
    g_assert_cmpint(be.ops->profile(be.state, &s, &prof, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 2);
    g_assert_cmpint(w.last_status, ==, KBACKEND_EUNSUPPORTED);
    uint32_t *host = read_counts(&be, d, 10);
    for (int i = 0; i < 10; i++)
        g_assert_cmpuint(host[i], ==, 0);
    g_free(host);
    g_assert_cmpint(be.ops->profile(be.state, &s, &prof, on_done, &t, &e), ==,
                    KBACKEND_EUNSUPPORTED);
    be.ops->destroy(be.state);
}

/* ---- kernel time limits ---- */

typedef struct notes {
    pthread_mutex_t lock;
    char text[512];
    unsigned n;
    uint64_t first_ns;          /* when the first note came */
    unsigned unstoppable;       /* kcuda_config.unstoppable calls, and its first tenant */
    char unstoppable_tenant[64];
} notes;

static void on_unstoppable(void *user, const char *tenant)
{
    notes *n = user;
    pthread_mutex_lock(&n->lock);
    if (!n->unstoppable++)
        g_strlcpy(n->unstoppable_tenant, tenant, sizeof(n->unstoppable_tenant));
    pthread_mutex_unlock(&n->lock);
}

static void on_note(void *user, const char *msg)
{
    notes *n = user;
    pthread_mutex_lock(&n->lock);
    if (!n->n++) {
        g_strlcpy(n->text, msg, sizeof(n->text));
        n->first_ns = g_get_monotonic_time() * 1000u;
    }
    pthread_mutex_unlock(&n->lock);
}

static const char stall_ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
                                ".visible .entry stall(.param .u32 ms)\n{\n    ret;\n}\n";

/* The stall kernel, loaded in *mod. */
static kbackend_function *load_stall(const kbackend *be, kbackend_module **mod)
{
    kbackend_error e = {0};
    kbackend_function *fn;
    g_assert_cmpint(be->ops->module_load_ptx(be->state, 0, stall_ptx, strlen(stall_ptx), mod,
                                             &e), ==, 0);
    g_assert_cmpint(be->ops->function_get(be->state, *mod, "stall", &fn, NULL, &e), ==, 0);
    return fn;
}

/* stall for ms on lane, under limit_ns for tenant (of domain); *w counts the completion. */
static void launch_stall(const kbackend *be, kbackend_function *fn, unsigned lane, uint32_t ms,
                         uint64_t limit_ns, const char *tenant, uint32_t domain, ticket *t)
{
    kbackend_slice s = {.fn = fn, .grid = {1, 1, 1}, .block = {32, 1, 1}, .count = 1,
                        .params = &ms, .params_size = sizeof(ms), .lane = lane,
                        .time_limit_ns = limit_ns, .tenant = tenant, .domain = domain};
    kbackend_error e = {0};
    g_assert_cmpint(be->ops->launch(be->state, &s, on_done, t, &e), ==, 0);
}

/* A burst of count launches on lane 0 behind a stall of ms, of domain per launch, under
 * limit_ns; the end events recorded for the burst (not the stall's). */
static unsigned burst_behind_stall(const kbackend *be, const kernels *k, kbackend_function *stall,
                                   unsigned n, const uint32_t *domains, uint64_t limit_ns,
                                   kbackend_devptr counts)
{
    waiter w;
    waiter_init(&w);
    ticket ts = {&w, 0, 0}, t[32];
    g_assert_cmpuint(n, <=, 32);
    /* a limit that keeps its own end event (under 20 x 8 x 10 s), never reached */
    launch_stall(be, stall, 0, 100, 1000000000000ull, "staller", 0, &ts);
    fake_stats before, after;
    fake_driver_stats(&before);
    count_params p = {.counts = counts};
    kbackend_slice s = count_launch(k, (const unsigned[3]){4, 1, 1}, &p);
    kbackend_error e = {0};
    for (unsigned i = 0; i < n; i++) {
        t[i] = (ticket){&w, 0, i + 1};
        s.domain = domains[i];
        s.time_limit_ns = limit_ns;
        g_assert_cmpint(be->ops->launch(be->state, &s, on_done, &t[i], &e), ==, 0);
    }
    fake_driver_stats(&after);
    unsigned at_issue = after.event_records - before.event_records;
    waiter_wait(&w, n + 1);
    fake_driver_stats(&after);
    g_assert_cmpuint(w.failed, ==, 0);
    g_assert_true(w.order_ok);
    g_assert_true(w.times_ok);
    g_test_message("%u launches: %u end events at issue, %u in all", n, at_issue,
                   after.event_records - before.event_records);
    return after.event_records - before.event_records;
}

/* Short launches queued in a lane share end events: at most shared_end_max of one tenant
 * per event, none across tenants; each still completes in order and runs its blocks; a
 * kernel never seen, or one under a tight time limit, has its own. */
static void test_shared_end_events(void)
{
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    cfg.lanes = LANES;
    cfg.shared_end_max = 8;
    cfg.shared_end_short_ns = 10000000000ull;   /* a loaded machine's wake-ups count short */
    kbackend be = open_backend_cfg(&cfg);
    kernels k = load_kernels(&be);
    kbackend_module *mod;
    kbackend_function *stall = load_stall(&be, &mod);
    kbackend_devptr counts;
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 16, &counts, &e), ==, 0);
    uint32_t one[32], pairs[32];
    for (unsigned i = 0; i < 32; i++) {
        one[i] = 1;
        pairs[i] = 1 + (i / 4) % 2;     /* four of tenant 1, four of tenant 2, ... */
    }
    /* never seen before: each its own */
    g_assert_cmpuint(burst_behind_stall(&be, &k, stall, 3, one, 0, counts), ==, 3);
    g_assert_cmpuint(burst_behind_stall(&be, &k, stall, 20, one, 0, counts), ==, 3);
    g_assert_cmpuint(burst_behind_stall(&be, &k, stall, 16, pairs, 0, counts), ==, 4);
    g_assert_cmpuint(burst_behind_stall(&be, &k, stall, 4, one, 1000000, counts), ==, 4);
    uint32_t *c = read_counts(&be, counts, 4);
    for (unsigned i = 0; i < 4; i++)
        g_assert_cmpuint(c[i], ==, 3 + 20 + 16 + 4);
    g_free(c);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* How long a stall kernel of 60 ms of real time ran, by its completion. A timed slice
 * reports its time by its timing events (the fake's device time: the launch's few virtual
 * microseconds), an untimed one from its issue to its end seen. */
static uint64_t stall_reported_ns(int timed)
{
    kbackend be = open_backend_cfg(NULL);
    kbackend_module *mod;
    kbackend_function *stall = load_stall(&be, &mod);
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 0, 0};
    uint32_t ms = 60;
    kbackend_slice s = {.fn = stall, .grid = {1, 1, 1}, .block = {32, 1, 1}, .count = 1,
                        .params = &ms, .params_size = sizeof(ms), .timed = timed};
    kbackend_error e = {0};
    g_assert_cmpint(be.ops->launch(be.state, &s, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpuint(w.failed, ==, 0);
    g_assert_true(w.times_ok);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
    return w.max_end - w.min_start;
}

static void test_timed_slice(void)
{
    g_assert_cmpuint(stall_reported_ns(0), >=, 50000000);
    g_assert_cmpuint(stall_reported_ns(1), <, 5000000);
}

/* An allocation while a kernel of its tenant runs does not reuse a hole of the reach (the
 * sink would be unmapped for a moment under that kernel): it goes past the reach. With
 * nothing running the hole is reused. */
static void test_window_busy_no_remap(void)
{
    kcuda_config cfg;
    windowed_config(&cfg);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_window w;
    kbackend_devptr a, b, c, d;
    kbackend_module *mod;
    kbackend_function *stall = load_stall(&be, &mod);
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1u << 20, &a, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1u << 20, &b, &e), ==, 0);
    g_assert_cmpint(be.ops->mem_free(be.state, a, &e), ==, 0);     /* a hole at the base */
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    g_assert_cmpuint(w.reach, ==, 4u << 20);
    waiter wt;
    waiter_init(&wt);
    ticket t = {&wt, 0, 0};
    launch_stall(&be, stall, 0, 300, 0, "runner", 1, &t);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1u << 20, &c, &e), ==, 0);
    g_assert_cmpuint(c, >=, w.base + w.reach);                    /* not into the hole */
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    assert_mapped(w.base, w.reach);
    waiter_wait(&wt, 1);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1u << 20, &d, &e), ==, 0);
    g_assert_cmpuint(d, ==, w.base);                               /* quiet: the hole */
    kbackend_devptr all[] = {b, c, d};
    for (unsigned i = 0; i < 3; i++)
        g_assert_cmpint(be.ops->mem_free(be.state, all[i], &e), ==, 0);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* A window full past its reach, with a hole in it: an allocation while a kernel of the
 * domain runs waits for the kernel to end before it takes the hole (remapping it under the
 * kernel could let the kernel fault the shared context), then takes it. */
static void test_window_full_waits(void)
{
    kcuda_config cfg;
    windowed_config(&cfg);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_window w;
    kbackend_module *mod;
    kbackend_function *stall = load_stall(&be, &mod);
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    enum { FILL = 8 };                          /* 8 granules of 2 MiB: the whole window */
    kbackend_devptr p[FILL], d;
    for (unsigned i = 0; i < FILL; i++)
        g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1u << 20, &p[i], &e), ==, 0);
    g_assert_cmpint(be.ops->mem_free(be.state, p[0], &e), ==, 0);   /* the hole */
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    g_assert_cmpuint(w.reach, ==, 16u << 20);
    waiter wt;
    waiter_init(&wt);
    ticket t = {&wt, 0, 0};
    launch_stall(&be, stall, 0, 300, 0, "runner", 1, &t);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 1, 1u << 20, &d, &e), ==, 0);
    pthread_mutex_lock(&wt.lock);
    unsigned done = wt.done;
    pthread_mutex_unlock(&wt.lock);
    g_assert_cmpuint(done, ==, 1);              /* the kernel had ended */
    g_assert_cmpuint(d, ==, w.base);
    assert_mapped(w.base, w.reach);
    p[0] = d;
    for (unsigned i = 0; i < FILL; i++)
        g_assert_cmpint(be.ops->mem_free(be.state, p[i], &e), ==, 0);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* cfg's notes, and the kernels it cannot stop, go to n. */
static void notes_to(kcuda_config *cfg, notes *n)
{
    cfg->note = on_note;
    cfg->note_user = n;
    cfg->unstoppable = on_unstoppable;
    cfg->unstoppable_user = n;
}

/* The default configuration with LANES lanes, its notes to n. */
static void plain_noted_config(kcuda_config *cfg, notes *n)
{
    kcuda_config_default(cfg);
    cfg->lanes = LANES;
    notes_to(cfg, n);
}

/* A launch past its tenant's limit is told to the operator at the deadline, naming the
 * tenant, while it still runs (the GPU cannot stop it: the fake's stall goes on), and
 * completes with a time-limit message; launches within their limits, or without one,
 * complete normally. */
static void test_time_limit(void)
{
    notes n = {.lock = PTHREAD_MUTEX_INITIALIZER};
    kcuda_config cfg;
    plain_noted_config(&cfg, &n);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_module *mod;
    kbackend_function *fn = load_stall(&be, &mod);

    waiter slow, fine;
    waiter_init(&slow);
    waiter_init(&fine);
    ticket ts = {&slow, 0, 0}, tf = {&fine, 1, 0}, tu = {&fine, 2, 0};
    uint64_t start = g_get_monotonic_time() * 1000u;
    launch_stall(&be, fn, 0, 600, 150000000u, "slowpoke", 0, &ts);
    launch_stall(&be, fn, 1, 300, 5000000000u, "patient", 0, &tf);
    launch_stall(&be, fn, 2, 300, 0, "unlimited", 0, &tu);
    waiter_wait(&fine, 2);
    g_assert_cmpuint(fine.failed, ==, 0);
    waiter_wait(&slow, 1);
    uint64_t end = g_get_monotonic_time() * 1000u;
    g_assert_cmpint(slow.last_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(slow.last_msg, "time limit"));
    g_test_message("%s", slow.last_msg);

    pthread_mutex_lock(&n.lock);
    g_assert_cmpuint(n.n, ==, 1);
    g_assert_nonnull(strstr(n.text, "'slowpoke'"));
    g_assert_nonnull(strstr(n.text, "stall"));
    g_assert_cmpuint(n.first_ns - start, >=, 150000000u);
    g_assert_cmpuint(n.first_ns, <, end);      /* told while it still ran */
    /* it polls no cancel word: said so, and the owner of the context told it cannot stop */
    g_assert_nonnull(strstr(n.text, "cannot be stopped"));
    g_assert_cmpuint(n.unstoppable, ==, 1);
    g_assert_cmpstr(n.unstoppable_tenant, ==, "slowpoke");
    pthread_mutex_unlock(&n.lock);
    g_test_message("note after %.3f s, completion after %.3f s: %s",
                   (double)(n.first_ns - start) / 1e9, (double)(end - start) / 1e9, n.text);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* An operator's new limit holds the launch running now (it started without one), counted
 * from its start: lowered past its age, it is told at once and completes as a time-out;
 * another tenant's launch is left alone. */
static void test_time_limit_lowered(void)
{
    notes n = {.lock = PTHREAD_MUTEX_INITIALIZER};
    kcuda_config cfg;
    plain_noted_config(&cfg, &n);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_module *mod;
    kbackend_function *fn = load_stall(&be, &mod);
    g_assert_nonnull(be.ops->domain_time_limit);

    waiter runaway, other;
    waiter_init(&runaway);
    waiter_init(&other);
    ticket tr = {&runaway, 0, 0}, to = {&other, 1, 0};
    launch_stall(&be, fn, 0, 600, 0, "runaway", 5, &tr);
    launch_stall(&be, fn, 1, 400, 0, "other", 6, &to);
    g_usleep(150000);
    uint64_t lowered = g_get_monotonic_time() * 1000u;
    be.ops->domain_time_limit(be.state, 5, 50000000u);   /* 50 ms: past already */
    waiter_wait(&other, 1);
    g_assert_cmpuint(other.failed, ==, 0);
    waiter_wait(&runaway, 1);
    g_assert_cmpint(runaway.last_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(runaway.last_msg, "time limit of 0.05 s"));
    pthread_mutex_lock(&n.lock);
    g_assert_cmpuint(n.n, ==, 1);
    g_assert_nonnull(strstr(n.text, "'runaway'"));
    g_assert_cmpuint(n.first_ns - lowered, <, 100000000u);   /* at once, not at its end */
    pthread_mutex_unlock(&n.lock);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* windowed_config whose notes, and kernels it cannot stop, go to n. */
static void noted_config(kcuda_config *cfg, notes *n)
{
    windowed_config(cfg);
    notes_to(cfg, n);
}

/* A kernel of a domain with control words that does not poll them (unfenced: SASS in an
 * isolated worker) and runs past its limit: the watchdog raises the word all the same but
 * says it cannot be stopped, and tells kcuda_config.unstoppable (an isolated worker then
 * ends its context). Before, it claimed the kernel cancelled. Another such kernel of the
 * domain that ends meanwhile completes normally. */
static void test_unfenced_past_limit(void)
{
    notes n = {.lock = PTHREAD_MUTEX_INITIALIZER};
    kcuda_config cfg;
    noted_config(&cfg, &n);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_window w;
    g_assert_cmpint(be.ops->domain_window(be.state, 2, &w, &e), ==, 0);
    kbackend_module *mod;
    kbackend_function *fn;
    g_assert_cmpint(be.ops->module_load_ptx(be.state, 2, stall_ptx, strlen(stall_ptx), &mod,
                                            &e), ==, 0);
    g_assert_cmpint(be.ops->function_get(be.state, mod, "stall", &fn, NULL, &e), ==, 0);
    waiter wt;
    waiter_init(&wt);
    ticket t = {&wt, 0, 0};
    uint32_t ms = 400;
    kbackend_slice s = {.fn = fn, .grid = {1, 1, 1}, .block = {32, 1, 1}, .count = 1,
                        .params = &ms, .params_size = sizeof(ms), .time_limit_ns = 100000000u,
                        .tenant = "sass", .domain = 2, .polls_cancel = 0};
    g_assert_cmpint(be.ops->launch(be.state, &s, on_done, &t, &e), ==, 0);
    /* beside it, a shorter one of the same domain without a limit: it ends while the word
     * is raised, but polled none of it, so it is not "stopped early" */
    waiter wb;
    waiter_init(&wb);
    ticket tb = {&wb, 1, 0};
    uint32_t ms_b = 250;
    kbackend_slice sb = s;
    sb.params = &ms_b;
    sb.lane = 1;
    sb.time_limit_ns = 0;
    g_assert_cmpint(be.ops->launch(be.state, &sb, on_done, &tb, &e), ==, 0);
    waiter_wait(&wb, 1);
    g_assert_cmpuint(wb.failed, ==, 0);
    waiter_wait(&wt, 1);
    g_assert_cmpint(wt.last_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(wt.last_msg, "time limit"));
    pthread_mutex_lock(&n.lock);
    g_assert_nonnull(strstr(n.text, "cannot be stopped"));
    g_assert_cmpuint(n.unstoppable, ==, 1);
    g_assert_cmpstr(n.unstoppable_tenant, ==, "sass");
    pthread_mutex_unlock(&n.lock);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* ---- control words (kernelet/ptx.h, "Control") ---- */

static const char control_ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
    ".visible .entry spin(.param .u64 cancel, .param .u64 fault)\n{\n    ret;\n}\n"
    ".visible .entry asserts(.param .u64 cancel, .param .u64 fault)\n{\n    ret;\n}\n"
    ".visible .entry overflows(.param .u64 cancel, .param .u64 fault)\n{\n    ret;\n}\n";

/* fn of domain on lane with the domain's control words as its parameters. */
static void launch_controlled(const kbackend *be, kbackend_function *fn, uint32_t domain,
                              unsigned lane, uint64_t limit_ns, ticket *t)
{
    kbackend_window w;
    kbackend_error e = {0};
    g_assert_cmpint(be->ops->domain_window(be->state, domain, &w, &e), ==, 0);
    g_assert_cmpuint(w.cancel, !=, 0);
    g_assert_cmpuint(w.fault, !=, 0);
    uint64_t params[2] = {w.cancel, w.fault};
    kbackend_slice s = {.fn = fn, .grid = {1, 1, 1}, .block = {32, 1, 1}, .count = 1,
                        .params = params, .params_size = sizeof(params), .lane = lane,
                        .time_limit_ns = limit_ns, .tenant = "t", .domain = domain,
                        .polls_cancel = 1};
    g_assert_cmpint(be->ops->launch(be->state, &s, on_done, t, &e), ==, 0);
}

/* With windows every domain has control words. A kernel that writes the assert code fails
 * its launch with a "device assert" message. A kernel that spins until cancelled (on the
 * fake driver, as a fenced loop polling the word would) is cancelled at its tenant's limit
 * and fails with the time-limit message while another tenant's launch beside it completes;
 * without the cancel the spin never ends (the test then times out). The domain's next
 * launch runs normally: the word was lowered, and the fault word read once. cancel_all
 * (the daemon stops) ends a spin that has no limit and refuses new work. */
static void test_control_words(void)
{
    notes n = {.lock = PTHREAD_MUTEX_INITIALIZER};
    kcuda_config cfg;
    noted_config(&cfg, &n);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    kbackend_module *mod, *smod;
    kbackend_function *spin, *asserts, *stall;
    g_assert_cmpint(be.ops->module_load_ptx(be.state, 0, control_ptx, strlen(control_ptx),
                                            &mod, &e), ==, 0);
    g_assert_cmpint(be.ops->function_get(be.state, mod, "spin", &spin, NULL, &e), ==, 0);
    g_assert_cmpint(be.ops->function_get(be.state, mod, "asserts", &asserts, NULL, &e), ==, 0);
    stall = load_stall(&be, &smod);

    waiter w, other;
    waiter_init(&w);
    waiter_init(&other);
    ticket t = {&w, 0, 0}, to = {&other, 1, 0};
    launch_controlled(&be, asserts, 1, 0, 0, &t);
    waiter_wait(&w, 1);
    g_assert_cmpint(w.last_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(w.last_msg, "device assert"));

    uint64_t start = g_get_monotonic_time() * 1000u;
    launch_controlled(&be, spin, 1, 0, 100000000u, &t);      /* 0.1 s */
    launch_stall(&be, stall, 1, 200, 0, "other", 0, &to);    /* another tenant, beside it */
    waiter_wait(&other, 1);
    g_assert_cmpuint(other.failed, ==, 0);
    waiter_wait(&w, 2);
    uint64_t took = g_get_monotonic_time() * 1000u - start;
    g_assert_cmpint(w.last_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(w.last_msg, "time limit"));
    g_assert_cmpuint(took, >=, 100000000u);
    g_assert_cmpuint(took, <, 5000000000u);
    pthread_mutex_lock(&n.lock);
    g_assert_nonnull(strstr(n.text, "device assert"));      /* the first note: the assert */
    g_assert_cmpuint(n.n, ==, 2);                           /* and the time limit's */
    g_assert_cmpuint(n.unstoppable, ==, 0);                 /* it polls: cancelled */
    pthread_mutex_unlock(&n.lock);
    g_test_message("cancelled after %.3f s", (double)took / 1e9);

    launch_controlled(&be, asserts, 1, 0, 0, &t);            /* runs: the word was lowered */
    waiter_wait(&w, 3);
    g_assert_nonnull(strstr(w.last_msg, "device assert"));   /* its own fault, not a cancel */

    /* the stack guard's fault fails the launch as the others do, named in the message */
    kbackend_function *overflows;
    g_assert_cmpint(be.ops->function_get(be.state, mod, "overflows", &overflows, NULL, &e), ==, 0);
    launch_controlled(&be, overflows, 1, 0, 0, &t);
    waiter_wait(&w, 4);
    g_assert_cmpint(w.last_status, ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(w.last_msg, "stack overflow"));

    /* the daemon stops: a spin without a limit ends, and nothing new is taken */
    launch_controlled(&be, spin, 2, 0, 0, &t);
    be.ops->cancel_all(be.state);
    waiter_wait(&w, 5);
    g_assert_cmpint(w.last_status, ==, KBACKEND_ELAUNCH);
    kbackend_slice s = {.fn = stall, .grid = {1, 1, 1}, .block = {32, 1, 1}, .count = 1,
                        .params = &(uint32_t){0}, .params_size = 4, .lane = 1};
    g_assert_cmpint(be.ops->launch(be.state, &s, on_done, &to, &e), ==, KBACKEND_ELAUNCH);
    g_assert_cmpint(be.ops->module_unload(be.state, smod, &e), ==, 0);
    g_assert_cmpint(be.ops->module_unload(be.state, mod, &e), ==, 0);
    be.ops->destroy(be.state);
}

/* A trap or assert during a trial fails the trial, and stays the trial's: the domain's
 * next launch does not take it for its own. */
static void test_control_trial(void)
{
    kcuda_config cfg;
    windowed_config(&cfg);
    kbackend be = open_backend_cfg(&cfg);
    kbackend_error e = {0};
    size_t len;
    char *text = sliced_text_of(control_ptx, 3, &len);
    kbackend_module *mod;
    kbackend_function *asserts;
    g_assert_cmpint(be.ops->module_load_ptx(be.state, 1, text, len, &mod, &e), ==, 0);
    free(text);
    g_assert_cmpint(be.ops->function_get(be.state, mod, "asserts", &asserts, NULL, &e), ==, 0);
    kernels k = load_kernels(&be);
    kbackend_window w;
    g_assert_cmpint(be.ops->domain_window(be.state, 1, &w, &e), ==, 0);
    uint64_t words[2] = {w.cancel, w.fault};
    kbackend_devptr counts;
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 264 * 4, &counts, NULL), ==, 0);
    count_params p = {.counts = counts};
    kbackend_trial t = {.blocks_per_sm = {1, 1}};
    t.kernel[0] = (kbackend_slice){.fn = asserts, .grid = {264, 1, 1}, .block = {32, 1, 1},
                                   .count = 264, .params = words, .params_size = 16,
                                   .domain = 1};
    t.kernel[1] = count_launch(&k, (const unsigned[3]){264, 1, 1}, &p);
    kbackend_trial_result r;
    g_assert_cmpint(be.ops->trial(be.state, &t, &r, &e), ==, KBACKEND_ELAUNCH);
    g_assert_nonnull(strstr(e.msg, "during a trial"));
    /* the fault word was cleared: the domain's next launch ends without a fault */
    waiter wt;
    waiter_init(&wt);
    ticket tk = {&wt, 0, 0};
    kbackend_slice s = {.fn = k.count, .grid = {1, 1, 1}, .block = {32, 1, 1}, .count = 1,
                        .params = &p, .params_size = sizeof(p), .domain = 1};
    g_assert_cmpint(be.ops->launch(be.state, &s, on_done, &tk, &e), ==, 0);
    waiter_wait(&wt, 1);
    g_assert_cmpuint(wt.failed, ==, 0);
    be.ops->destroy(be.state);
}

/* A fault loses the context: the launch completes with KBACKEND_ELOST naming the error,
 * everything after is refused, and a new backend (after destroy resets the context) works. */
static void test_fault(void)
{
    kbackend be = open_backend(NULL);
    void *st = be.state;
    kernels k = load_kernels(&be);
    uint32_t value = 5;
    kbackend_slice s = {.fn = k.fault, .grid = {1, 1, 1}, .block = {1, 1, 1}, .count = 1,
                     .params = &value, .params_size = 4, .lane = 1};
    waiter w;
    waiter_init(&w);
    ticket t = {&w, 1, 0};
    kbackend_error e = {0};
    g_assert_false(kcuda_broken(st, NULL, 0));
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 1);
    g_assert_cmpint(w.last_status, ==, KBACKEND_ELOST);
    g_assert_nonnull(strstr(w.last_msg, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    g_assert_nonnull(strstr(w.last_msg, "fault"));
    char why[256];
    g_assert_true(kcuda_broken(st, why, sizeof(why)));
    g_assert_nonnull(strstr(why, "ILLEGAL_ADDRESS"));
    g_assert_cmpint(be.ops->launch(st, &s, on_done, &t, &e), ==, KBACKEND_ELOST);
    g_assert_nonnull(strstr(e.msg, "context lost"));
    kbackend_devptr d;
    g_assert_cmpint(be.ops->mem_alloc(st, 0, 64, &d, &e), ==, KBACKEND_ELOST);
    g_assert_cmpint(be.ops->module_load_ptx(st, 0, kcuda_test_vars_ptx, strlen(kcuda_test_vars_ptx),
                                            &k.mod, &e), ==, KBACKEND_ELOST);
    g_assert_cmpuint(w.done, ==, 1);
    fake_stats before, after;
    fake_driver_stats(&before);
    be.ops->destroy(st);
    fake_driver_stats(&after);
    g_assert_cmpuint(after.ctx_resets, ==, before.ctx_resets + 1);

    be = open_backend(NULL);
    k = load_kernels(&be);
    g_assert_cmpint(be.ops->mem_alloc(be.state, 0, 4, &d, &e), ==, 0);
    count_params p = {.counts = d};
    s = count_launch(&k, (const unsigned[3]){1, 1, 1}, &p);
    g_assert_cmpint(be.ops->memset_d8(be.state, d, 0, 4, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 2);     /* copies and launches are not ordered with each other */
    g_assert_cmpint(be.ops->launch(be.state, &s, on_done, &t, &e), ==, 0);
    waiter_wait(&w, 3);
    g_assert_cmpint(w.last_status, ==, 0);
    uint32_t *host = read_counts(&be, d, 1);
    g_assert_cmpuint(host[0], ==, 1);
    g_free(host);
    be.ops->destroy(be.state);
}

/* The control words themselves (control.c), on the fake driver, whose device memory is host
 * memory at the same address: the cancel word is in device memory and clear there (a
 * fresh allocation holds 0xa5 bytes), a profiled launch's copy is the host one, a cancel
 * while a profile runs stores only to that copy (no driver call), one otherwise reaches
 * the device word, and the launch's end lowers both. */
static void test_control_word_places(void)
{
    CUdevice dev;
    CUcontext ctx;
    g_assert_cmpint(cuInit(0), ==, CUDA_SUCCESS);
    g_assert_cmpint(cuDeviceGet(&dev, 0), ==, CUDA_SUCCESS);
    g_assert_cmpint(cuDevicePrimaryCtxRetain(&ctx, dev), ==, CUDA_SUCCESS);
    g_assert_cmpint(cuCtxSetCurrent(ctx), ==, CUDA_SUCCESS);
    kcuda_control *c;
    kbackend_error e = {0};
    uint64_t cancel, fault;
    g_assert_cmpint(kcuda_control_new(&c, &e), ==, 0);
    g_assert_cmpint(kcuda_control_words(c, 7, &cancel, &fault, &e), ==, 0);
    volatile uint32_t *on_device = (volatile uint32_t *)(uintptr_t)cancel;
    g_assert_cmpuint(*on_device, ==, 0);
    uint64_t replayed = kcuda_control_replay_cancel(c, 7, cancel);
    g_assert_cmpuint(replayed, !=, 0);
    g_assert_cmpuint(replayed, !=, cancel);
    g_assert_cmpuint(kcuda_control_replay_cancel(c, 7, cancel + 4), ==, 0);
    g_assert_cmpuint(kcuda_control_replay_cancel(c, 8, cancel), ==, 0);
    volatile uint32_t *on_host = (volatile uint32_t *)(uintptr_t)replayed;
    kcuda_control_launch_begin(c, 7);
    kcuda_control_replaying(c, 1);
    g_assert_cmpint(kcuda_control_cancel(c, 7), ==, 0);
    g_assert_cmpuint(*on_host, ==, 1);
    g_assert_cmpuint(*on_device, ==, 0);
    kcuda_control_replaying(c, 0);
    g_assert_cmpint(kcuda_control_cancel(c, 7), ==, 0);
    g_assert_cmpuint(*on_device, ==, 1);
    uint32_t code;
    int cancelled;
    kcuda_control_launch_end(c, 7, &code, &cancelled);
    g_assert_true(cancelled);
    g_assert_cmpuint(code, ==, 0);
    g_assert_cmpuint(*on_device, ==, 0);
    g_assert_cmpuint(*on_host, ==, 0);
    kcuda_control_free(c);
    cuDevicePrimaryCtxRelease(dev);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/backend-fake/device-and-calibration", test_device_and_calibration);
    g_test_add_func("/cuda/backend-fake/overhead-measured", test_overhead_measured);
    g_test_add_func("/cuda/backend-fake/memory", test_memory);
    g_test_add_func("/cuda/backend-fake/memory-cleared", test_memory_cleared);
    g_test_add_func("/cuda/backend-fake/host-register", test_host_register);
    g_test_add_func("/cuda/backend-fake/vmm", test_vmm);
    g_test_add_func("/cuda/backend-fake/time-limit-lowered", test_time_limit_lowered);
    g_test_add_func("/cuda/backend-fake/tensor-map", test_tensor_map);
    g_test_add_func("/cuda/backend-fake/windows", test_windows);
    g_test_add_func("/cuda/backend-fake/window-reach", test_window_reach);
    g_test_add_func("/cuda/backend-fake/window-busy-no-remap", test_window_busy_no_remap);
    g_test_add_func("/cuda/backend-fake/window-full-waits", test_window_full_waits);
    g_test_add_func("/cuda/backend-fake/window-alloc-not-blocking",
                    test_window_alloc_not_blocking);
    g_test_add_func("/cuda/backend-fake/control-words", test_control_words);
    g_test_add_func("/cuda/backend-fake/control-word-places", test_control_word_places);
    g_test_add_func("/cuda/backend-fake/control-trial", test_control_trial);
    g_test_add_func("/cuda/backend-fake/module-variables-window", test_module_variables_window);
    g_test_add_func("/cuda/backend-fake/modules", test_modules);
    g_test_add_func("/cuda/backend-fake/module-variables", test_module_variables);
    g_test_add_func("/cuda/backend-fake/launch-whole-and-slices", test_launch_whole_and_slices);
    g_test_add_func("/cuda/backend-fake/launch-attrs", test_launch_attrs);
    g_test_add_func("/cuda/backend-fake/stack-top-measured", test_stack_top_measured);
    g_test_add_func("/cuda/backend-fake/capped-slice-waves", test_capped_slice_waves);
    g_test_add_func("/cuda/backend-fake/trial", test_trial);
    g_test_add_func("/cuda/backend-fake/time-launch", test_time_launch);
    g_test_add_func("/cuda/backend-fake/completion-events", test_completion_events);
    g_test_add_func("/cuda/backend-fake/shared-end-events", test_shared_end_events);
    g_test_add_func("/cuda/backend-fake/timed-slice", test_timed_slice);
    g_test_add_func("/cuda/backend-fake/completion-spin", test_completion_spin);
    g_test_add_func("/cuda/backend-fake/profile-refusals", test_profile_refusals);
    g_test_add_func("/cuda/backend-fake/profile-whole-without-counters",
                    test_profile_whole_without_counters);
    g_test_add_func("/cuda/backend-fake/fault", test_fault);
    g_test_add_func("/cuda/backend-fake/time-limit", test_time_limit);
    g_test_add_func("/cuda/backend-fake/unfenced-past-limit", test_unfenced_past_limit);
    return g_test_run();
}
