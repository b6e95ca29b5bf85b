/* Kernels written in CUDA (tests/emu/kernels/, compiled to PTX by nvcc at build time)
 * on the emulator, checked against expectations computed here from CUDA's semantics:
 * shuffles, votes, match and reduce, activemask in divergent code, barriers (also in
 * loops, with counts, after early exits), shared and dynamic shared memory, atomics on
 * global and shared memory, a spin lock between lanes of a warp, device-function calls,
 * local arrays, divergent loops, module variables and special registers, recursion and
 * calls through function pointers and virtual functions. */
#include "emu_test_util.h"

#include <stdbool.h>
#include <string.h>

/* ---- warp level ----------------------------------------------------------------------------- */

static void test_shfl(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 256 };
    emu_fixture f;
    emu_fixture_open(&f, "warp", 2);
    int in[N], out[4 * N];
    emu_random_ints(in, N, -1000000, 1000000, 1);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "shfl_ops"), (unsigned[3]){4, 1, 1}, (unsigned[3]){64, 1, 1},
                  0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (int t = 0; t < N; t++) {
        int lane = t % 32, base = t - lane;
        g_assert_cmpint(out[4 * t + 0], ==, in[base + (lane * 7 + 3) % 32]);
        g_assert_cmpint(out[4 * t + 1], ==, lane >= 3 ? in[t - 3] : in[t]);
        g_assert_cmpint(out[4 * t + 2], ==, lane % 16 + 5 < 16 ? in[t + 5] : in[t]);
        g_assert_cmpint(out[4 * t + 3], ==, in[base + (lane ^ 9)]);
    }
    emu_fixture_close(&f);
}

static void test_vote(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 256 };
    emu_fixture f;
    emu_fixture_open(&f, "warp", 1);
    int in[N];
    unsigned out[5 * N];
    emu_random_ints(in, N, -50, 50, 2);
    for (int i = 64; i < 96; i++)   /* one warp where every predicate holds */
        in[i] = 2 * i + 1;
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "vote_ops"), (unsigned[3]){4, 1, 1}, (unsigned[3]){64, 1, 1},
                  0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (int w = 0; w < N / 32; w++) {
        unsigned ballot = 0, thirds = 0, odd_pos = 0;
        for (int l = 0; l < 32; l++) {
            int v = in[32 * w + l];
            ballot |= (unsigned)(v & 1) << l;
            thirds |= (unsigned)(v % 3 == 0) << l;
            if (l & 1)
                odd_pos |= (unsigned)(v > 0) << l;
        }
        for (int l = 0; l < 32; l++) {
            int t = 32 * w + l;
            g_assert_cmphex(out[5 * t + 0], ==, ballot);
            g_assert_cmpuint(out[5 * t + 1], ==, ballot == 0xffffffffu);
            g_assert_cmpuint(out[5 * t + 2], ==, ballot != 0);
            g_assert_cmphex(out[5 * t + 3], ==, in[t] % 3 == 0 ? thirds : 0);
            g_assert_cmphex(out[5 * t + 4], ==, (l & 1) ? odd_pos : 0);
        }
    }
    emu_fixture_close(&f);
}

static void test_reduce_match(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 192 };
    emu_fixture f;
    emu_fixture_open(&f, "warp", 2);
    int in[N], out[3 * N / 32];
    emu_random_ints(in, N, -100000, 100000, 3);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "reduce_ops"), (unsigned[3]){2, 1, 1}, (unsigned[3]){96, 1, 1},
                  0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (int w = 0; w < N / 32; w++) {
        int sum = 0, count[4] = {0}, most = 0;
        for (int l = 0; l < 32; l++) {
            sum += in[32 * w + l];
            count[in[32 * w + l] & 3]++;
        }
        for (int k = 0; k < 4; k++)
            most = count[k] > most ? count[k] : most;
        g_assert_cmpint(out[3 * w], ==, sum);
        g_assert_cmpint(out[3 * w + 1], ==, sum);
        g_assert_cmpint(out[3 * w + 2], ==, most);
    }
    emu_fixture_close(&f);
}

