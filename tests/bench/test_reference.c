/* CPU references and input generators of the eight benchmark kernels, checked against
 * hand-computed cases, published values and independent formulations. */
#include "reference/bench_compare.h"
#include "reference/bs.h"
#include "reference/mm.h"
#include "reference/mriq.h"
#include "reference/pc.h"
#include "reference/sad.h"
#include "reference/spmv.h"
#include "reference/st.h"
#include "reference/tea.h"

#include <glib.h>
#include <math.h>
#include <string.h>

/* ---- TEA ---- */

static void test_tea_known_answer(void)
{
    /* The widely published all-zero vector: key 0, plaintext 0. */
    uint32_t key[4] = {0, 0, 0, 0}, v[2] = {0, 0};
    tea_encrypt_block(v, key);
    g_assert_cmphex(v[0], ==, 0x41ea3a0a);
    g_assert_cmphex(v[1], ==, 0x94baa940);
    tea_decrypt_block(v, key);
    g_assert_cmphex(v[0], ==, 0);
    g_assert_cmphex(v[1], ==, 0);
}

static void test_tea_round_trip(void)
{
    enum { N = 512 };
    uint32_t in[2 * N], out[2 * N], key[4];
    tea_generate(in, N, key, 7);
    tea_reference(in, out, N, key);
    size_t changed = 0;
    for (size_t i = 0; i < N; i++) {
        uint32_t v[2] = {out[2 * i], out[2 * i + 1]};
        changed += v[0] != in[2 * i];
        tea_decrypt_block(v, key);
        g_assert_cmphex(v[0], ==, in[2 * i]);
        g_assert_cmphex(v[1], ==, in[2 * i + 1]);
    }
    g_assert_cmpuint(changed, >, N - 4);
    /* One flipped key bit changes the ciphertext. */
    uint32_t v[2] = {in[0], in[1]}, k2[4] = {key[0] ^ 1, key[1], key[2], key[3]};
    tea_encrypt_block(v, k2);
    g_assert_true(v[0] != out[0] || v[1] != out[1]);
}

/* ---- generators: same seed, same data; another seed, other data ---- */

static void test_generators_seeded(void)
{
    enum { N = 4096 };
    static uint32_t a[2 * N], b[2 * N];
    static float fa[3 * N], fb[3 * N];
    uint32_t ka[4], kb[4];

    tea_generate(a, N, ka, 11);
    tea_generate(b, N, kb, 11);
    g_assert_true(memcmp(a, b, sizeof a) == 0 && memcmp(ka, kb, sizeof ka) == 0);
    tea_generate(b, N, kb, 12);
    g_assert_false(memcmp(a, b, sizeof a) == 0);

    st_generate(fa, N, 3);
    st_generate(fb, N, 3);
    g_assert_true(memcmp(fa, fb, N * sizeof(float)) == 0);
    st_generate(fb, N, 4);
    g_assert_false(memcmp(fa, fb, N * sizeof(float)) == 0);

    bs_generate(fa, fa + N, fa + 2 * N, N, 5);
    bs_generate(fb, fb + N, fb + 2 * N, N, 5);
    g_assert_true(memcmp(fa, fb, sizeof fa) == 0);
    bs_generate(fb, fb + N, fb + 2 * N, N, 6);
    g_assert_false(memcmp(fa, fb, sizeof fa) == 0);

    mm_generate(fa, fa + N, 64, 64, 64, 9);
    mm_generate(fb, fb + N, 64, 64, 64, 9);
    g_assert_true(memcmp(fa, fb, 2 * N * sizeof(float)) == 0);
    mm_generate(fb, fb + N, 64, 64, 64, 10);
    g_assert_false(memcmp(fa, fb, 2 * N * sizeof(float)) == 0);

    uint8_t *ca = (uint8_t *)a, *ra = ca + N, *cb = (uint8_t *)b, *rb = cb + N;
    sad_generate(ca, ra, 64, 64, 1);
    sad_generate(cb, rb, 64, 64, 1);
    g_assert_true(memcmp(ca, cb, 2 * N) == 0);
    sad_generate(cb, rb, 64, 64, 2);
    g_assert_false(memcmp(ca, cb, 2 * N) == 0);

    uint32_t rpa[257], rpb[257];
    uint64_t na = spmv_generate_rows(rpa, 256, 8, 24, 1), nb = spmv_generate_rows(rpb, 256, 8, 24, 1);
    g_assert_cmpuint(na, ==, nb);
    g_assert_true(memcmp(rpa, rpb, sizeof rpa) == 0);
    spmv_generate_rows(rpb, 256, 8, 24, 2);
    g_assert_false(memcmp(rpa, rpb, sizeof rpa) == 0);

    pc_perm p1, p2;
    pc_perm_init(&p1, 12, 1);
    pc_perm_init(&p2, 12, 2);
    unsigned same = 0;
    for (uint32_t x = 0; x < 4096; x++)
        same += pc_perm_apply(&p1, x) == pc_perm_apply(&p2, x);
    g_assert_cmpuint(same, <, 64);
}

