/* kerneletd (emu) against a guest process whose kernels reach for another process's memory
 * in the same VM (issue 15: one connection, two client contexts). Context A writes a
 * secret into its allocation; context B launches a kernel given A's pointer that copies
 * A's words into B's buffer and then overwrites them. Each context has its own address
 * window, so B's kernel is fenced into B's: B never sees the secret and A's bytes are
 * unchanged, also when B launches a function A loaded. With --no-fence the same attack
 * succeeds (the test can fail). A connection's contexts hold at most --max-contexts
 * windows, and a closed context gives its window back.
 *   test_kerneletd_contexts KERNELETD --tap */
#define _GNU_SOURCE
#include <glib.h>
#include <string.h>

#include "daemon_util.h"
#include "kernelet/protocol.h"
#include "server_harness.h"
#include "steal_ptx.h"

enum { WORDS = 256, THREADS = 32 };     /* client_launches runs 8 blocks */
#define SECRET 0x5ec2e700u
enum { CTX_A = 7, CTX_B = 8 };

static const char *kerneletd;

static const char steal_ptx[] = STEAL_HEADER STEAL("steal_global", ".global")
    STEAL("steal_generic", "");

/* WORDS words of SECRET at the first allocation of c's current context. */
static uint64_t secret_alloc(struct client *c)
{
    uint32_t *buf;
    uint64_t p = client_alloc(c, WORDS * 4);
    uint32_t r = client_region(c, WORDS * 4, (void **)&buf);

    for (unsigned i = 0; i < WORDS; i++)
        buf[i] = SECRET + i;
    g_assert_cmpint(client_copy(c, KERNELET_COPY_HTOD, r, p, 0, WORDS * 4, NULL, 0, true), ==,
                    KERNELET_ST_OK);
    return p;
}

/* How many words at p (c's current context's memory) hold the secret. */
static unsigned secret_words(struct client *c, uint64_t p)
{
    uint32_t *buf;
    unsigned n = 0;
    uint32_t r = client_region(c, WORDS * 4, (void **)&buf);

    memset(buf, 0, WORDS * 4);
    g_assert_cmpint(client_copy(c, KERNELET_COPY_DTOH, r, 0, p, WORDS * 4, NULL, 0, true), ==,
                    KERNELET_ST_OK);
    for (unsigned i = 0; i < WORDS; i++)
        n += buf[i] == SECRET + i;
    return n;
}

/* Context `attacker` of c launches fn on victim's pointer, its output its own first
 * allocation out (where a fenced pointer to the victim's first one lands): how many
 * secret words it got. */
static unsigned attack(struct client *c, uint32_t attacker, uint64_t fn, uint64_t victim,
                       uint64_t out)
{
    uint64_t args[2] = {victim, out};

    c->context = attacker;
    int st = client_launches(c, fn, args, sizeof(args), 1, THREADS, true);
    g_assert_true(st == KERNELET_ST_OK || st == KERNELET_ST_CUDA);  /* a fault would do */
    return secret_words(c, out);
}

static uint64_t steal_fn(struct client *c, const char *entry)
{
    struct kernelet_function f;
    struct kernelet_param params[2];
    uint64_t fn = client_function(c, client_module_ptx(c, steal_ptx), entry, &f, params);

    g_assert_cmpuint(fn, !=, 0);
    return fn;
}

/* A's secret, then B's attack with entry (loaded by B, or by A when borrowed); *intact
 * gets A's words that still hold it. */
static unsigned run(const char *const *opts, const char *entry, bool borrowed,
                    unsigned *intact)
{
    struct daemon d;
    struct client vm;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&vm, d.socket, "vm", false));
    vm.context = CTX_A;
    uint64_t pa = secret_alloc(&vm);
    uint64_t fn_a = borrowed ? steal_fn(&vm, entry) : 0;
    vm.context = CTX_B;
    uint64_t out = client_alloc(&vm, WORDS * 4);
    uint64_t fn = borrowed ? fn_a : steal_fn(&vm, entry);
    unsigned stolen = attack(&vm, CTX_B, fn, pa, out);
    vm.context = CTX_A;
    *intact = secret_words(&vm, pa);
    g_test_message("%s%s: %u of %u secret words stolen, %u intact", entry,
                   borrowed ? " (A's function)" : "", stolen, WORDS, *intact);
    g_assert_true(daemon_alive(&d));
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    client_close(&vm);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
    return stolen;
}

static void fenced(const char *entry, bool borrowed)
{
    unsigned intact;

    g_assert_cmpuint(run(NULL, entry, borrowed, &intact), ==, 0);
    g_assert_cmpuint(intact, ==, WORDS);
}

static void test_global(void)
{
    fenced("steal_global", false);
}

static void test_generic(void)
{
    fenced("steal_generic", false);
}

/* A function handle of A's module launched by B is fenced into B's window, not A's. */
static void test_borrowed_function(void)
{
    fenced("steal_global", true);
}

/* Without the fence the attack works on one connection: the tests above can fail. */
static void test_no_fence(void)
{
    const char *opts[] = {"--no-fence", NULL};
    unsigned intact;

    g_assert_cmpuint(run(opts, "steal_global", false, &intact), ==, WORDS);
    g_assert_cmpuint(intact, ==, 0);
}