/* ---- block level ----------------------------------------------------------------------------- */

static void test_block_reverse_and_sum(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { B = 128, G = 3, N = B * G };
    emu_fixture f;
    emu_fixture_open(&f, "block", 2);
    int in[N], rev[N], sums[G];
    emu_random_ints(in, N, -1000, 1000, 4);
    kemu_devptr din = emu_buf(&f, in, sizeof in), drev = emu_buf(&f, NULL, sizeof rev);
    kemu_devptr dsum = emu_buf(&f, NULL, sizeof sums);
    emu_arg a1[] = {ARG64(din), ARG64(drev)}, a2[] = {ARG64(din), ARG64(dsum)};
    emu_launch_ok(emu_fixture_fn(&f, "block_reverse"), (unsigned[3]){G, 1, 1},
                  (unsigned[3]){B, 1, 1}, 0, a1, 2);
    emu_launch_ok(emu_fixture_fn(&f, "block_sum"), (unsigned[3]){G, 1, 1},
                  (unsigned[3]){B, 1, 1}, B * sizeof(int), a2, 2);
    emu_download(&f, rev, drev, sizeof rev);
    emu_download(&f, sums, dsum, sizeof sums);
    for (int b = 0; b < G; b++) {
        int s = 0;
        for (int i = 0; i < B; i++) {
            g_assert_cmpint(rev[b * B + i], ==, in[b * B + B - 1 - i]);
            s += in[b * B + i];
        }
        g_assert_cmpint(sums[b], ==, s);
    }
    emu_fixture_close(&f);
}

static void test_block_votes_and_early_exit(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { B = 128, G = 3, N = B * G, ACTIVE = 100 };
    emu_fixture f;
    emu_fixture_open(&f, "block", 1);
    int in[N], votes[3 * G], out[N];
    emu_random_ints(in, N, -10, 30, 5);
    for (int i = 0; i < B; i++)
        in[B + i] = i + 1;         /* block 1: all positive */
    in[2 * B + 7] = 2000000;       /* block 2: one huge value */
    kemu_devptr din = emu_buf(&f, in, sizeof in), dv = emu_buf(&f, NULL, sizeof votes);
    kemu_devptr dout = emu_buf(&f, NULL, sizeof out);
    emu_arg a1[] = {ARG64(din), ARG64(dv)}, a2[] = {ARG64(din), ARG64(dout), ARG32(ACTIVE)};
    emu_launch_ok(emu_fixture_fn(&f, "block_votes"), (unsigned[3]){G, 1, 1},
                  (unsigned[3]){B, 1, 1}, 0, a1, 2);
    emu_launch_ok(emu_fixture_fn(&f, "early_exit"), (unsigned[3]){G, 1, 1},
                  (unsigned[3]){B, 1, 1}, 0, a2, 3);
    emu_download(&f, votes, dv, sizeof votes);
    emu_download(&f, out, dout, sizeof out);
    for (int b = 0; b < G; b++) {
        int count = 0, all = 1, any = 0;
        for (int i = 0; i < B; i++) {
            count += in[b * B + i] > 0;
            all &= in[b * B + i] > 0;
            any |= in[b * B + i] > 1000000;
        }
        g_assert_cmpint(votes[3 * b], ==, count);
        g_assert_cmpint(votes[3 * b + 1] != 0, ==, all);
        g_assert_cmpint(votes[3 * b + 2] != 0, ==, any);
        for (int i = 0; i < B; i++)
            g_assert_cmpint(out[b * B + i], ==, i < ACTIVE ? 2 * in[b * B + (i + 1) % ACTIVE] : 0);
    }
    emu_fixture_close(&f);
}

