/* The standalone benchmark programs reject bad command lines before touching CUDA, so this
 * runs without a GPU: unknown options, malformed numbers and out-of-range sizes must give
 * exit status 2 and a message on stderr. KERNELET_BENCH_PROGRAM_DIR names the build folder
 * holding them (set by meson when nvcc is available). */
#include <glib.h>
#include <string.h>
#include <sys/wait.h>

typedef struct {
    const char *program;
    const char *arg;
    const char *message; /* expected in stderr */
} bad_case;

static const bad_case cases[] = {
    {"pc", "--bogus", "usage: pc"},
    {"pc", "--bits=99", "--bits in"},
    {"pc", "--steps=abc", "bad value for --steps"},
    {"sad", "--width=1921", "multiples of 8"},
    {"sad", "--range=17", "range <= 16"},
    {"spmv", "--rows=0", "--rows in"},
    {"st", "--nz=-4", "bad value for --nz"},
    {"mm", "--k=24", "multiples of 16"},
    {"mriq", "--samples=", "bad value for --samples"},
    {"bs", "--vols=5000", "--vols in"},
    {"tea", "--blocks=0", "--blocks must be"},
    {"tea", "--repeat=0", "usage: tea"},
    {"tea", "stray", "usage: tea"},
};

static void test_bad_command_lines(void)
{
    const char *dir = g_getenv("KERNELET_BENCH_PROGRAM_DIR");
    if (!dir || !*dir) {
        g_test_skip("KERNELET_BENCH_PROGRAM_DIR not set (no CUDA toolchain)");
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *path = g_build_filename(dir, cases[i].program, NULL);
        char *argv[] = {path, (char *)cases[i].arg, NULL};
        char *out = NULL, *err = NULL;
        int status = 0;
        GError *error = NULL;
        g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                                   &status, &error));
        g_assert_no_error(error);
        g_test_message("%s %s -> %s", cases[i].program, cases[i].arg, err);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 2);
        g_assert_nonnull(strstr(err, cases[i].message));
        g_assert_cmpstr(out, ==, ""); /* no RESULT line */
        g_free(out);
        g_free(err);
        g_free(path);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/programs/bad-command-lines", test_bad_command_lines);
    return g_test_run();
}
