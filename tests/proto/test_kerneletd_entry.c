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

static void test_long_name(void)
{
    struct daemon d;
    struct client c;
    double seconds;
    char *name = g_strnfill(3000, 'a');

    name[0] = 'k';
    char *ptx = renamed_ptx(name);

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&c, d.socket, "templated", false));
    tenant_check_entry(&c, ptx, name);
    g_free(ptx);
    client_close(&c);
    g_assert_true(tenant_round_trip(d.socket, "after"));
    g_assert_cmpint(daemon_stop(&d, 20, &seconds), ==, 0);
    g_free(name);
}

int main(int argc, char **argv)
{
    kerneletd = daemon_test_init(&argc, &argv);
    g_test_add_func("/kerneletd/entry/long-name", test_long_name);
    return g_test_run();
}