static void test_cp_async(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { B = 64, G = 3, N = B * G };
    emu_fixture f;
    emu_fixture_open(&f, "block", 2);
    float in[4 * N], out[N];
    for (int i = 0; i < 4 * N; i++)
        in[i] = (float)(i % 97) * 0.5f;
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "staged"), (unsigned[3]){G, 1, 1}, (unsigned[3]){B, 1, 1},
                  0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (int t = 0; t < N; t++) {
        int b = t / B, tid = t % B, src = b * B + (tid + 1) % B;
        float want = in[4 * src] + in[4 * src + 1] + in[4 * src + 2] + in[4 * src + 3];
        want += (tid & 1) ? in[4 * t + 1] : 0.0f;   /* zfill: even threads copy nothing */
        g_assert_cmpfloat(out[t], ==, want);
    }
    emu_fixture_close(&f);
}

/* ---- atomics ---------------------------------------------------------------------------------- */

static void test_atomics(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { B = 96, G = 4, N = B * G };
    emu_fixture f;
    emu_fixture_open(&f, "atomics", 3);
    int in[N], olds[N];
    emu_random_ints(in, N, -100000, 100000, 6);
    int c[11] = {0, INT32_MIN, INT32_MAX, 0, -1, 0, 0, 0, 0, 0, INT32_MIN};
    float fsum = 0;
    unsigned long long u64 = 0;
    double dsum = 0;
    kemu_devptr din = emu_buf(&f, in, sizeof in), dc = emu_buf(&f, c, sizeof c);
    kemu_devptr df = emu_buf(&f, &fsum, sizeof fsum), du = emu_buf(&f, &u64, sizeof u64);
    kemu_devptr dd = emu_buf(&f, &dsum, sizeof dsum), dolds = emu_buf(&f, NULL, sizeof olds);
    emu_arg args[] = {ARG64(din), ARG64(dc), ARG64(df), ARG64(du), ARG64(dd), ARG64(dolds)};
    emu_launch_ok(emu_fixture_fn(&f, "atomic_ops"), (unsigned[3]){G, 1, 1},
                  (unsigned[3]){B, 1, 1}, 0, args, 6);
    emu_download(&f, c, dc, sizeof c);
    emu_download(&f, &fsum, df, sizeof fsum);
    emu_download(&f, &u64, du, sizeof u64);
    emu_download(&f, &dsum, dd, sizeof dsum);
    emu_download(&f, olds, dolds, sizeof olds);
    uint32_t sum = 0;
    int mx = INT32_MIN, mn = INT32_MAX, and_all = -1, or_all = 0, xor_all = 0;
    double fs = 0, ds = 0;
    unsigned long long us = 0;
    bool exch_seen = false;
    for (int i = 0; i < N; i++) {
        sum += (uint32_t)in[i];
        mx = in[i] > mx ? in[i] : mx;
        mn = in[i] < mn ? in[i] : mn;
        and_all &= in[i] | 0x0f0f0f0f;
        or_all |= in[i] & 0x00ff00ff;
        xor_all ^= in[i];
        fs += in[i] & 15;
        ds += in[i] & 255;
        us += (unsigned)in[i];
        exch_seen |= c[7] == in[i];
    }
    g_assert_cmpint(c[0], ==, (int)sum);
    g_assert_cmpint(c[1], ==, mx);
    g_assert_cmpint(c[2], ==, mn);
    g_assert_cmpint(c[3], ==, N % 101);
    g_assert_cmpint(c[4], ==, and_all);
    g_assert_cmpint(c[5], ==, or_all);
    g_assert_cmpint(c[6], ==, xor_all);
    g_assert_true(exch_seen);
    g_assert_cmpint(c[8], ==, N);
    g_assert_cmpint(c[9], ==, N % 8 == 0 ? 0 : 8 - N % 8);
    g_assert_cmpint(c[10], ==, mx);
    g_assert_cmpfloat(fsum, ==, fs);
    g_assert_cmpfloat(dsum, ==, ds);
    g_assert_cmpuint(u64, ==, us);
    /* the values atomicAdd returned are 0..N-1, each once */
    bool seen[N] = {false};
    for (int i = 0; i < N; i++) {
        g_assert_cmpint(olds[i], >=, 0);
        g_assert_cmpint(olds[i], <, N);
        g_assert_false(seen[olds[i]]);
        seen[olds[i]] = true;
    }
    emu_fixture_close(&f);
}

