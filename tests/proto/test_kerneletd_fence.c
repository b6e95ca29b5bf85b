/* kerneletd against a tenant whose kernels reach for another tenant's memory (issue 15,
 * memory fencing). Tenant A writes a secret into its allocation; tenant B launches a
 * kernel given A's pointer that copies A's words into B's buffer and then overwrites
 * them. With fencing (the default) B's kernel is confined to B's own address window: B
 * never sees the secret, A's bytes are unchanged, the daemon stays up and a bystander is
 * served. With --no-fence the same attack succeeds, which shows that the test can fail.
 *   test_kerneletd_fence KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"
#include "steal_ptx.h"

enum { WORDS = 256, THREADS = 32 };     /* client_launches runs 8 blocks */
#define SECRET 0x5ec2e700u

static const char *kerneletd;

static const char steal_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    STEAL("steal_global", ".global")
    STEAL("steal_generic", "")
    /* sneak is fenceable; the sliced variant it brings along is not (the prefetch) and has
     * the layout the daemon would launch it with: window, then the slice's four .u32. */
    STEAL("sneak", ".global")
    STEAL_WITH("sneak__kslice", ".global",
               ",\n    .param .u64 b,\n    .param .u64 m,\n    .param .u32 f,\n"
               "    .param .u32 x,\n    .param .u32 y,\n    .param .u32 z",
               "    prefetch.global.L2 [%rd4];\n")
    /* A prefetch reaches global memory in a way the fence does not cover. */
    ".visible .entry peek(\n"
    "    .param .u64 p\n"
    ")\n"
    "{\n"
    "    .reg .b64 %rd<2>;\n"
    "    ld.param.u64 %rd1, [p];\n"
    "    prefetch.global.L2 [%rd1];\n"
    "    ret;\n"
    "}\n";

