/* kerneletd --cpus: a list that is not one is refused before the daemon serves; a daemon
 * given one CPU runs every thread it has (the backend's, the server's) there and serves.
 *   test_kerneletd_cpus KERNELETD --tap */
#define _GNU_SOURCE
#include <dirent.h>
#include <glib.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "daemon_util.h"

static const char *kerneletd;

static void test_rejects(void)
{
    static const char *const bad[] = {"", "a", "3-1", "0,,1", "0-", "-1", "99999", "1 2",
                                      "0,", "0-7x"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_test_message("--cpus '%s'", bad[i]);
        g_assert_cmpint(daemon_option_status(kerneletd, "--cpus", bad[i]), ==, 2);
    }
    /* a list that is one passes the options and fails later, at the socket */
    g_assert_cmpint(daemon_option_status(kerneletd, "--cpus", "0,1-1"), ==, 1);
}

/* The lowest CPU this process may run on. */
static int first_allowed_cpu(void)
{
    cpu_set_t set;
    g_assert_cmpint(sched_getaffinity(0, sizeof(set), &set), ==, 0);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            return c;
    g_assert_not_reached();
}

/* How many threads of pid have exactly `want` as Cpus_allowed_list, of how many. */
static unsigned threads_on(pid_t pid, const char *want, unsigned *total)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    g_assert_nonnull(d);
    unsigned on = 0;
    *total = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[384], *text = NULL;
        snprintf(path, sizeof(path), "%s/%s/status", dir, e->d_name);
        if (!g_file_get_contents(path, &text, NULL, NULL))
            continue;       /* the thread ended meanwhile */
        const char *line = strstr(text, "Cpus_allowed_list:");
        g_assert_nonnull(line);
        char list[64] = "";
        sscanf(line, "Cpus_allowed_list: %63s", list);
        on += strcmp(list, want) == 0;
        (*total)++;
        g_free(text);
    }
    closedir(d);
    return on;
}

static void test_confines(void)
{
    char cpu[16];
    snprintf(cpu, sizeof(cpu), "%d", first_allowed_cpu());
    const char *extra[] = {"--cpus", cpu, NULL};
    struct daemon d;
    double seconds;
    daemon_start(&d, kerneletd, extra);
    g_assert_true(tenant_round_trip(d.socket, "confined"));
    unsigned total, on = threads_on(d.pid, cpu, &total);
    g_test_message("%u of %u threads on CPU %s", on, total, cpu);
    g_assert_cmpuint(total, >, 1);      /* the backend's threads as well as main */
    g_assert_cmpuint(on, ==, total);
    g_assert_cmpint(daemon_stop(&d, 20, &seconds), ==, 0);
}

int main(int argc, char **argv)
{
    kerneletd = daemon_test_init(&argc, &argv);
    g_test_add_func("/kerneletd/cpus/rejects", test_rejects);
    g_test_add_func("/kerneletd/cpus/confines", test_confines);
    return g_test_run();
}