/* The same context number on another connection is another tenant: still fenced. */
static void test_other_connection(void)
{
    struct daemon d;
    struct client vm, other;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&vm, d.socket, "vm", false));
    g_assert_true(client_open_path(&other, d.socket, "vm2", false));
    vm.context = other.context = CTX_A;
    uint64_t pa = secret_alloc(&vm);
    uint64_t out = client_alloc(&other, WORDS * 4);
    g_assert_cmpuint(attack(&other, CTX_A, steal_fn(&other, "steal_global"), pa, out), ==, 0);
    g_assert_cmpuint(secret_words(&vm, pa), ==, WORDS);
    client_close(&other);
    client_close(&vm);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

static int alloc_status(struct client *c, uint32_t context)
{
    struct kernelet_mem_alloc q = {.size = 4096};

    c->context = context;
    return client_call(c, KERNELET_OP_MEM_ALLOC, &q, sizeof(q), -1);
}

/* With --max-contexts 2 a third context's allocation and launch fail with
 * CUDA_ERROR_OUT_OF_MEMORY, logged once; once a context closes (its memory and module
 * gone, its window released) the third is served, and so is a later process that gets
 * the closed one's number. */
static void test_bound(void)
{
    const char *opts[] = {"--max-contexts", "2", NULL};
    struct daemon d;
    struct client vm;
    gchar *log = NULL;
    double took;

    daemon_start(&d, kerneletd, opts);
    g_assert_true(client_open_path(&vm, d.socket, "vm", false));
    g_assert_cmpint(alloc_status(&vm, 1), ==, KERNELET_ST_OK);
    uint64_t fn = steal_fn(&vm, "steal_global");
    g_assert_cmpint(alloc_status(&vm, 2), ==, KERNELET_ST_OK);
    g_assert_cmpint(alloc_status(&vm, 3), ==, KERNELET_ST_CUDA);
    g_assert_cmpuint(vm.cuda, ==, 2 /* CUDA_ERROR_OUT_OF_MEMORY */);
    uint64_t args[2] = {0, 0};
    g_assert_cmpint(client_launches(&vm, fn, args, sizeof(args), 1, THREADS, true), ==,
                    KERNELET_ST_CUDA);
    g_assert_cmpuint(vm.cuda, ==, 2);
    g_assert_cmpint(alloc_status(&vm, 2), ==, KERNELET_ST_OK);  /* the others go on */

    vm.context = 1;
    g_assert_cmpint(client_call(&vm, KERNELET_OP_CONTEXT_CLOSE, NULL, 0, -1), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(alloc_status(&vm, 3), ==, KERNELET_ST_OK);
    g_assert_cmpint(alloc_status(&vm, 1), ==, KERNELET_ST_CUDA);    /* 2 and 3 hold two */
    vm.context = 2;
    g_assert_cmpint(client_call(&vm, KERNELET_OP_CONTEXT_CLOSE, NULL, 0, -1), ==,
                    KERNELET_ST_OK);
    g_assert_cmpint(alloc_status(&vm, 1), ==, KERNELET_ST_OK);
    client_close(&vm);
    g_assert_true(tenant_round_trip(d.socket, "bystander"));
    g_assert_true(g_file_get_contents(d.log, &log, NULL, NULL));
    const char *line = strstr(log, "client context 3 refused");
    g_assert_nonnull(line);
    g_assert_nonnull(strstr(line, "--max-contexts"));
    g_assert_null(strstr(strchr(line, '\n'), "refused: the connection's"));  /* once */
    g_free(log);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

/* Many processes opened and closed one after the other never run out of windows: each
 * close gives its window back (the emulator has 128 of the default size). */
static void test_close_gives_window_back(void)
{
    struct daemon d;
    struct client vm;
    double took;

    daemon_start(&d, kerneletd, NULL);
    g_assert_true(client_open_path(&vm, d.socket, "vm", false));
    for (uint32_t ctx = 1; ctx <= 300; ctx++) {
        g_assert_cmpint(alloc_status(&vm, ctx), ==, KERNELET_ST_OK);
        g_assert_cmpint(client_call(&vm, KERNELET_OP_CONTEXT_CLOSE, NULL, 0, -1), ==,
                        KERNELET_ST_OK);
    }
    client_close(&vm);
    g_assert_cmpint(daemon_stop(&d, 10.0, &took), ==, 0);
}

static void test_bad_options(void)
{
    const char *bad[] = {"0", "1025", "-1", "x"};

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        g_assert_cmpint(daemon_option_status(kerneletd, "--max-contexts", bad[i]), ==, 2);
}

int main(int argc, char **argv)
{
    kerneletd = daemon_test_init(&argc, &argv);
    g_test_add_func("/kerneletd/contexts/fenced-global", test_global);
    g_test_add_func("/kerneletd/contexts/fenced-generic", test_generic);
    g_test_add_func("/kerneletd/contexts/borrowed-function", test_borrowed_function);
    g_test_add_func("/kerneletd/contexts/no-fence", test_no_fence);
    g_test_add_func("/kerneletd/contexts/other-connection", test_other_connection);
    g_test_add_func("/kerneletd/contexts/bound", test_bound);
    g_test_add_func("/kerneletd/contexts/close-gives-window-back", test_close_gives_window_back);
    g_test_add_func("/kerneletd/contexts/bad-options", test_bad_options);
    return g_test_run();
}
