/* kernelet-workloads: the registry, create/verify/destroy of every kernel at small size,
 * and the argument lists. Each kernel's launch is emulated here on the CPU by reading its
 * arguments exactly as the PTX entry would (buffer indices, scalars, grid), so a wrong
 * argument order or size breaks these tests; verify must accept the emulated output and
 * reject a corrupted one. If KERNELET_BENCH_PTX_DIR is set, the PTX files built by nvcc
 * are checked against the argument kinds too. */
#include "kernelet/workload.h"
#include "reference/pc.h"
#include "reference/sad.h"
#include "reference/st.h"
#include "reference/tea.h"

#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const names[] = {"pc", "sad", "spmv", "st", "mm", "mriq", "bs", "tea"};

/* ---- argument access as a kernel sees its parameters ---- */

static void *buf(const kw_instance *in, unsigned arg)
{
    g_assert_cmpuint(arg, <, in->n_args);
    g_assert_cmpint(in->args[arg].kind, ==, KW_ARG_BUFFER);
    g_assert_cmpuint(in->args[arg].value.buffer, <, in->n_buffers);
    return in->buffers[in->args[arg].value.buffer].host;
}

static uint32_t u32(const kw_instance *in, unsigned arg)
{
    g_assert_cmpuint(arg, <, in->n_args);
    g_assert_cmpint(in->args[arg].kind, ==, KW_ARG_U32);
    return in->args[arg].value.u32;
}

static float f32(const kw_instance *in, unsigned arg)
{
    g_assert_cmpuint(arg, <, in->n_args);
    g_assert_cmpint(in->args[arg].kind, ==, KW_ARG_F32);
    return in->args[arg].value.f32;
}

static uint64_t n_threads(const kw_instance *in)
{
    return kw_total_blocks(in) * in->block[0] * in->block[1] * in->block[2];
}

/* ---- CPU emulation of each kernel, driven only by the instance ---- */

static void emulate_pc(kw_instance *in)
{
    const uint32_t *next = buf(in, 0);
    uint32_t *out = buf(in, 1), mask = u32(in, 2), steps = u32(in, 3), nt = u32(in, 4);
    g_assert_cmpuint(n_threads(in), >=, nt);
    for (uint32_t t = 0; t < nt; t++)
        out[t] = pc_walk(next, mask, t, steps);
}

static void emulate_sad(kw_instance *in)
{
    const uint8_t *cur = buf(in, 0), *ref = buf(in, 1);
    uint32_t *sads = buf(in, 2), w = u32(in, 3), h = u32(in, 4), r = u32(in, 5);
    g_assert_cmpuint(in->grid[0], ==, w / 8);
    g_assert_cmpuint(in->grid[1], ==, h / 8);
    uint32_t npos = sad_positions(r), span = 2 * r + 1;
    for (uint32_t by = 0; by < in->grid[1]; by++)
        for (uint32_t bx = 0; bx < in->grid[0]; bx++)
            for (uint32_t p = 0; p < npos; p++)
                sads[(by * in->grid[0] + bx) * npos + p] =
                    sad_block(cur, ref, w, h, bx, by, (int)(p % span) - (int)r, (int)(p / span) - (int)r);
}

static void emulate_spmv(kw_instance *in)
{
    const uint32_t *rp = buf(in, 0), *ci = buf(in, 1);
    const float *va = buf(in, 2), *x = buf(in, 3);
    float *y = buf(in, 4);
    uint32_t rows = u32(in, 5);
    g_assert_cmpuint(n_threads(in), >=, rows);
    for (uint32_t r = 0; r < rows; r++) {
        float acc = 0; /* float, in the kernel's order */
        for (uint32_t j = rp[r]; j < rp[r + 1]; j++)
            acc += va[j] * x[ci[j]];
        y[r] = acc;
    }
}

static void emulate_st(kw_instance *in)
{
    uint32_t nx = u32(in, 2), ny = u32(in, 3), nz = u32(in, 4);
    g_assert_cmpuint(in->grid[0] * in->block[0], >=, nx);
    g_assert_cmpuint(in->grid[1] * in->block[1], >=, ny);
    g_assert_cmpuint(in->grid[2] * ST_Z_PER_THREAD, >=, nz);
    st_reference(buf(in, 0), buf(in, 1), nx, ny, nz, f32(in, 5), f32(in, 6));
}

static void emulate_mm(kw_instance *in)
{
    const float *a = buf(in, 0), *b = buf(in, 1);
    float *c = buf(in, 2);
    uint32_t m = u32(in, 3), n = u32(in, 4), k = u32(in, 5);
    g_assert_cmpuint(in->grid[0] * in->block[0], ==, n);
    g_assert_cmpuint(in->grid[1] * in->block[1], ==, m);
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            float s = 0;
            for (uint32_t p = 0; p < k; p++)
                s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
}