/* ---- pointer chasing ---- */

static void test_pc_perm_bijection(void)
{
    for (unsigned bits = PC_MIN_BITS; bits <= 16; bits += 3) {
        pc_perm p;
        pc_perm_init(&p, bits, bits * 31u);
        uint32_t n = 1u << bits;
        uint8_t *seen = g_malloc0(n);
        for (uint32_t x = 0; x < n; x++) {
            uint32_t y = pc_perm_apply(&p, x);
            g_assert_cmpuint(y, <, n);
            g_assert_cmpuint(seen[y], ==, 0);
            seen[y] = 1;
            g_assert_cmpuint(pc_perm_invert(&p, y), ==, x);
        }
        g_free(seen);
    }
}

static void test_pc_single_cycle(void)
{
    pc_perm p;
    pc_perm_init(&p, 12, 99);
    uint32_t n = 1u << 12, *next = g_new(uint32_t, n);
    pc_generate(next, &p);
    /* Following next[] from 0 visits all n elements before returning to 0. */
    uint32_t i = 0, steps = 0;
    do {
        i = next[i];
        steps++;
    } while (i != 0 && steps <= n);
    g_assert_cmpuint(steps, ==, n);
    /* Neighbours in memory are far apart in the walk: successors are scattered. */
    unsigned near = 0;
    for (uint32_t k = 0; k < n; k++)
        near += (next[k] > k ? next[k] - k : k - next[k]) < 16;
    g_assert_cmpuint(near, <, n / 64);
    /* The closed form equals the walk for every thread and several step counts. */
    for (uint32_t steps2 = 0; steps2 < 40; steps2 += 13)
        for (uint32_t t = 0; t < 2 * n; t += 7)
            g_assert_cmpuint(pc_expected(&p, t, steps2), ==, pc_walk(next, p.mask, t, steps2));
    g_free(next);
}

/* ---- matrix multiplication ---- */

static void test_mm_known(void)
{
    const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    float c[4];
    mm_reference(a, b, c, 2, 2, 2);
    g_assert_cmpfloat(c[0], ==, 19);
    g_assert_cmpfloat(c[1], ==, 22);
    g_assert_cmpfloat(c[2], ==, 43);
    g_assert_cmpfloat(c[3], ==, 50);
    /* Non-square: (1x3)(3x2). */
    const float r[] = {1, -2, 0.5f}, s[] = {2, 1, 0, 3, 4, -2};
    mm_reference(r, s, c, 1, 2, 3);
    g_assert_cmpfloat(c[0], ==, 4);
    g_assert_cmpfloat(c[1], ==, -6);
}

static void test_mm_triple_loop(void)
{
    enum { M = 32, N = 48, K = 16 };
    static float a[M * K], b[K * N], c[M * N];
    mm_generate(a, b, M, N, K, 3);
    mm_reference(a, b, c, M, N, K);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int p = 0; p < K; p++)
                s += (double)a[i * K + p] * b[p * N + j];
            g_assert_cmpfloat(c[i * N + j], ==, (float)s); /* exact: see mm.h */
        }
}

/* ---- Black-Scholes ---- */

static void test_bs_textbook(void)
{
    /* Hull's example: S 42, X 40, r 10%, sigma 20%, T 0.5: call 4.76, put 0.81. */
    double put, call = bs_price(42, 40, 0.5, 0.1, 0.2, &put);
    g_assert_cmpfloat_with_epsilon(call, 4.7594, 1e-3);
    g_assert_cmpfloat_with_epsilon(put, 0.8086, 1e-3);
}

static void test_bs_put_call_parity(void)
{
    enum { N = 2000 };
    static float s[N], x[N], t[N], c[N], p[N];
    bs_generate(s, x, t, N, 21);
    bs_reference(s, x, t, c, p, N, BS_RATE, BS_VOL0, BS_DVOL, 4);
    for (int i = 0; i < N; i++) {
        /* Parity holds for every volatility, hence for the sweep's means. */
        double want = s[i] - x[i] * exp(-(double)BS_RATE * t[i]);
        g_assert_cmpfloat_with_epsilon(c[i] - p[i], want, 1e-4 * (1 + fabs(want)));
        g_assert_cmpfloat(c[i], >=, 0);
        g_assert_cmpfloat(p[i], >=, 0);
    }
}