static void test_shared_histogram(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { B = 128, G = 5, N = B * G };
    emu_fixture f;
    emu_fixture_open(&f, "atomics", 2);
    int in[N], hist[16] = {0}, want[16] = {0};
    emu_random_ints(in, N, 0, 1 << 20, 7);
    for (int i = 0; i < N; i++)
        want[in[i] & 15]++;
    kemu_devptr din = emu_buf(&f, in, sizeof in), dh = emu_buf(&f, NULL, sizeof hist);
    emu_arg args[] = {ARG64(din), ARG64(dh)};
    emu_launch_ok(emu_fixture_fn(&f, "shared_histogram"), (unsigned[3]){G, 1, 1},
                  (unsigned[3]){B, 1, 1}, 0, args, 2);
    emu_download(&f, hist, dh, sizeof hist);
    for (int k = 0; k < 16; k++)
        g_assert_cmpint(hist[k], ==, want[k]);
    emu_fixture_close(&f);
}

static void test_spin_lock(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "atomics", 2);
    kemu_devptr dout = emu_buf(&f, NULL, sizeof(int));
    emu_arg args[] = {ARG64(dout)};
    kemu_error err = {0};
    int rc = emu_launch_args(emu_fixture_fn(&f, "spin_lock"), (unsigned[3]){3, 1, 1},
                             (unsigned[3]){64, 1, 1}, 0, args, 1, 50u * 1000 * 1000, &err);
    if (rc)
        g_error("spin_lock: %s", err.message);
    kemu_devptr g;
    size_t bytes;
    g_assert_cmpint(kemu_module_get_global(f.mod, "guarded", &g, &bytes, &err), ==, 0);
    g_assert_cmpuint(bytes, ==, sizeof(int));
    int guarded, done;
    emu_download(&f, &guarded, g, sizeof guarded);
    emu_download(&f, &done, dout, sizeof done);
    g_assert_cmpint(guarded, ==, 3 * 64);
    g_assert_cmpint(done, ==, 1);

    rc = emu_launch_args(emu_fixture_fn(&f, "spin_lock_naive"), (unsigned[3]){2, 1, 1},
                         (unsigned[3]){64, 1, 1}, 0, NULL, 0, 50u * 1000 * 1000, &err);
    if (rc)
        g_error("spin_lock_naive: %s", err.message);
    g_assert_cmpint(kemu_module_get_global(f.mod, "guarded2", &g, &bytes, &err), ==, 0);
    emu_download(&f, &guarded, g, sizeof guarded);
    g_assert_cmpint(guarded, ==, 2 * 64);
    emu_fixture_close(&f);
}

/* ---- calls, local memory, divergence, module variables, special registers ---------------------- */

static void test_calls(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 160 };
    emu_fixture f;
    emu_fixture_open(&f, "misc", 2);
    int in[N];
    long long out[N];
    emu_random_ints(in, N, -1000000, 1000000, 8);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "calls"), (unsigned[3]){5, 1, 1}, (unsigned[3]){32, 1, 1},
                  0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (int t = 0; t < N; t++) {
        int v = in[t];
        long long want = (long long)v * 3 * t + v + (long long)(0.5f * (float)(v & 7));
        if (v & 1)
            want += (long long)(2 * v + 2 * (v + 1));
        g_assert_cmpint(out[t], ==, want);
    }
    emu_fixture_close(&f);
}

static void test_local_and_divergent_loops(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 200 };
    emu_fixture f;
    emu_fixture_open(&f, "misc", 2);
    int in[N], out[N];
    unsigned steps[N];
    emu_random_ints(in, N, 1, 100000, 9);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    kemu_devptr dsteps = emu_buf(&f, NULL, sizeof steps);
    emu_arg a1[] = {ARG64(din), ARG64(dout)}, a2[] = {ARG64(din), ARG64(dsteps)};
    emu_launch_ok(emu_fixture_fn(&f, "local_array"), (unsigned[3]){4, 1, 1},
                  (unsigned[3]){50, 1, 1}, 0, a1, 2);
    emu_launch_ok(emu_fixture_fn(&f, "collatz"), (unsigned[3]){4, 1, 1},
                  (unsigned[3]){50, 1, 1}, 0, a2, 2);
    emu_download(&f, out, dout, sizeof out);
    emu_download(&f, steps, dsteps, sizeof steps);
    for (int t = 0; t < N; t++) {
        int k = in[t] & 15;
        g_assert_cmpint(out[t], ==, in[t] * k + k);
        unsigned long long x = (unsigned)in[t];
        unsigned s = 0;
        while (x > 1 && s < 1000) {
            x = (x & 1) ? 3 * x + 1 : x / 2;
            s++;
        }
        g_assert_cmpuint(steps[t], ==, s);
    }
    emu_fixture_close(&f);
}