/* As the GPU does it: phase in float, float sin and cos. */
static void emulate_mriq(kw_instance *in)
{
    const float *x = buf(in, 0), *y = buf(in, 1), *z = buf(in, 2);
    const float *kv = buf(in, 3);
    float *qr = buf(in, 4), *qi = buf(in, 5);
    uint32_t nk = u32(in, 6), nx = u32(in, 7);
    g_assert_cmpuint(n_threads(in), >=, nx);
    for (uint32_t i = 0; i < nx; i++) {
        float re = 0, im = 0;
        for (uint32_t k = 0; k < nk; k++) {
            const float *v = kv + 4 * k;
            float arg = 6.2831853071795865f * (v[0] * x[i] + v[1] * y[i] + v[2] * z[i]);
            re += v[3] * cosf(arg);
            im += v[3] * sinf(arg);
        }
        qr[i] = re;
        qi[i] = im;
    }
}

/* The kernel's float formula with the polynomial normal CDF. */
static float cnd_poly(float d)
{
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = 0.39894228f * expf(-0.5f * d * d) *
              (k * (0.31938153f + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f)))));
    return d > 0 ? 1.0f - c : c;
}

static void emulate_bs(kw_instance *in)
{
    const float *s = buf(in, 0), *x = buf(in, 1), *t = buf(in, 2);
    float *call = buf(in, 3), *put = buf(in, 4);
    float r = f32(in, 5), v0 = f32(in, 6), dv = f32(in, 7);
    uint32_t nv = u32(in, 8), n = u32(in, 9);
    g_assert_cmpuint(n_threads(in), >=, n);
    for (uint32_t i = 0; i < n; i++) {
        float sq = sqrtf(t[i]), disc = x[i] * expf(-r * t[i]), lsx = logf(s[i] / x[i]);
        float c = 0, p = 0;
        for (uint32_t j = 0; j < nv; j++) {
            float v = v0 + (float)j * dv;
            float d1 = (lsx + (r + 0.5f * v * v) * t[i]) / (v * sq), d2 = d1 - v * sq;
            float n1 = cnd_poly(d1), n2 = cnd_poly(d2);
            c += s[i] * n1 - disc * n2;
            p += disc * (1.0f - n2) - s[i] * (1.0f - n1);
        }
        call[i] = c / (float)nv;
        put[i] = p / (float)nv;
    }
}

static void emulate_tea(kw_instance *in)
{
    const uint32_t *src = buf(in, 0);
    uint32_t *dst = buf(in, 1), key[4] = {u32(in, 2), u32(in, 3), u32(in, 4), u32(in, 5)};
    uint32_t n = u32(in, 6);
    g_assert_cmpuint(n_threads(in), >=, n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v[2] = {src[2 * i], src[2 * i + 1]};
        tea_encrypt_block(v, key);
        dst[2 * i] = v[0];
        dst[2 * i + 1] = v[1];
    }
}

static void emulate(kw_instance *in)
{
    static const struct {
        const char *name;
        void (*fn)(kw_instance *);
    } table[] = {{"pc", emulate_pc},     {"sad", emulate_sad},   {"spmv", emulate_spmv},
                 {"st", emulate_st},     {"mm", emulate_mm},     {"mriq", emulate_mriq},
                 {"bs", emulate_bs},     {"tea", emulate_tea}};
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (strcmp(table[i].name, in->kernel->name) == 0) {
            table[i].fn(in);
            return;
        }
    g_assert_not_reached();
}

/* ---- tests ---- */

static void test_registry(void)
{
    size_t n = 0;
    const kw_kernel *const *all = kw_kernels(&n);
    g_assert_cmpuint(n, ==, G_N_ELEMENTS(names));
    for (size_t i = 0; i < n; i++) {
        g_assert_cmpstr(all[i]->name, ==, names[i]);
        g_assert_true(kw_find(names[i]) == all[i]);
        g_assert_nonnull(all[i]->title);
        g_assert_true(g_str_has_prefix(all[i]->entry, names[i]) || strcmp(names[i], "bs") == 0);
        char *ptx = g_strconcat(names[i], ".ptx", NULL);
        g_assert_cmpstr(all[i]->ptx_file, ==, ptx);
        g_free(ptx);
    }
    g_assert_null(kw_find("nope"));
    g_assert_null(kw_find(NULL));
    g_assert_cmpuint(kw_total_blocks(NULL), ==, 0);
}

