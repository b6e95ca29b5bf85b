/* kerneletd --profile-cache: profiles learned online survive a restart. A cache file is
 * read at start (a record keyed by its module stays keyed), written back at stop with what
 * the daemon holds, created when missing, and a bad one stops the start with the line that
 * is wrong; tenants are served meanwhile.
 *   test_kerneletd_profile_cache KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_util.h"

static const char *kerneletd;

static const char learned[] =
    "profile entry=k_add module=00000000deadbeef rm=0.125 insts=42 pur=0.5 mur=0.25 unc=0 "
    "wpb=1 regs=8 smem=0 min_slice=0\n";

static char *cache_path(const char *dir)
{
    return g_build_filename(dir, "profiles.cache", NULL);
}

/* Starts the daemon with the cache, serves one tenant, stops it cleanly. */
static void serve_once(const char *cache)
{
    struct daemon d;
    double took;
    const char *opts[] = {"--profile-cache", cache, NULL};

    daemon_start(&d, kerneletd, opts);
    g_assert_true(tenant_round_trip(d.socket, "tenant"));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

static void test_kept_across_restart(void)
{
    g_autofree char *dir = g_dir_make_tmp("kprof-XXXXXX", NULL);
    g_autofree char *cache = cache_path(dir);
    g_assert_true(g_file_set_contents(cache, learned, -1, NULL));
    for (int run = 0; run < 2; run++) {
        serve_once(cache);
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(cache, &text, NULL, NULL));
        /* rewritten by the daemon (its header), the record still keyed by its module */
        g_assert_nonnull(strstr(text, "learned by kerneletd"));
        g_assert_nonnull(strstr(text, "entry=k_add module=00000000deadbeef rm=0.125 insts=42"));
    }
    unlink(cache);
    rmdir(dir);
}

static void test_created_when_missing(void)
{
    g_autofree char *dir = g_dir_make_tmp("kprof-XXXXXX", NULL);
    g_autofree char *cache = cache_path(dir);
    serve_once(cache);
    g_assert_true(g_file_test(cache, G_FILE_TEST_EXISTS));
    unlink(cache);
    rmdir(dir);
}

/* A corrupt cache is an operator's error to see at once, not a silent empty cache. */
static void test_bad_file_refused(void)
{
    g_autofree char *dir = g_dir_make_tmp("kprof-XXXXXX", NULL);
    g_autofree char *cache = cache_path(dir);
    g_autofree char *sock = g_build_filename(dir, "s", NULL);
    g_assert_true(g_file_set_contents(cache, "# ok\nprofile entry=k module=zz rm=0.1 insts=1\n",
                                      -1, NULL));
    const char *argv[] = {kerneletd, "--backend", "emu", "--socket", sock, "--profile-cache",
                          cache, NULL};
    g_autofree char *err = NULL;
    gint status;
    g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                               NULL, NULL, &err, &status, NULL));
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    g_assert_nonnull(strstr(err, "line 2"));
    g_assert_nonnull(strstr(err, "module"));
    unlink(cache);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        fprintf(stderr, "usage: %s KERNELETD\n", argv[0]);
        return 2;
    }
    kerneletd = argv[1];
    g_test_add_func("/kerneletd/profile-cache/kept-across-restart", test_kept_across_restart);
    g_test_add_func("/kerneletd/profile-cache/created-when-missing", test_created_when_missing);
    g_test_add_func("/kerneletd/profile-cache/bad-file-refused", test_bad_file_refused);
    return g_test_run();
}
