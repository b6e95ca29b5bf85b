/* Unit tests of the range table (include/kernelet/range_table.h): lookups at and across
 * the edges of ranges, overlaps, exact starts, the same range twice, removal, filtering,
 * and many entries inserted in random order against a plain list. */
#include <glib.h>

#include "kernelet/range_table.h"

typedef struct entry {
    krange r;
    unsigned tag;
} entry;

/* [0x1000, +0x100), [0x2000, +0x10), [0x3000, +1) tagged 1, 2, 3, inserted out of order. */
static void three(krange_table *t)
{
    krange_table_init(t, sizeof(entry));
    const uint64_t base[3] = {0x2000, 0x3000, 0x1000}, size[3] = {0x10, 1, 0x100};
    const unsigned tag[3] = {2, 3, 1};
    for (int i = 0; i < 3; i++) {
        entry *e = krange_insert(t, base[i], size[i]);
        g_assert_nonnull(e);
        g_assert_cmpuint(e->tag, ==, 0);        /* zeroed for the caller */
        e->tag = tag[i];
    }
}

static unsigned tag_of(const void *e)
{
    return e ? ((const entry *)e)->tag : 0;
}

static void test_empty(void)
{
    krange_table t = KRANGE_TABLE_INIT(sizeof(entry));
    g_assert_cmpuint(krange_count(&t), ==, 0);
    g_assert_null(krange_find(&t, 0, 0));
    g_assert_null(krange_find(&t, UINT64_MAX, 1));
    g_assert_null(krange_exact(&t, 0));
    g_assert_null(krange_overlap(&t, 0, UINT64_MAX));
    g_assert_cmpuint(krange_upper(&t, UINT64_MAX), ==, 0);
    krange_table_clear(&t);
}

static void test_order(void)
{
    krange_table t;
    three(&t);
    g_assert_cmpuint(krange_count(&t), ==, 3);
    for (unsigned i = 0; i < 3; i++)
        g_assert_cmpuint(tag_of(krange_at(&t, i)), ==, i + 1);
    g_assert_cmpuint(krange_upper(&t, 0xfff), ==, 0);
    g_assert_cmpuint(krange_upper(&t, 0x1000), ==, 1);
    g_assert_cmpuint(krange_upper(&t, 0x2fff), ==, 2);
    g_assert_cmpuint(krange_upper(&t, UINT64_MAX), ==, 3);
    krange_table_clear(&t);
}

static void test_boundaries(void)
{
    krange_table t;
    three(&t);
    g_assert_null(krange_find(&t, 0xfff, 1));              /* just before */
    g_assert_cmpuint(tag_of(krange_find(&t, 0x1000, 1)), ==, 1);     /* first byte */
    g_assert_cmpuint(tag_of(krange_find(&t, 0x10ff, 1)), ==, 1);     /* last byte */
    g_assert_null(krange_find(&t, 0x1100, 1));             /* one past the end */
    g_assert_cmpuint(tag_of(krange_find(&t, 0x1000, 0x100)), ==, 1); /* all of it */
    g_assert_null(krange_find(&t, 0x1000, 0x101));         /* one byte too many */
    g_assert_null(krange_find(&t, 0x10ff, 2));             /* runs off the end */
    g_assert_null(krange_find(&t, 0x1080, UINT64_MAX));    /* would wrap */
    g_assert_cmpuint(tag_of(krange_find(&t, 0x10ff, 0)), ==, 1);     /* 0 bytes: the address */
    g_assert_null(krange_find(&t, 0x1100, 0));
    g_assert_cmpuint(tag_of(krange_find(&t, 0x3000, 1)), ==, 3);     /* one-byte range */
    g_assert_null(krange_find(&t, 0x3001, 0));
    g_assert_null(krange_find(&t, 0x1500, 1));             /* in a gap */
    krange_table_clear(&t);
}

static void test_exact(void)
{
    krange_table t;
    three(&t);
    g_assert_cmpuint(tag_of(krange_exact(&t, 0x2000)), ==, 2);
    g_assert_null(krange_exact(&t, 0x2001));
    g_assert_null(krange_exact(&t, 0x1fff));
    krange_table_clear(&t);
}