static void test_module_vars(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 64 };
    emu_fixture f;
    emu_fixture_open(&f, "misc", 1);
    kemu_error err = {0};
    kemu_devptr scale, bias;
    size_t bytes;
    g_assert_cmpint(kemu_module_get_global(f.mod, "scale", &scale, &bytes, &err), ==, 0);
    g_assert_cmpuint(bytes, ==, 4);
    g_assert_cmpint(kemu_module_get_global(f.mod, "bias", &bias, &bytes, &err), ==, 0);
    int b;
    emu_download(&f, &b, bias, sizeof b);
    g_assert_cmpint(b, ==, 7);   /* the initialiser */
    float s = 0.5f;
    g_assert_cmpint(kemu_memcpy_htod(f.dev, scale, &s, sizeof s, &err), ==, 0);
    g_assert_cmpint(kemu_module_get_global(f.mod, "no_such_var", &scale, &bytes, &err), ==,
                    KEMU_ENOTFOUND);
    int in[N];
    float out[N];
    emu_random_ints(in, N, 0, 1000, 10);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "module_vars"), (unsigned[3]){2, 1, 1},
                  (unsigned[3]){32, 1, 1}, 0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    static const int table[4] = {10, 20, 30, 40};
    for (int t = 0; t < N; t++)
        g_assert_cmpfloat(out[t], ==, (float)(table[in[t] & 3] + 7) * 0.5f);
    emu_fixture_close(&f);
}

static void test_special_registers(void)
{
    SKIP_WITHOUT_KERNELS();
    const unsigned grid[3] = {3, 2, 2}, block[3] = {4, 3, 2};
    enum { N = 3 * 2 * 2 * 4 * 3 * 2 };
    emu_fixture f;
    emu_fixture_open(&f, "misc", 2);
    unsigned out[4 * N];
    kemu_devptr dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "sregs"), grid, block, 0, args, 1);
    emu_download(&f, out, dout, sizeof out);
    for (unsigned bz = 0; bz < grid[2]; bz++)
        for (unsigned by = 0; by < grid[1]; by++)
            for (unsigned bx = 0; bx < grid[0]; bx++)
                for (unsigned z = 0; z < block[2]; z++)
                    for (unsigned y = 0; y < block[1]; y++)
                        for (unsigned x = 0; x < block[0]; x++) {
                            unsigned lin = x + block[0] * (y + block[1] * z);
                            unsigned b = bx + grid[0] * (by + grid[1] * bz);
                            unsigned t = b * 24 + lin;
                            g_assert_cmphex(out[4 * t], ==, x | y << 8 | z << 16);
                            g_assert_cmphex(out[4 * t + 1], ==, bx | by << 8 | bz << 16);
                            g_assert_cmphex(out[4 * t + 2], ==, 4u | 3u << 8 | 2u << 16 | 3u << 24);
                            g_assert_cmphex(out[4 * t + 3], ==, (lin % 32) | 2u << 8 | 2u << 16);
                        }
    emu_fixture_close(&f);
}

