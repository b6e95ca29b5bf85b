/* kerneletd --backend cuda on the fake CUDA driver (tests/cuda/fake/): a tenant's kernel
 * faults, the shared context is lost (the fake's fault is sticky until the primary context
 * is reset, as on a GPU), and the daemon recovers: the tenants whose state was on the lost
 * context see their connection end, and a new tenant is served at once on a fresh context,
 * its kernel's output verified. Before, every later tenant got errors until a restart.
 *   test_kerneletd_recover KERNELETD --tap   (LD_LIBRARY_PATH: the fake libcuda.so.1;
 *                                             KERNELET_TEST_BACKEND=cuda) */
#define _GNU_SOURCE
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"

static const char *kerneletd;

/* The fake driver runs these entries by name: count_blocks adds 1 to counts[block],
 * fault faults the device. */
static const char fake_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry count_blocks(.param .u64 counts)\n{\n\tret;\n}\n"
    ".visible .entry fault(.param .u64 p)\n{\n\tret;\n}\n";

static uint64_t fake_function(struct client *c, const char *name)
{
    struct kernelet_function f;
    struct kernelet_param p[8];
    uint64_t fn = client_function(c, client_module_ptx(c, fake_ptx), name, &f, p);
    g_assert_cmpuint(fn, !=, 0);
    return fn;
}

/* A tenant's whole round trip on the fake device: 8 blocks counted once each. */
static void counted_round_trip(const char *socket)
{
    struct client c;
    uint32_t *out;
    g_assert_true(client_open_path(&c, socket, "after", false));
    uint64_t counts = client_alloc(&c, 8 * 4);
    uint32_t rid = client_region(&c, 8 * 4, (void **)&out);
    uint64_t fn = fake_function(&c, "count_blocks");
    g_assert_cmpint(client_launches(&c, fn, &counts, sizeof(counts), 1, 32, false), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(client_copy(&c, KERNELET_COPY_DTOH, rid, 0, counts, 8 * 4, NULL, 0, true),
                    ==, KERNELET_ST_OK);
    for (unsigned i = 0; i < 8; i++)
        g_assert_cmpuint(out[i], ==, 1);
    client_close(&c);
}

static bool log_says(const struct daemon *d, const char *what)
{
    g_autofree char *text = NULL;
    return g_file_get_contents(d->log, &text, NULL, NULL) && strstr(text, what);
}

static void fault_then_fresh_context(const char *expect_in_log)
{
    struct daemon d;
    struct client victim, bystander;
    double took;

    daemon_start(&d, kerneletd, NULL);
    counted_round_trip(d.socket);                 /* the device works before */
    g_assert_true(client_open_path(&bystander, d.socket, "bystander", false));
    uint64_t kept = client_alloc(&bystander, 4096);
    g_assert_cmpuint(kept, !=, 0);
    g_assert_true(client_open_path(&victim, d.socket, "faulting", false));
    uint64_t p = client_alloc(&victim, 64);
    uint64_t fn = fake_function(&victim, "fault");
    g_assert_cmpint(client_launches(&victim, fn, &p, sizeof(p), 1, 32, true), !=,
                    KERNELET_ST_OK);
    /* Every tenant's state was on the lost context: both connections end. */
    g_assert_true(client_closed_by_server(&victim, 10000));
    g_assert_true(client_closed_by_server(&bystander, 10000));
    client_close(&victim);
    client_close(&bystander);
    /* A new tenant is served on a fresh context: its output verifies. */
    for (int i = 0; i < 200 && !log_says(&d, expect_in_log); i++)
        g_usleep(50000);
    g_assert_true(log_says(&d, "the device was lost"));
    g_assert_true(log_says(&d, expect_in_log));
    for (int i = 0; i < 200 && !g_file_test(d.socket, G_FILE_TEST_EXISTS); i++)
        g_usleep(50000);                          /* a restarted daemon makes it again */
    for (int i = 0; i < 100; i++) {               /* and listens on it soon after */
        int fd = idle_connect(d.socket);
        if (fd >= 0) {
            close(fd);
            break;
        }
        g_usleep(50000);
    }
    counted_round_trip(d.socket);
    counted_round_trip(d.socket);
    g_assert_true(daemon_alive(&d));
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* The fake driver resets the context: the daemon recovers in its own process. */
static void test_fault_then_fresh_context(void)
{
    g_unsetenv("FAKE_CUDA_STICKY_PROCESS");
    fault_then_fresh_context("serving again on a fresh device context");
}

/* As on a GPU, the sticky error outlives the reset in the process that saw it: the daemon
 * executes itself anew (same pid, same socket) and serves from the new process. */
static void test_fault_then_restart(void)
{
    g_setenv("FAKE_CUDA_STICKY_PROCESS", "1", TRUE);
    fault_then_fresh_context("restarting for a fresh device");
    g_unsetenv("FAKE_CUDA_STICKY_PROCESS");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        fprintf(stderr, "usage: %s KERNELETD\n", argv[0]);
        return 2;
    }
    kerneletd = argv[1];
    g_test_add_func("/kerneletd/recover/fault-then-fresh-context", test_fault_then_fresh_context);
    g_test_add_func("/kerneletd/recover/fault-then-restart", test_fault_then_restart);
    return g_test_run();
}
