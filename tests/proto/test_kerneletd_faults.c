/* kerneletd against a tenant whose kernel traps or fails a device assert (issue 15:
 * faults end only the faulting tenant's work). The fencing pass rewrites trap and
 * __assertfail into a store to the tenant's fault word and an exit, so the launch ends
 * without faulting the device: the offender gets CUDA's error (CUDA_ERROR_ASSERT for an
 * assert, CUDA_ERROR_LAUNCH_FAILED for a trap), which stays with its context as on a GPU;
 * the daemon stays up, the program started again runs, and a bystander's output
 * verifies. With --no-fence the emulator faults on the trap and cannot run
 * the assert at all, which shows that the test can fail.
 *   test_kerneletd_faults KERNELET --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <string.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

enum { THREADS = 32, BLOCKS = 8, WORDS = THREADS * BLOCKS };

static const char *kerneletd;

/* mark(u64 out, u32 k): out[i] = 7 for its thread, then a trap when k == 1 and CUDA's
 * device assert when k == 2 (in thread 0 of block 0 only), then out[i] = 8. */
static const char fault_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c,"
    " .param .b64 d, .param .b64 e);\n"
    ".visible .entry mark(.param .u64 out, .param .u32 k)\n"
    "{\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n  .reg .pred %p<4>;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [k];\n"
    "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n  mul.wide.u32 %rd2, %r5, 4;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n  mov.u32 %r6, 7;\n  st.global.u32 [%rd3], %r6;\n"
    "  setp.ne.u32 %p3, %r5, 0;\n  @%p3 bra DONE;\n"
    "  setp.eq.u32 %p1, %r1, 1;\n  @%p1 trap;\n"
    "  setp.ne.u32 %p2, %r1, 2;\n  @%p2 bra DONE;\n"
    "  {\n  .param .b64 param0;\n  .param .b32 param2;\n"
    "  st.param.b64 [param0+0], %rd1;\n  st.param.b32 [param2+0], 0;\n"
    "  call.uni __assertfail, (param0, param0, param2, param0, param0);\n  }\n"
    "DONE:\n  mov.u32 %r7, 8;\n  st.global.u32 [%rd3], %r7;\n  ret;\n}\n";

/* Runs mark with k on out; the launch's status (and c->cuda). */
static int run_mark(struct client *c, uint64_t fn, uint64_t out, uint32_t k)
{
    struct { uint64_t out; uint32_t k; uint32_t pad; } args = {out, k, 0};
    return client_launches(c, fn, &args, 12, 1, THREADS, true);
}

/* How many words of out hold v. */
static unsigned count_words(struct client *c, uint64_t out, uint32_t v)
{
    uint32_t *buf;
    unsigned n = 0;
    uint32_t r = client_region(c, WORDS * 4, (void **)&buf);
    g_assert_cmpint(client_copy(c, KERNELET_COPY_DTOH, r, 0, out, WORDS * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < WORDS; i++)
        n += buf[i] == v;
    return n;
}

/* A tenant "offender" of the daemon at socket with mark loaded (the function's handle) and
 * a buffer for it (*out). */
static uint64_t open_offender(struct client *c, const char *socket, uint64_t *out)
{
    struct kernelet_function f;
    struct kernelet_param params[2];

    g_assert_true(client_open_path(c, socket, "offender", false));
    uint64_t fn = client_function(c, client_module_ptx(c, fault_ptx), "mark", &f, params);
    g_assert_cmpuint(fn, !=, 0);
    *out = client_alloc(c, WORDS * 4);
    return fn;
}

static void run_fault(uint32_t k, uint32_t want_cuda)
{
    struct daemon d;
    struct client a, again;
    uint64_t out;
    double took;

    daemon_start(&d, kerneletd, NULL);
    uint64_t fn = open_offender(&a, d.socket, &out);
    g_assert_cmpint(run_mark(&a, fn, out, k), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, want_cuda);
    /* as on a GPU, the error stays with the offender's context */
    g_assert_cmpint(client_sync(&a), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, ==, want_cuda);
    client_close(&a);
    /* the device was not lost: the daemon serves on, the same program started again runs
     * the same kernel to its end, and a bystander's output verifies */
    g_assert_true(daemon_alive(&d));
    fn = open_offender(&again, d.socket, &out);
    g_assert_cmpint(run_mark(&again, fn, out, 0), ==, KERNELET_ST_OK);
    g_assert_cmpuint(count_words(&again, out, 8), ==, WORDS);
    client_close(&again);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

static void test_trap(void)
{
    run_fault(1, 719); /* CUDA_ERROR_LAUNCH_FAILED */
}

static void test_assert(void)
{
    run_fault(2, 710); /* CUDA_ERROR_ASSERT */
}

/* Unfenced the trap is a fault of the launch as the emulator sees it: the same tenant
 * program cannot tell it apart from a lost device, and the assert cannot run. */
static void test_no_fence(void)
{
    static const char *const opts[] = {"--no-fence", NULL};
    struct daemon d;
    struct client a;
    uint64_t out;
    double took;

    daemon_start(&d, kerneletd, opts);
    uint64_t fn = open_offender(&a, d.socket, &out);
    g_assert_cmpint(run_mark(&a, fn, out, 2), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(a.cuda, !=, 710);
    client_close(&a);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: test_kerneletd_faults KERNELETD\n");
        return 2;
    }
    kerneletd = argv[1];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/faults/trap", test_trap);
    g_test_add_func("/kerneletd/faults/assert", test_assert);
    g_test_add_func("/kerneletd/faults/no-fence", test_no_fence);
    return g_test_run();
}