static void test_generic_pointers(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { B = 64, G = 3, N = B * G };
    emu_fixture f;
    emu_fixture_open(&f, "misc", 2);
    int in[N], out[N];
    emu_random_ints(in, N, -100000, 100000, 11);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "generic_pointers"), (unsigned[3]){G, 1, 1},
                  (unsigned[3]){B, 1, 1}, B * sizeof(int), args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (int t = 0; t < N; t++) {
        int base = t - t % B, tid = t % B, want = 0;
        for (int i = 0; i < 8; i++)
            want += in[t] + i + 3 * in[base + (tid & ~7) + i];
        for (int i = 0; i < 4; i++)
            want += 5 * in[base + (tid & ~3) + i];
        want += in[t & ~1] + in[(t & ~1) + 1];
        g_assert_cmpint(out[t], ==, want);
    }
    emu_fixture_close(&f);
}

static unsigned fib_ref(unsigned n)
{
    return n < 2 ? n : fib_ref(n - 1) + fib_ref(n - 2);
}

static void test_recursion(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 96 };
    emu_fixture f;
    emu_fixture_open(&f, "misc", 2);
    int in[N];
    unsigned out[2 * N];
    emu_random_ints(in, N, 0, 1000, 12);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(din), ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "recursion"), (unsigned[3]){3, 1, 1},
                  (unsigned[3]){32, 1, 1}, 0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (int t = 0; t < N; t++) {
        g_assert_cmpuint(out[2 * t], ==, fib_ref((unsigned)in[t] % 16));
        g_assert_cmpuint(out[2 * t + 1], ==, (unsigned)(in[t] % 100 % 2 == 0));
    }
    emu_fixture_close(&f);
}

static void test_function_pointers(void)
{
    SKIP_WITHOUT_KERNELS();
    enum { N = 96 };
    emu_fixture f;
    emu_fixture_open(&f, "misc", 2);
    int in[N];
    unsigned out[N];
    float areas[N];
    emu_random_ints(in, N, 0, 100000, 13);
    kemu_devptr din = emu_buf(&f, in, sizeof in), dout = emu_buf(&f, NULL, sizeof out);
    kemu_devptr dareas = emu_buf(&f, NULL, sizeof areas);
    emu_arg args[] = {ARG64(din), ARG64(dout), ARG64(dareas)};
    emu_launch_ok(emu_fixture_fn(&f, "pointers"), (unsigned[3]){3, 1, 1},
                  (unsigned[3]){32, 1, 1}, 0, args, 3);
    emu_download(&f, out, dout, sizeof out);
    emu_download(&f, areas, dareas, sizeof areas);
    for (int t = 0; t < N; t++) {
        unsigned x = (unsigned)in[t], want;
        switch (x % 3) {
        case 0: want = 2 * x; break;
        case 1: want = x * x; break;
        default: want = (x & 1) ? 3 * x + 1 : x / 2; break;
        }
        g_assert_cmpuint(out[t], ==, want);
        float s = (float)(x % 10);
        g_assert_cmpfloat(areas[t], ==, (x & 4) ? s * s : 3.0f * s * s);
    }
    emu_fixture_close(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/emu/kernels/shfl", test_shfl);
    g_test_add_func("/emu/kernels/vote", test_vote);
    g_test_add_func("/emu/kernels/reduce-match", test_reduce_match);
    g_test_add_func("/emu/kernels/block-reverse-sum", test_block_reverse_and_sum);
    g_test_add_func("/emu/kernels/block-votes-early-exit", test_block_votes_and_early_exit);
    g_test_add_func("/emu/kernels/cp-async", test_cp_async);
    g_test_add_func("/emu/kernels/atomics", test_atomics);
    g_test_add_func("/emu/kernels/shared-histogram", test_shared_histogram);
    g_test_add_func("/emu/kernels/spin-lock", test_spin_lock);
    g_test_add_func("/emu/kernels/calls", test_calls);
    g_test_add_func("/emu/kernels/local-divergent-loops", test_local_and_divergent_loops);
    g_test_add_func("/emu/kernels/module-vars", test_module_vars);
    g_test_add_func("/emu/kernels/special-registers", test_special_registers);
    g_test_add_func("/emu/kernels/generic-pointers", test_generic_pointers);
    g_test_add_func("/emu/kernels/recursion", test_recursion);
    g_test_add_func("/emu/kernels/function-pointers", test_function_pointers);
    return g_test_run();
}