/* ---- SAD ---- */

static void test_sad_constructed(void)
{
    enum { W = 32, H = 16, R = 2 };
    uint8_t cur[W * H], ref[W * H];
    memset(cur, 10, sizeof cur);
    memset(ref, 7, sizeof ref);
    uint32_t npos = sad_positions(R), nmb = (W / 8) * (H / 8);
    uint32_t *sads = g_new(uint32_t, nmb * npos);
    sad_reference(cur, ref, W, H, R, sads);
    for (uint32_t i = 0; i < nmb * npos; i++)
        g_assert_cmpuint(sads[i], ==, 64 * 3);
    /* Identical frames: zero at displacement (0, 0), the centre position. */
    for (int i = 0; i < W * H; i++)
        cur[i] = ref[i] = (uint8_t)(i * 37 + i / W);
    sad_reference(cur, ref, W, H, R, sads);
    for (uint32_t mb = 0; mb < nmb; mb++)
        g_assert_cmpuint(sads[mb * npos + npos / 2], ==, 0);
    /* One pixel differing by 100 in macroblock (1, 0): its zero-displacement SAD is 100. */
    ref[3 * W + 8 + 5] = 50;
    cur[3 * W + 8 + 5] = 150;
    sad_reference(cur, ref, W, H, R, sads);
    g_assert_cmpuint(sads[1 * npos + npos / 2], ==, 100);
    g_free(sads);
}

static void test_sad_finds_motion(void)
{
    enum { W = 64, H = 64, R = 4 };
    uint8_t cur[W * H], ref[W * H];
    sad_generate(cur, ref, W, H, 5);
    uint32_t npos = sad_positions(R), mbw = W / 8;
    uint32_t *sads = g_new(uint32_t, (W / 8) * (H / 8) * npos);
    sad_reference(cur, ref, W, H, R, sads);
    /* The generator moves the texture by (3, -2): an interior block's best match. */
    uint32_t mb = 3 * mbw + 3, best = 0;
    for (uint32_t p = 1; p < npos; p++)
        if (sads[mb * npos + p] < sads[mb * npos + best])
            best = p;
    g_assert_cmpint((int)(best % (2 * R + 1)) - R, ==, 3);
    g_assert_cmpint((int)(best / (2 * R + 1)) - R, ==, -2);
    g_free(sads);
}

/* ---- SpMV ---- */

static void test_spmv_known(void)
{
    /* [1 0 2; 0 0 3; 4 5 0] x [1, 2, 3] = [7, 9, 14] */
    const uint32_t rp[] = {0, 2, 3, 5}, ci[] = {0, 2, 2, 0, 1};
    const float va[] = {1, 2, 3, 4, 5}, x[] = {1, 2, 3};
    float y[3];
    spmv_reference(rp, ci, va, x, y, 3);
    g_assert_cmpfloat(y[0], ==, 7);
    g_assert_cmpfloat(y[1], ==, 9);
    g_assert_cmpfloat(y[2], ==, 14);
}

static void test_spmv_generated_shape(void)
{
    enum { ROWS = 1000, COLS = 300 };
    static uint32_t rp[ROWS + 1];
    uint64_t nnz = spmv_generate_rows(rp, ROWS, SPMV_MIN_NNZ, SPMV_MAX_NNZ, 8);
    g_assert_cmpuint(rp[ROWS], ==, nnz);
    for (int i = 0; i < ROWS; i++) {
        g_assert_cmpuint(rp[i + 1] - rp[i], >=, SPMV_MIN_NNZ);
        g_assert_cmpuint(rp[i + 1] - rp[i], <=, SPMV_MAX_NNZ);
    }
    g_assert_cmpfloat(fabs((double)nnz / ROWS - 16.0), <, 1.0);
    uint32_t *ci = g_new(uint32_t, nnz);
    float *va = g_new(float, nnz), x[COLS];
    spmv_generate_entries(rp, ROWS, COLS, ci, va, x, 8);
    for (uint64_t j = 0; j < nnz; j++) {
        g_assert_cmpuint(ci[j], <, COLS);
        g_assert_cmpfloat(fabs(va[j]), <=, 1.0);
        g_assert_cmpfloat(va[j] * 8, ==, floorf(va[j] * 8)); /* multiples of 1/8 */
    }
    g_free(ci);
    g_free(va);
}

/* ---- stencil ---- */

