/* Unit tests of the module cache (host-sched/backends/cuda/module_cache.h): a text loads once, is
 * found by content (not by pointer), and leaves with its last holder. */
#include "module_cache.h"

#include <glib.h>
#include <string.h>

#include "profile.h"

static const char A[] = ".version 7.5\n.entry a() { ret; }\n";
static const char B[] = ".version 7.5\n.entry b() { ret; }\n";

static void test_found_by_content(void)
{
    kcuda_module_cache *c;
    g_assert_cmpint(kcuda_module_cache_new(&c, NULL), ==, 0);
    int pa, pb;
    g_assert_null(kcuda_module_cache_acquire(c, A, strlen(A)));
    g_assert_cmpint(kcuda_module_cache_add(c, A, strlen(A), &pa, NULL), ==, 0);
    g_assert_cmpint(kcuda_module_cache_add(c, B, strlen(B), &pb, NULL), ==, 0);
    char *copy = g_strdup(A);           /* same text, another buffer */
    g_assert_true(kcuda_module_cache_acquire(c, copy, strlen(copy)) == &pa);
    g_assert_true(kcuda_module_cache_acquire(c, B, strlen(B)) == &pb);
    g_assert_null(kcuda_module_cache_acquire(c, A, strlen(A) - 1));   /* a prefix differs */
    g_assert_cmpuint(kcuda_module_cache_count(c), ==, 2);
    g_assert_cmphex(kcuda_module_cache_hash(c, &pa), ==, ksched_hash(A, strlen(A)));
    g_free(copy);
    kcuda_module_cache_free(c);
}

static void test_holders(void)
{
    kcuda_module_cache *c;
    g_assert_cmpint(kcuda_module_cache_new(&c, NULL), ==, 0);
    int pa;
    g_assert_cmpint(kcuda_module_cache_add(c, A, strlen(A), &pa, NULL), ==, 0);
    g_assert_nonnull(kcuda_module_cache_acquire(c, A, strlen(A)));
    g_assert_nonnull(kcuda_module_cache_acquire(c, A, strlen(A)));
    g_assert_cmpint(kcuda_module_cache_release(c, &pa, NULL), ==, 2);
    g_assert_cmpint(kcuda_module_cache_release(c, &pa, NULL), ==, 1);
    g_assert_cmpint(kcuda_module_cache_release(c, &pa, NULL), ==, 0);
    g_assert_cmpuint(kcuda_module_cache_count(c), ==, 0);
    g_assert_null(kcuda_module_cache_acquire(c, A, strlen(A)));
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_module_cache_release(c, &pa, &e), ==, KBACKEND_EINVAL);
    g_assert_cmpuint(kcuda_module_cache_hash(c, &pa), ==, 0);
    kcuda_module_cache_free(c);
}

static void test_refusals(void)
{
    kcuda_module_cache *c;
    g_assert_cmpint(kcuda_module_cache_new(&c, NULL), ==, 0);
    int pa;
    g_assert_cmpint(kcuda_module_cache_add(c, A, strlen(A), NULL, NULL), ==, KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_module_cache_add(c, A, strlen(A), &pa, NULL), ==, 0);
    g_assert_cmpint(kcuda_module_cache_add(c, B, strlen(B), &pa, NULL), ==, KBACKEND_EINVAL);
    kcuda_module_cache_free(c);
}

/* Many modules: the entries survive the array growing, and each is found. */
static void test_many(void)
{
    kcuda_module_cache *c;
    g_assert_cmpint(kcuda_module_cache_new(&c, NULL), ==, 0);
    static int payload[100];
    char text[64];
    for (int i = 0; i < 100; i++) {
        g_snprintf(text, sizeof(text), ".entry k%d() { ret; }", i);
        g_assert_cmpint(kcuda_module_cache_add(c, text, strlen(text), &payload[i], NULL), ==, 0);
    }
    for (int i = 99; i >= 0; i--) {
        g_snprintf(text, sizeof(text), ".entry k%d() { ret; }", i);
        g_assert_true(kcuda_module_cache_acquire(c, text, strlen(text)) == &payload[i]);
    }
    for (int i = 0; i < 100; i += 2) {
        g_assert_cmpint(kcuda_module_cache_release(c, &payload[i], NULL), ==, 1);
        g_assert_cmpint(kcuda_module_cache_release(c, &payload[i], NULL), ==, 0);
    }
    g_assert_cmpuint(kcuda_module_cache_count(c), ==, 50);
    for (size_t i = 0; i < 50; i++) {
        int *p = kcuda_module_cache_at(c, i);
        g_assert_true(p >= payload && p < payload + 100 && (p - payload) % 2 == 1);
    }
    kcuda_module_cache_free(c);
}

/* Private payloads (texts with module variables): each load of the same text is its own;
 * a shared payload of the same text is still found. */
static void test_private(void)
{
    kcuda_module_cache *c;
    g_assert_cmpint(kcuda_module_cache_new(&c, NULL), ==, 0);
    int p1, p2, shared;
    g_assert_cmpint(kcuda_module_cache_add_shared(c, A, strlen(A), &p1, 0, NULL), ==, 0);
    g_assert_null(kcuda_module_cache_acquire(c, A, strlen(A)));
    g_assert_cmpint(kcuda_module_cache_add_shared(c, A, strlen(A), &p2, 0, NULL), ==, 0);
    g_assert_cmpuint(kcuda_module_cache_count(c), ==, 2);
    g_assert_cmphex(kcuda_module_cache_hash(c, &p2), ==, ksched_hash(A, strlen(A)));
    g_assert_cmpint(kcuda_module_cache_shared(c, &p1), ==, 0);
    g_assert_cmpint(kcuda_module_cache_add_shared(c, A, strlen(A), &shared, 1, NULL), ==, 0);
    g_assert_cmpint(kcuda_module_cache_shared(c, &shared), ==, 1);
    g_assert_true(kcuda_module_cache_acquire(c, A, strlen(A)) == &shared);
    g_assert_cmpint(kcuda_module_cache_release(c, &p1, NULL), ==, 0);
    g_assert_cmpint(kcuda_module_cache_release(c, &p1, NULL), ==, KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_module_cache_release(c, &p2, NULL), ==, 0);
    g_assert_cmpint(kcuda_module_cache_shared(c, &p2), ==, 0);
    g_assert_cmpint(kcuda_module_cache_release(c, &shared, NULL), ==, 1);
    g_assert_cmpuint(kcuda_module_cache_count(c), ==, 1);
    kcuda_module_cache_free(c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/module-cache/found-by-content", test_found_by_content);
    g_test_add_func("/cuda/module-cache/holders", test_holders);
    g_test_add_func("/cuda/module-cache/refusals", test_refusals);
    g_test_add_func("/cuda/module-cache/many", test_many);
    g_test_add_func("/cuda/module-cache/private", test_private);
    return g_test_run();
}
