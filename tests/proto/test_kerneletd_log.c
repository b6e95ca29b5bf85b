/* kerneletd --log-errors: every error answered to a tenant is one line of the daemon's log
 * naming the tenant, the request and the CUDA error; without the option there is none.
 *   test_kerneletd_log KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <string.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

#define INVALID_VALUE 1 /* CUDA_ERROR_INVALID_VALUE */

static const char *kerneletd;

/* A tenant frees a pointer it never allocated; the daemon's log after it stopped. */
static char *log_of_bad_free(const char *const *extra)
{
    struct daemon d;
    struct client c;
    double seconds;
    char *log = NULL;

    daemon_start(&d, kerneletd, extra);
    g_assert_true(client_open_path(&c, d.socket, "careless", false));
    g_assert_cmpint(client_free(&c, 0x1234), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(c.cuda, ==, INVALID_VALUE);
    tenant_check_kernel(&c); /* the error cost it nothing else */
    client_close(&c);
    g_assert_true(g_file_get_contents(d.log, &log, NULL, NULL));
    g_assert_cmpint(daemon_stop(&d, 20, &seconds), ==, 0);
    return log;
}

static void test_logged(void)
{
    const char *extra[] = {"--log-errors", NULL};
    char *log = log_of_bad_free(extra);

    g_assert_nonnull(strstr(log, "tenant careless"));
    g_assert_nonnull(strstr(log, "MEM_FREE answered status"));
    g_assert_nonnull(strstr(log, "(CUDA error 1,"));
    g_free(log);
}

static void test_quiet_by_default(void)
{
    char *log = log_of_bad_free(NULL);

    g_assert_null(strstr(log, "answered status"));
    g_free(log);
}

int main(int argc, char **argv)
{
    kerneletd = daemon_test_init(&argc, &argv);
    g_test_add_func("/kerneletd/log-errors/logged", test_logged);
    g_test_add_func("/kerneletd/log-errors/quiet-by-default", test_quiet_by_default);
    return g_test_run();
}