static void test_bad_arguments(void)
{
    kw_instance in;
    char why[64];
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        const kw_kernel *k = kw_find(names[i]);
        g_assert_cmpint(k->create(NULL, KW_SIZE_SMALL, 1), ==, KW_EINVAL);
        g_assert_cmpint(k->create(&in, (kw_size)7, 1), ==, KW_EINVAL);
        g_assert_cmpint(k->verify(NULL, why, sizeof why), ==, KW_EINVAL);
        k->destroy(NULL);
    }
    /* verify of an instance of another kernel is refused. */
    const kw_kernel *tea = kw_find("tea"), *pc = kw_find("pc");
    g_assert_cmpint(tea->create(&in, KW_SIZE_SMALL, 1), ==, KW_OK);
    g_assert_cmpint(pc->verify(&in, why, sizeof why), ==, KW_EINVAL);
    tea->destroy(&in);
}

/* Flips a value in the middle of the first copy-out buffer. */
static void corrupt(kw_instance *in, unsigned *which, size_t *where, uint32_t *saved)
{
    for (unsigned b = 0; b < in->n_buffers; b++)
        if (in->buffers[b].copy_out) {
            uint32_t *w = in->buffers[b].host;
            *which = b;
            *where = in->buffers[b].size / 8;
            *saved = w[*where];
            w[*where] ^= 0x40100000u; /* large change for floats and integers alike */
            return;
        }
    g_assert_not_reached();
}

static void test_small_instance(gconstpointer data)
{
    const kw_kernel *k = kw_find((const char *)data);
    kw_instance in;
    char why[256] = "";
    g_assert_nonnull(k);
    g_assert_cmpint(k->create(&in, KW_SIZE_SMALL, 42), ==, KW_OK);
    g_assert_true(in.kernel == k);
    g_assert_cmpuint(kw_total_blocks(&in), >=, 16); /* enough blocks to slice */
    int outs = 0, ins = 0;
    for (unsigned b = 0; b < in.n_buffers; b++) {
        g_assert_nonnull(in.buffers[b].host);
        g_assert_cmpuint(in.buffers[b].size, >, 0);
        outs += in.buffers[b].copy_out;
        ins += in.buffers[b].copy_in;
    }
    g_assert_cmpint(outs, >=, 1);
    g_assert_cmpint(ins, >=, 1);

    /* Before any launch the outputs are zero and must not verify. */
    g_assert_cmpint(k->verify(&in, why, sizeof why), ==, KW_EVERIFY);
    g_assert_cmpuint(strlen(why), >, 0);

    emulate(&in);
    why[0] = '\0';
    int rc = k->verify(&in, why, sizeof why);
    if (rc != KW_OK)
        g_test_message("%s: %s", k->name, why);
    g_assert_cmpint(rc, ==, KW_OK);

    unsigned b;
    size_t at;
    uint32_t saved;
    corrupt(&in, &b, &at, &saved);
    g_assert_cmpint(k->verify(&in, why, sizeof why), ==, KW_EVERIFY);
    g_assert_nonnull(strstr(why, k->name));
    ((uint32_t *)in.buffers[b].host)[at] = saved;
    g_assert_cmpint(k->verify(&in, why, sizeof why), ==, KW_OK);
    k->destroy(&in);
    g_assert_null(in.priv);
    g_assert_cmpuint(in.n_buffers, ==, 0);
}

static void test_seeds(gconstpointer data)
{
    const kw_kernel *k = kw_find((const char *)data);
    kw_instance a, b, c;
    g_assert_cmpint(k->create(&a, KW_SIZE_SMALL, 1), ==, KW_OK);
    g_assert_cmpint(k->create(&b, KW_SIZE_SMALL, 1), ==, KW_OK);
    g_assert_cmpint(k->create(&c, KW_SIZE_SMALL, 2), ==, KW_OK);
    int differs = 0;
    for (unsigned i = 0; i < a.n_buffers; i++) {
        if (!a.buffers[i].copy_in)
            continue;
        g_assert_cmpuint(a.buffers[i].size, ==, b.buffers[i].size);
        g_assert_true(memcmp(a.buffers[i].host, b.buffers[i].host, a.buffers[i].size) == 0);
        differs |= c.buffers[i].size != a.buffers[i].size ||
                   memcmp(a.buffers[i].host, c.buffers[i].host, a.buffers[i].size) != 0;
    }
    g_assert_true(differs);
    k->destroy(&a);
    k->destroy(&b);
    k->destroy(&c);
}

/* Default sizes give every kernel at least two waves at full occupancy (2048 threads on each
 * of an H100's 132 SMs) and 528 blocks; on the H100 ncu counted 7.6 to 15.5 waves. */