static void test_overlap(void)
{
    krange_table t;
    three(&t);
    g_assert_null(krange_overlap(&t, 0x1100, 0xf00));      /* the whole gap, touching both */
    g_assert_cmpuint(tag_of(krange_overlap(&t, 0x1100, 0xf01)), ==, 2);
    g_assert_cmpuint(tag_of(krange_overlap(&t, 0x10ff, 1)), ==, 1);
    g_assert_cmpuint(tag_of(krange_overlap(&t, 0x800, 0x801)), ==, 1);
    g_assert_null(krange_overlap(&t, 0x800, 0x800));
    g_assert_cmpuint(tag_of(krange_overlap(&t, 0x1010, 0x10)), ==, 1);   /* inside */
    g_assert_cmpuint(tag_of(krange_overlap(&t, 0, UINT64_MAX)), ==, 3);  /* the last one */
    g_assert_cmpuint(tag_of(krange_overlap(&t, 0x2008, UINT64_MAX)), ==, 3); /* saturates */
    g_assert_null(krange_overlap(&t, 0x3001, UINT64_MAX));
    g_assert_null(krange_overlap(&t, 0x1000, 0));          /* no bytes, no overlap */
    krange_table_clear(&t);
}

/* The same range twice (a variable through two modules): found, and kept in the order it
 * came in. */
static void test_same_range_twice(void)
{
    krange_table t;
    three(&t);
    entry *e = krange_insert(&t, 0x2000, 0x10);
    e->tag = 4;
    g_assert_cmpuint(krange_count(&t), ==, 4);
    g_assert_cmpuint(tag_of(krange_at(&t, 1)), ==, 2);
    g_assert_cmpuint(tag_of(krange_at(&t, 2)), ==, 4);
    g_assert_cmpuint(tag_of(krange_exact(&t, 0x2000)), ==, 4);
    g_assert_cmpuint(tag_of(krange_find(&t, 0x2004, 4)), ==, 4);
    krange_remove(&t, krange_exact(&t, 0x2000));
    g_assert_cmpuint(tag_of(krange_exact(&t, 0x2000)), ==, 2);
    krange_table_clear(&t);
}

static void test_remove(void)
{
    krange_table t;
    three(&t);
    krange_remove(&t, krange_exact(&t, 0x1000));           /* the first */
    g_assert_null(krange_find(&t, 0x1000, 1));
    g_assert_cmpuint(tag_of(krange_at(&t, 0)), ==, 2);
    krange_remove(&t, krange_exact(&t, 0x3000));           /* the last */
    g_assert_cmpuint(krange_count(&t), ==, 1);
    g_assert_cmpuint(tag_of(krange_find(&t, 0x2000, 0x10)), ==, 2);
    krange_remove(&t, krange_at(&t, 0));
    g_assert_cmpuint(krange_count(&t), ==, 0);
    g_assert_null(krange_find(&t, 0x2000, 1));
    g_assert_nonnull(krange_insert(&t, 0x2000, 1));        /* usable again */
    krange_table_clear(&t);
    g_assert_cmpuint(krange_count(&t), ==, 0);
}

static int odd_tag(const void *e, void *user)
{
    (*(unsigned *)user)++;
    return tag_of(e) % 2;
}

static void test_remove_if(void)
{
    krange_table t;
    three(&t);
    unsigned calls = 0;
    g_assert_cmpuint(krange_remove_if(&t, odd_tag, &calls), ==, 2);
    g_assert_cmpuint(calls, ==, 3);
    g_assert_cmpuint(krange_count(&t), ==, 1);
    g_assert_cmpuint(tag_of(krange_at(&t, 0)), ==, 2);
    g_assert_cmpuint(krange_remove_if(&t, odd_tag, &calls), ==, 0);
    krange_table_clear(&t);
}

/* Thousands of ranges of random sizes at random, non-overlapping places, inserted in random
 * order and half of them removed: every lookup agrees with a scan of a plain list. */
static const entry *scan(const entry *all, const gboolean *live, unsigned n, uint64_t a,
                         uint64_t bytes)
{
    for (unsigned i = 0; i < n; i++)
        if (live[i] && a - all[i].r.base < all[i].r.size &&
            bytes <= all[i].r.size - (a - all[i].r.base))
            return &all[i];
    return NULL;
}

static gboolean any_overlap(const entry *all, const gboolean *live, unsigned n, uint64_t a,
                            uint64_t bytes)
{
    for (unsigned i = 0; i < n; i++)
        if (live[i] && bytes && all[i].r.base < a + bytes && a < all[i].r.base + all[i].r.size)
            return TRUE;
    return FALSE;
}