static void test_st_constant_and_spike(void)
{
    enum { NX = 6, NY = 5, NZ = 5, N = NX * NY * NZ };
    float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = 0.5f;
    st_reference(in, out, NX, NY, NZ, ST_C0, ST_C1);
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++) {
                int i = (z * NY + y) * NX + x;
                int edge = !x || !y || !z || x == NX - 1 || y == NY - 1 || z == NZ - 1;
                /* interior: 6 c1 v - c0 v = (0.75 - 0.25) v */
                g_assert_cmpfloat(out[i], ==, edge ? 0.5f : 0.25f);
            }
    memset(in, 0, sizeof in);
    int c = (2 * NY + 2) * NX + 2;
    in[c] = 1.0f;
    st_reference(in, out, NX, NY, NZ, ST_C0, ST_C1);
    g_assert_cmpfloat(out[c], ==, -ST_C0);
    g_assert_cmpfloat(out[c + 1], ==, ST_C1);
    g_assert_cmpfloat(out[c - NX], ==, ST_C1);
    g_assert_cmpfloat(out[c + NX * NY], ==, ST_C1);
    g_assert_cmpfloat(out[c + 2], ==, 0);
}

/* ---- MRI-Q ---- */

static void test_mriq_known(void)
{
    float x[2] = {0.125f, 0.3f}, y[2] = {0, 0.1f}, z[2] = {0, -0.2f};
    float kv[8] = {0, 0, 0, 0.75f, 2, 0, 0, 0.5f}; /* (kx, ky, kz, phi) per sample */
    mriq_inputs in = {x, y, z, kv};
    float qr[2], qi[2];
    /* k = 0 contributes phi to the real part; k = (2,0,0) at x = 1/8 is a quarter turn. */
    mriq_reference(&in, 1, 2, qr, qi);
    g_assert_cmpfloat_with_epsilon(qr[0], 0.75, 1e-6);
    g_assert_cmpfloat_with_epsilon(qi[0], 0.5, 1e-6);
    g_assert_cmpfloat_with_epsilon(mriq_tolerance(&in, 2), MRIQ_TOL * 1.25, 1e-12);
    /* Direct double formula for the second voxel. */
    mriq_reference(&in, 2, 2, qr, qi);
    double t = 2.0 * 0.3f;
    g_assert_cmpfloat_with_epsilon(qr[1], 0.75 + 0.5 * cos(2 * M_PI * t), 1e-6);
    g_assert_cmpfloat_with_epsilon(qi[1], 0.5 * sin(2 * M_PI * t), 1e-6);
}

/* ---- comparison helpers ---- */

static void test_compare(void)
{
    float want[3] = {1, 2, 3}, got[3] = {1, 2.001f, 3};
    char why[128] = "";
    g_assert_cmpuint(bench_compare_f32(got, want, 3, 0.01, 0, why, sizeof why), ==, 0);
    g_assert_cmpuint(bench_compare_f32(got, want, 3, 0.0001, 0, why, sizeof why), ==, 1);
    g_assert_nonnull(strstr(why, "element 1"));
    got[2] = NAN;
    g_assert_cmpuint(bench_compare_f32(got, want, 3, 1.0, 1.0, NULL, 0), ==, 1);
    uint32_t a[2] = {1, 2}, b[2] = {1, 3};
    g_assert_cmpuint(bench_compare_u32(a, b, 2, why, sizeof why), ==, 1);
    g_assert_cmpuint(bench_compare_u32(a, a, 2, why, sizeof why), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/ref/tea/known-answer", test_tea_known_answer);
    g_test_add_func("/bench/ref/tea/round-trip", test_tea_round_trip);
    g_test_add_func("/bench/ref/generators/seeded", test_generators_seeded);
    g_test_add_func("/bench/ref/pc/bijection", test_pc_perm_bijection);
    g_test_add_func("/bench/ref/pc/single-cycle", test_pc_single_cycle);
    g_test_add_func("/bench/ref/mm/known", test_mm_known);
    g_test_add_func("/bench/ref/mm/triple-loop", test_mm_triple_loop);
    g_test_add_func("/bench/ref/bs/textbook", test_bs_textbook);
    g_test_add_func("/bench/ref/bs/put-call-parity", test_bs_put_call_parity);
    g_test_add_func("/bench/ref/sad/constructed", test_sad_constructed);
    g_test_add_func("/bench/ref/sad/finds-motion", test_sad_finds_motion);
    g_test_add_func("/bench/ref/spmv/known", test_spmv_known);
    g_test_add_func("/bench/ref/spmv/generated-shape", test_spmv_generated_shape);
    g_test_add_func("/bench/ref/st/constant-and-spike", test_st_constant_and_spike);
    g_test_add_func("/bench/ref/mriq/known", test_mriq_known);
    g_test_add_func("/bench/ref/compare", test_compare);
    return g_test_run();
}