static void test_default_geometry(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        const kw_kernel *k = kw_find(names[i]);
        kw_instance in;
        g_assert_cmpint(k->create(&in, KW_SIZE_DEFAULT, 3), ==, KW_OK);
        uint64_t threads = n_threads(&in), blocks = kw_total_blocks(&in);
        g_test_message("%s: %" G_GUINT64_FORMAT " blocks, %" G_GUINT64_FORMAT " threads",
                       names[i], blocks, threads);
        if (strcmp(names[i], "sad") == 0) /* 32-thread blocks: bound by 32 blocks per SM */
            g_assert_cmpuint(blocks, >=, 4ull * 132 * 32 * 3 / 4);
        else
            g_assert_cmpuint(threads, >=, 2ull * 132 * 2048);
        g_assert_cmpuint(blocks, >=, 4ull * 132);
        k->destroy(&in);
    }
}

/* The .param list of each PTX entry matches the instance's argument kinds. */
static void test_ptx_params(void)
{
    const char *dir = g_getenv("KERNELET_BENCH_PTX_DIR");
    if (!dir || !*dir) {
        g_test_skip("KERNELET_BENCH_PTX_DIR not set (no CUDA toolchain)");
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        const kw_kernel *k = kw_find(names[i]);
        char *path = g_build_filename(dir, k->ptx_file, NULL), *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_assert_nonnull(strstr(text, ".target sm_75")); /* compute_75, JIT-able for sm_90 */
        char *head = g_strdup_printf(".entry %s(", k->entry);
        const char *p = strstr(text, head);
        g_assert_nonnull(p);
        const char *end = strchr(p, ')');
        g_assert_nonnull(end);
        kw_instance in;
        g_assert_cmpint(k->create(&in, KW_SIZE_SMALL, 1), ==, KW_OK);
        unsigned n = 0;
        for (const char *q = strstr(p, ".param"); q && q < end; q = strstr(q + 1, ".param"), n++) {
            g_assert_cmpuint(n, <, in.n_args);
            const char *want = NULL;
            switch (in.args[n].kind) {
            case KW_ARG_BUFFER:
            case KW_ARG_U64: want = ".param .u64"; break;
            case KW_ARG_U32: want = ".param .u32"; break;
            case KW_ARG_F32: want = ".param .f32"; break;
            case KW_ARG_F64: want = ".param .f64"; break;
            }
            g_assert_true(strncmp(q, want, strlen(want)) == 0);
        }
        g_assert_cmpuint(n, ==, in.n_args);
        k->destroy(&in);
        g_free(head);
        g_free(text);
        g_free(path);
    }
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Each kernel's fatbin is what a default nvcc 13 build embeds: one sm_75 ELF and one
 * compute_75 PTX entry (fatbin layout in docs: magic, version, header size, payload size,
 * then entries of kind, version, header size, payload size, ..., architecture). */
static void test_fatbins(void)
{
    const char *dir = g_getenv("KERNELET_BENCH_PTX_DIR");
    if (!dir || !*dir) {
        g_test_skip("KERNELET_BENCH_PTX_DIR not set (no CUDA toolchain)");
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        char *file = g_strconcat(names[i], ".fatbin", NULL);
        char *path = g_build_filename(dir, file, NULL);
        gchar *data = NULL;
        gsize len = 0;
        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        const unsigned char *d = (const unsigned char *)data;
        g_assert_cmpuint(len, >=, 16);
        g_assert_cmphex(le(d, 4), ==, 0xBA55ED50u);
        uint64_t hsize = le(d + 6, 2), end = hsize + le(d + 8, 8);
        g_assert_cmpuint(end, <=, len);
        int elf = 0, ptx = 0;
        for (uint64_t off = hsize; off + 0x20 <= end;) {
            unsigned kind = (unsigned)le(d + off, 2), arch = (unsigned)le(d + off + 0x1c, 4);
            uint64_t eh = le(d + off + 4, 4), ep = le(d + off + 8, 8);
            g_assert_cmpuint(arch, ==, 75);
            elf += kind == 2;
            ptx += kind == 1;
            g_assert_cmpuint(eh, >=, 0x20);
            off += eh + ep;
        }
        g_assert_cmpint(elf, ==, 1);
        g_assert_cmpint(ptx, ==, 1);
        g_free(data);
        g_free(path);
        g_free(file);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/workloads/registry", test_registry);
    g_test_add_func("/bench/workloads/bad-arguments", test_bad_arguments);
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        char *p = g_strdup_printf("/bench/workloads/small/%s", names[i]);
        g_test_add_data_func(p, names[i], test_small_instance);
        g_free(p);
        p = g_strdup_printf("/bench/workloads/seeds/%s", names[i]);
        g_test_add_data_func(p, names[i], test_seeds);
        g_free(p);
    }
    g_test_add_func("/bench/workloads/default-geometry", test_default_geometry);
    g_test_add_func("/bench/workloads/ptx-params", test_ptx_params);
    g_test_add_func("/bench/workloads/fatbins", test_fatbins);
    return g_test_run();
}