static void test_many(void)
{
    enum { N = 5000 };
    GRand *rng = g_rand_new_with_seed(7);
    entry *all = g_new0(entry, N);
    gboolean *live = g_new0(gboolean, N);
    uint64_t at = 0x10000;
    for (unsigned i = 0; i < N; i++) {      /* slots of 4 KiB, a range somewhere inside */
        all[i].r.size = (uint64_t)g_rand_int_range(rng, 1, 2049);
        all[i].r.base = at + (uint64_t)g_rand_int_range(rng, 0, 4096 - (int)all[i].r.size);
        all[i].tag = i + 1;
        at += 4096;
    }
    krange_table t;
    krange_table_init(&t, sizeof(entry));
    for (unsigned k = 0; k < N; k++) {      /* a random order: swap into place */
        unsigned j = k + (unsigned)g_rand_int_range(rng, 0, (gint32)(N - k));
        entry tmp = all[k];
        all[k] = all[j];
        all[j] = tmp;
        entry *e = krange_insert(&t, all[k].r.base, all[k].r.size);
        g_assert_nonnull(e);
        e->tag = all[k].tag;
        live[k] = TRUE;
    }
    for (unsigned k = 0; k < N; k += 2) {
        krange_remove(&t, krange_exact(&t, all[k].r.base));
        live[k] = FALSE;
    }
    g_assert_cmpuint(krange_count(&t), ==, N / 2);
    for (size_t i = 1; i < krange_count(&t); i++)
        g_assert_cmpuint(((krange *)krange_at(&t, i - 1))->base, <,
                         ((krange *)krange_at(&t, i))->base);
    for (unsigned q = 0; q < 20000; q++) {
        uint64_t a = 0x10000 + (uint64_t)g_rand_int_range(rng, -16, N * 4096 + 16);
        uint64_t bytes = (uint64_t)g_rand_int_range(rng, 0, 64);
        g_assert_cmpuint(tag_of(krange_find(&t, a, bytes)), ==, tag_of(scan(all, live, N, a,
                                                                                  bytes)));
        if (q % 4 == 0) {
            uint64_t wide = bytes * 128;    /* spans several slots */
            g_assert_cmpint(krange_overlap(&t, a, wide) != NULL, ==,
                            any_overlap(all, live, N, a, wide));
        }
    }
    krange_table_clear(&t);
    g_free(live);
    g_free(all);
    g_rand_free(rng);
}

/* First fit around [0x1000, +0x100), [0x2000, +0x10), [0x3000, +1). */
static void test_first_fit(void)
{
    krange_table t;
    uint64_t a = 0;
    three(&t);
    g_assert_cmpint(krange_first_fit(&t, 0x1000, 0x4000, 0x100, 0x100, &a), ==, 0);
    g_assert_cmpuint(a, ==, 0x1100);                /* right after the first */
    g_assert_cmpint(krange_first_fit(&t, 0x1000, 0x4000, 0xf00, 0, &a), ==, 0);
    g_assert_cmpuint(a, ==, 0x1100);                /* exactly up to the second */
    g_assert_cmpint(krange_first_fit(&t, 0x1000, 0x4000, 0xf01, 0, &a), ==, 0);
    g_assert_cmpuint(a, ==, 0x2010);                /* 0xff0 between second and third */
    g_assert_cmpint(krange_first_fit(&t, 0x1080, 0x4000, 0x10, 0x1000, &a), ==, -1);
    g_assert_cmpint(krange_first_fit(&t, 0x1080, 0x5000, 0x10, 0x1000, &a), ==, 0);
    g_assert_cmpuint(a, ==, 0x4000);                /* aligned, after the third */
    g_assert_cmpint(krange_first_fit(&t, 0x3000, 0x3001, 1, 0, &a), ==, -1);   /* taken */
    g_assert_cmpint(krange_first_fit(&t, 0x2010, 0x3000, 0xff1, 0, &a), ==, -1);
    g_assert_cmpint(krange_first_fit(&t, 0x3001, 0x4000, 0xfff, 0, &a), ==, 0);
    g_assert_cmpuint(a, ==, 0x3001);
    g_assert_cmpint(krange_first_fit(&t, UINT64_MAX - 4, UINT64_MAX, 2, 16, &a), ==, -1);
    krange_table_clear(&t);
    g_assert_cmpint(krange_first_fit(&t, 0, 0x100, 0x100, 0, &a), ==, 0);       /* empty */
    g_assert_cmpuint(a, ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/range-table/empty", test_empty);
    g_test_add_func("/range-table/order", test_order);
    g_test_add_func("/range-table/boundaries", test_boundaries);
    g_test_add_func("/range-table/exact", test_exact);
    g_test_add_func("/range-table/overlap", test_overlap);
    g_test_add_func("/range-table/same-range-twice", test_same_range_twice);
    g_test_add_func("/range-table/remove", test_remove);
    g_test_add_func("/range-table/remove-if", test_remove_if);
    g_test_add_func("/range-table/many", test_many);
    g_test_add_func("/range-table/first-fit", test_first_fit);
    return g_test_run();
}
