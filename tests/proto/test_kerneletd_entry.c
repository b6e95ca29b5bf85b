/* Kernels with long names through kerneletd (emu): the mangled names of templated C++
 * kernels (PyTorch's distribution kernels, lambdas in their template arguments) run to
 * thousands of characters; FUNCTION_GET of one answered CUDA_ERROR_INVALID_VALUE while the
 * scheduler took names of at most 255. A 3000-character entry must load, launch and verify,
 * and one longer than the protocol's KERNELET_MAX_SYMBOL is refused cleanly.
 *   test_kerneletd_entry KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <string.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

static const char *kerneletd;

/* harness_ptx with its entry k_add renamed to name. */
static char *renamed_ptx(const char *name)
{
    char **parts = g_strsplit(harness_ptx, "k_add", -1);
    char *text = g_strjoinv(name, parts);

    g_strfreev(parts);
    return text;
}

/* The k_add work of tenant_check_kernel through the entry called name. */
static void run_named(struct client *c, const char *name)
{
    enum { N = 64 };
    struct kernelet_function f;
    struct kernelet_param params[8];
    uint32_t in[N], *out;
    struct { uint64_t p; uint32_t n, v; } args = {.n = N, .v = 5};
    char *ptx = renamed_ptx(name);

    for (unsigned i = 0; i < N; i++)
        in[i] = i;
    args.p = client_alloc(c, sizeof(in));
    uint32_t rid = client_region(c, sizeof(in), (void **)&out);
    g_assert_cmpint(client_copy(c, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, args.p, 0,
                                sizeof(in), in, 0, false), ==, KERNELET_ST_OK);
    uint64_t fn = client_function(c, client_module_ptx(c, ptx), name, &f, params);
    g_assert_cmpuint(fn, !=, 0);
    g_assert_cmpint(client_launches(c, fn, &args, sizeof(args), 1, N / 2, false), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(client_copy(c, KERNELET_COPY_DTOH, rid, 0, args.p, sizeof(in), NULL, 0,
                                true), ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < N; i++)
        g_assert_cmpuint(out[i], ==, i + 5u);
    g_free(ptx);
}

static void test_long_name(void)
{
    struct daemon d;
    struct client c;
    double seconds;
    char *name = g_strnfill(3000, 'a');

    name[0] = 'k';
    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "templated", false));
    run_named(&c, name);
    client_close(&c);
    g_assert_true(tenant_round_trip(d.socket, "after"));
    g_assert_cmpint(daemon_stop(&d, 20, &seconds), ==, 0);
    g_free(name);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2)
        g_error("usage: %s KERNELETD", argv[0]);
    kerneletd = argv[1];
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/kerneletd/entry/long-name", test_long_name);
    return g_test_run();
}