/* Tenant A with WORDS words of SECRET at *pa. */
static void victim_open(struct client *a, const char *socket, uint64_t *pa)
{
    uint32_t *buf;

    g_assert_true(client_open_path(a, socket, "victim", false));
    *pa = client_alloc(a, WORDS * 4);
    uint32_t r = client_region(a, WORDS * 4, (void **)&buf);
    for (unsigned i = 0; i < WORDS; i++)
        buf[i] = SECRET + i;
    g_assert_cmpint(client_copy(a, KERNELET_COPY_HTOD, r, *pa, 0, WORDS * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
}

/* How many of A's words still hold the secret (read back through A's own copy). */
static unsigned victim_intact(struct client *a, uint64_t pa)
{
    uint32_t *buf;
    unsigned n = 0;
    uint32_t r = client_region(a, WORDS * 4, (void **)&buf);

    memset(buf, 0, WORDS * 4);
    g_assert_cmpint(client_copy(a, KERNELET_COPY_DTOH, r, 0, pa, WORDS * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < WORDS; i++)
        n += buf[i] == SECRET + i;
    return n;
}

/* Tenant B runs entry on A's pointer; how many of A's secret words B got in its buffer,
 * and in *st the launch's status. B's buffer is its first allocation, where a fenced
 * pointer to A's first one lands. */
static unsigned attack(const char *socket, uint64_t pa, const char *entry, int *st)
{
    struct client b;
    struct kernelet_function f;
    struct kernelet_param params[2];
    uint32_t *buf;
    unsigned stolen = 0;

    g_assert_true(client_open_path(&b, socket, "attacker", false));
    uint64_t out = client_alloc(&b, WORDS * 4);
    uint64_t fn = client_function(&b, client_module_ptx(&b, steal_ptx), entry, &f, params);
    g_assert_cmpuint(fn, !=, 0);
    uint64_t args[2] = {pa, out};
    *st = client_launches(&b, fn, args, sizeof(args), 1, THREADS, true);
    /* fenced, the kernel works on B's own buffer: it completes (a fault would be fine too) */
    g_assert_true(*st == KERNELET_ST_OK || *st == KERNELET_ST_CUDA);
    uint32_t r = client_region(&b, WORDS * 4, (void **)&buf);
    g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOH, r, 0, out, WORDS * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < WORDS; i++)
        stolen += buf[i] == SECRET + i;
    client_close(&b);
    return stolen;
}

/* B's kernel gets A's pointer plus skew bytes (2: misaligned for its 4-byte accesses). */
static void run_attack_at(const char *entry, const char *const *opts, bool fenced,
                          uint64_t skew)
{
    struct daemon d;
    struct client a;
    uint64_t pa;
    double took;

    daemon_start(&d, kerneletd, opts);
    victim_open(&a, d.socket, &pa);
    int st;
    unsigned stolen = attack(d.socket, pa + skew, entry, &st);
    unsigned intact = victim_intact(&a, pa);
    g_test_message("%s, %s: %u of %u secret words stolen, %u intact", entry,
                   fenced ? "fenced" : "--no-fence", stolen, WORDS, intact);
    if (fenced) {
        if (skew)       /* redirected to aligned words: no misaligned-address fault */
            g_assert_cmpint(st, ==, KERNELET_ST_OK);
        g_assert_cmpuint(stolen, ==, 0);
        g_assert_cmpuint(intact, ==, WORDS);
    } else {            /* the attack works without the fence: the test can fail */
        g_assert_cmpuint(stolen, ==, WORDS);
        g_assert_cmpuint(intact, ==, 0);
    }
    g_assert_true(daemon_alive(&d));
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    client_close(&a);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

static void run_attack(const char *entry, const char *const *opts, bool fenced)
{
    run_attack_at(entry, opts, fenced, 0);
}

static void test_global(void)
{
    run_attack("steal_global", NULL, true);
}

static void test_generic(void)
{
    run_attack("steal_generic", NULL, true);
}

/* Tenant B's launch of entry on A's pointer (plus skew bytes) fails with CUDA error
 * cuda; A's words are intact, and the daemon and a bystander go on. */
static void refused_attack_at(const char *const *opts, const char *entry, uint64_t skew,
                              uint32_t cuda)
{
    struct daemon d;
    struct client a, b;
    struct kernelet_function f;
    struct kernelet_param params[2];
    uint64_t pa;
    double took;

    daemon_start(&d, kerneletd, opts);
    victim_open(&a, d.socket, &pa);
    g_assert_true(client_open_path(&b, d.socket, "attacker", false));
    uint64_t out = client_alloc(&b, WORDS * 4);
    uint64_t fn = client_function(&b, client_module_ptx(&b, steal_ptx), entry, &f, params);
    uint64_t args[2] = {pa + skew, out};
    g_assert_cmpint(client_launches(&b, fn, args, sizeof(args), 1, THREADS, true), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpuint(b.cuda, ==, cuda);
    client_close(&b);
    g_assert_cmpuint(victim_intact(&a, pa), ==, WORDS);
    g_assert_true(daemon_alive(&d));
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    client_close(&a);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

static void refused_attack(const char *const *opts, const char *entry, uint32_t cuda)
{
    refused_attack_at(opts, entry, 0, cuda);
}

/* A module that brings the sliced variant of a fenceable kernel: the daemon would launch
 * the tenant's variant, unfenced, in its place; the kernel is refused instead. */
static void test_own_variant(void)
{
    refused_attack(NULL, "sneak", 801 /* CUDA_ERROR_NOT_SUPPORTED */);
}

static void test_no_fence(void)
{
    const char *opts[] = {"--no-fence", NULL};

    run_attack("steal_global", opts, false);
    run_attack("steal_generic", opts, false);
}

/* With --fence-faults the attacker's kernel does not run on redirected addresses: its
 * launch fails with CUDA_ERROR_ILLEGAL_ADDRESS as on a GPU of its own. */
static void test_faults(void)
{
    const char *opts[] = {"--fence-faults", NULL};

    refused_attack(opts, "steal_generic", 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */);
}

/* A misaligned pointer, which on a GPU is a sticky fault that ends the shared context:
 * fenced, B's kernel runs on the aligned words of its own window (stealing nothing); with
 * --fence-faults its launch fails with CUDA_ERROR_MISALIGNED_ADDRESS, as natively. */
static void test_misaligned(void)
{
    const char *opts[] = {"--fence-faults", NULL};

    run_attack_at("steal_global", NULL, true, 2);
    run_attack_at("steal_generic", NULL, true, 2);
    refused_attack_at(opts, "steal_global", 2, 716 /* CUDA_ERROR_MISALIGNED_ADDRESS */);
}

/* A kernel the pass cannot fence is refused with CUDA_ERROR_NOT_SUPPORTED and one log
 * line naming the instruction; the tenant's other kernels still run. */
static void test_unfenceable(void)
{
    struct daemon d;
    struct client b;
    struct kernelet_function f;
    struct kernelet_param params[2];
    gchar *log = NULL;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&b, d.socket, "prefetcher", false));
    uint64_t p = client_alloc(&b, WORDS * 4);
    uint64_t m = client_module_ptx(&b, steal_ptx);
    uint64_t peek = client_function(&b, m, "peek", &f, params);
    uint64_t steal = client_function(&b, m, "steal_global", &f, params);
    g_assert_cmpint(client_launches(&b, peek, &p, sizeof(p), 1, THREADS, true), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpuint(b.cuda, ==, 801);      /* CUDA_ERROR_NOT_SUPPORTED */
    g_assert_cmpint(client_launches(&b, peek, &p, sizeof(p), 1, THREADS, true), ==,
                    KERNELET_ST_CUDA);
    uint64_t args[2] = {p, p};
    g_assert_cmpint(client_launches(&b, steal, args, sizeof(args), 1, THREADS, true), ==,
                    KERNELET_ST_OK);
    client_close(&b);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_assert_true(g_file_get_contents(d.log, &log, NULL, NULL));   /* gone after the stop */
    const char *line = strstr(log, "launch of peek refused: it cannot be fenced: prefetch");
    g_assert_nonnull(line);
    g_assert_null(strstr(line + 1, "launch of peek refused"));     /* logged once */
    g_free(log);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* smash(u64 out, u32 skew): each thread sets its word of a 32-word shared array, then
 * writes 0xdead at its word's address plus skew bytes (128: past the array, natively an
 * illegal address; 2: misaligned, natively a misaligned address; both sticky errors that
 * end a GPU's context), then copies the array to out. reverse(u64 in, u64 out): a correct
 * kernel that reverses each block's 32 words through shared memory. */
static const char smash_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry smash(\n"
    "    .param .u64 out,\n"
    "    .param .u32 skew\n"
    ")\n"
    "{\n"
    "    .reg .b32 %r<10>;\n"
    "    .reg .b64 %rd<4>;\n"
    "    .shared .align 4 .u32 arr[32];\n"
    "    ld.param.u64 %rd1, [out];\n"
    "    ld.param.u32 %r1, [skew];\n"
    "    mov.u32 %r2, %tid.x;\n"
    "    mov.u32 %r3, arr;\n"
    "    shl.b32 %r4, %r2, 2;\n"
    "    add.u32 %r5, %r3, %r4;\n"
    "    st.shared.u32 [%r5], %r2;\n"
    "    bar.sync 0;\n"
    "    add.u32 %r6, %r5, %r1;\n"
    "    mov.u32 %r7, 57005;\n" /* 0xdead */
    "    st.shared.u32 [%r6], %r7;\n"
    "    bar.sync 0;\n"
    "    ld.shared.u32 %r8, [%r5];\n"
    "    mov.u32 %r9, %ctaid.x;\n"
    "    shl.b32 %r9, %r9, 5;\n"
    "    add.u32 %r9, %r9, %r2;\n"
    "    mul.wide.u32 %rd2, %r9, 4;\n"
    "    add.s64 %rd3, %rd1, %rd2;\n"
    "    st.global.u32 [%rd3], %r8;\n"
    "    ret;\n"
    "}\n"
    ".visible .entry reverse(\n"
    "    .param .u64 in,\n"
    "    .param .u64 out\n"
    ")\n"
    "{\n"
    "    .reg .b32 %r<8>;\n"
    "    .reg .b64 %rd<6>;\n"
    "    .shared .align 4 .u32 buf[32];\n"
    "    ld.param.u64 %rd1, [in];\n"
    "    ld.param.u64 %rd2, [out];\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    shl.b32 %r3, %r2, 5;\n"
    "    add.u32 %r3, %r3, %r1;\n"
    "    mul.wide.u32 %rd3, %r3, 4;\n"
    "    add.s64 %rd4, %rd1, %rd3;\n"
    "    ld.global.u32 %r4, [%rd4];\n"
    "    mov.u32 %r5, buf;\n"
    "    shl.b32 %r6, %r1, 2;\n"
    "    add.u32 %r6, %r5, %r6;\n"
    "    st.shared.u32 [%r6], %r4;\n"
    "    bar.sync 0;\n"
    "    sub.u32 %r7, 31, %r1;\n"
    "    shl.b32 %r7, %r7, 2;\n"
    "    add.u32 %r7, %r5, %r7;\n"
    "    ld.shared.u32 %r4, [%r7];\n"
    "    add.s64 %rd5, %rd2, %rd3;\n"
    "    st.global.u32 [%rd5], %r4;\n"
    "    ret;\n"
    "}\n";

/* Tenant A's kernel that uses shared memory correctly runs and verifies. */
static void reverse_verifies(const char *socket)
{
    struct client a;
    struct kernelet_function f;
    struct kernelet_param params[2];
    uint32_t *buf;

    g_assert_true(client_open_path(&a, socket, "reverser", false));
    uint64_t in = client_alloc(&a, WORDS * 4), out = client_alloc(&a, WORDS * 4);
    uint32_t r = client_region(&a, WORDS * 4, (void **)&buf);
    for (unsigned i = 0; i < WORDS; i++)
        buf[i] = SECRET + i;
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_HTOD, r, in, 0, WORDS * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
    uint64_t fn = client_function(&a, client_module_ptx(&a, smash_ptx), "reverse", &f, params);
    uint64_t args[2] = {in, out};
    g_assert_cmpint(client_launches(&a, fn, args, sizeof(args), 1, THREADS, true), ==,
                    KERNELET_ST_OK);
    memset(buf, 0, WORDS * 4);
    g_assert_cmpint(client_copy(&a, KERNELET_COPY_DTOH, r, 0, out, WORDS * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < WORDS; i++)
        g_assert_cmphex(buf[i], ==, SECRET + (i & ~31u) + 31 - (i & 31));
    client_close(&a);
}

/* Tenant B's smash with skew under a daemon with opts: its launch's status (the CUDA
 * error in *cuda), B's words in *got when it completes; a bystander and a tenant whose
 * kernel uses shared memory are served after it. */
static int smash(const char *const *opts, uint32_t skew, uint32_t *cuda, uint32_t *got)
{
    struct daemon d;
    struct client b;
    struct kernelet_function f;
    struct kernelet_param params[2];
    uint32_t *buf;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&b, d.socket, "smasher", false));
    uint64_t out = client_alloc(&b, WORDS * 4);
    uint64_t fn = client_function(&b, client_module_ptx(&b, smash_ptx), "smash", &f, params);
    g_assert_cmpuint(fn, !=, 0);
    uint8_t args[12];
    memcpy(args, &out, 8);
    memcpy(args + 8, &skew, 4);
    int st = client_launches(&b, fn, args, sizeof(args), 1, THREADS, true);
    *cuda = b.cuda;
    if (st == KERNELET_ST_OK) {     /* after a fault the tenant's context is lost */
        uint32_t r = client_region(&b, WORDS * 4, (void **)&buf);
        g_assert_cmpint(client_copy(&b, KERNELET_COPY_DTOH, r, 0, out, WORDS * 4, NULL, 0,
                                    true), ==, KERNELET_ST_OK);
        memcpy(got, buf, WORDS * 4);
    }
    client_close(&b);
    g_assert_true(daemon_alive(&d));
    reverse_verifies(d.socket);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
    return st;
}

/* A kernel that writes past its block's shared array, or misaligned in it: on a GPU a
 * sticky error that ends the shared context. Without the fence the emulator fails the
 * launch as the GPU would (the test can tell); fenced, it completes, the writes landing in
 * the block's own shared memory (past the array: at its end; misaligned: the aligned word
 * below); with --fence-faults the launch fails with CUDA's illegal or misaligned
 * address, as natively. Another tenant's shared-memory kernel verifies each time. */
static void test_shared(void)
{
    const char *no_fence[] = {"--no-fence", NULL}, *faults[] = {"--fence-faults", NULL};
    uint32_t cuda, got[WORDS];

    g_assert_cmpint(smash(no_fence, 128, &cuda, got), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(cuda, ==, 700);        /* CUDA_ERROR_ILLEGAL_ADDRESS */
    g_assert_cmpint(smash(no_fence, 2, &cuda, got), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(cuda, ==, 716);        /* CUDA_ERROR_MISALIGNED_ADDRESS */
    /* past the array: at the block's last word or the padding before its dynamic shared
     * memory (none here; the emulator aligns it to 16 bytes, after the sliced variant's
     * own array of 24 bytes): arr[31] or nothing of arr */
    g_assert_cmpint(smash(NULL, 128, &cuda, got), ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < WORDS; i++)
        if ((i & 31) != 31 || got[i] != 0xdead)
            g_assert_cmphex(got[i], ==, i & 31);
    g_assert_cmpint(smash(NULL, 2, &cuda, got), ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < WORDS; i++)
        g_assert_cmphex(got[i], ==, 0xdead);
    g_assert_cmpint(smash(faults, 128, &cuda, got), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(cuda, ==, 700);
    g_assert_cmpint(smash(faults, 2, &cuda, got), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(cuda, ==, 716);
}

/* Window sizes that are no power of two, too small or too large, or smaller than the
 * default quota, are refused (exit 2). */
static void test_bad_options(void)
{
    const char *bad[] = {"3G", "1M", "0", "4T", "64Gi", "x"};

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        g_assert_cmpint(daemon_option_status(kerneletd, "--window-size", bad[i]), ==, 2);
    g_assert_cmpint(daemon_option_status(kerneletd, "--default-memory-quota", "65G"), ==, 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: test_kerneletd_fence KERNELETD\n");
        return 2;
    }
    kerneletd = argv[1];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/fence/global", test_global);
    g_test_add_func("/kerneletd/fence/generic", test_generic);
    g_test_add_func("/kerneletd/fence/no-fence", test_no_fence);
    g_test_add_func("/kerneletd/fence/faults", test_faults);
    g_test_add_func("/kerneletd/fence/misaligned", test_misaligned);
    g_test_add_func("/kerneletd/fence/shared", test_shared);
    g_test_add_func("/kerneletd/fence/own-variant", test_own_variant);
    g_test_add_func("/kerneletd/fence/unfenceable", test_unfenceable);
    g_test_add_func("/kerneletd/fence/bad-options", test_bad_options);
    return g_test_run();
}
