/* The kernelet policy's pair evaluations made when a class gets its profile, outside the
 * decisions (sched_precompute.c): decisions find every pair cached, the evaluations are
 * counted apart from them, and the schedule is exactly the one the decisions made when
 * they evaluated each pair themselves (ksched_config.lazy_pairs). */
#include "profile.h"
#include "sched_internal.h"     /* the window test below looks at one pair directly */
#include "sched_test.h"

#define N_NAMES 5
#define N_LAUNCHES 80

static const char *const names[N_NAMES] = {"comp", "mem", "mid", "mem2", "comp2"};

/* Everything the scheduler did, as text: decisions (kernels, split, slices, CP to the last
 * bit) and slices (kernel, blocks, lane, times). */
static void on_trace(void *user, const ksched_trace *t)
{
    GString *log = user;
    if (t->kind == KSCHED_TRACE_DECISION)
        g_string_append_printf(log, "D %llu %llu/%llu %u/%u %llu/%llu %a %u %u %u\n",
                               (unsigned long long)t->now_ns, (unsigned long long)t->op[0],
                               (unsigned long long)t->op[1], t->blocks_per_sm[0],
                               t->blocks_per_sm[1], (unsigned long long)t->slice_blocks[0],
                               (unsigned long long)t->slice_blocks[1], t->cp,
                               t->pairs_considered, t->pairs_pruned, t->widenings);
    else if (t->kind == KSCHED_TRACE_SLICE || t->kind == KSCHED_TRACE_SLICE_DONE)
        g_string_append_printf(log, "%c %llu %llu+%llu lane %u %llu-%llu %d\n",
                               t->kind == KSCHED_TRACE_SLICE ? 'S' : 'E',
                               (unsigned long long)t->op[0], (unsigned long long)t->first,
                               (unsigned long long)t->count, t->lane,
                               (unsigned long long)t->start_ns, (unsigned long long)t->end_ns,
                               t->status);
}

static void add_kernels(tenv *t)
{
    kbackend_profile mem2 = test_profile(0.1, 600, 0.2, 0.5);
    kbackend_profile comp2 = test_profile(0.01, 1500, 0.7, 0.15);
    g_assert_cmpint(ksim_add_kernel(t->sim, "mem2", &mem2, NULL), ==, 0);
    g_assert_cmpint(ksim_add_kernel(t->sim, "comp2", &comp2, NULL), ==, 0);
}

/* A seeded stream of launches of the five kernels (two block shapes of comp: six classes)
 * on four streams, arriving over time while the scheduler runs. */
static void workload(tenv *t)
{
    uint32_t tenant = tenv_tenant(t, "a"), fns[N_NAMES], streams[4] = {0};
    tenv_functions(t, tenant, names, N_NAMES, 1, fns);
    for (int i = 1; i < 4; i++)
        streams[i] = tenv_stream(t, tenant);
    uint64_t r = 12345, at = 0;
    for (unsigned i = 0; i < N_LAUNCHES; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)(r >> 33) % N_NAMES;
        unsigned block = k == 0 && (r >> 20) % 2 ? 256 : 128;
        ksched_op op = launch_op(fns[k], 132 * (8 + (unsigned)(r >> 40) % 24), 1, block);
        tenv_submit(t, tenant, streams[i % 4], &op, NULL, NULL);
        if (i % 4 == 3) {       /* a burst of four, then a pause */
            at += (r >> 45) % 200000;
            g_assert_cmpint(ksched_run_until(t->s, at, NULL), ==, 0);
        }
    }
    tenv_run(t);
}

/* Runs the workload under kernelet (lazy_pairs as given) from the profiles (NULL: the sim
 * profiles each kernel on first sight); its trace, statistics, and (when snap is not NULL)
 * the profiles it learned. */
static GString *run(int lazy, const ksched_profile_cache *profiles, ksched_stats *st,
                    ksched_profile_cache **snap)
{
    GString *log = g_string_new("");
    ksched_config c;
    ksched_config_default(&c);
    c.lazy_pairs = lazy;
    c.trace = on_trace;
    c.trace_user = log;
    tenv *t = tenv_new_profiled(&c, NULL, profiles);
    add_kernels(t);
    workload(t);
    ksched_get_stats(t->s, st);
    if (snap)
        g_assert_cmpint(ksched_profiles_snapshot(t->s, snap, NULL), ==, 0);
    tenv_free(t);
    return log;
}

#define CLASSES 6
#define ALL_PAIRS (CLASSES * (CLASSES - 1) / 2)

/* Profiled on the run: every pair is evaluated when its second class gets its profile, none
 * in a decision; lazily, only in decisions. */
static void test_counts(void)
{
    ksched_stats eager, lazy;
    g_string_free(run(0, NULL, &eager, NULL), TRUE);
    g_string_free(run(1, NULL, &lazy, NULL), TRUE);
    g_test_message("eager: %llu precomputed in %.0f us (%.1f us on the lock), %llu in "
                   "decisions; lazy: %llu in decisions",
                   (unsigned long long)eager.pairs_precomputed,
                   eager.precompute_ns_total / 1e3, eager.precompute_locked_ns / 1e3,
                   (unsigned long long)eager.pairs_evaluated,
                   (unsigned long long)lazy.pairs_evaluated);
    g_assert_cmpuint(eager.profiles, ==, N_NAMES);
    g_assert_cmpuint(eager.pairs_precomputed, ==, ALL_PAIRS);
    g_assert_cmpuint(eager.pairs_evaluated, ==, 0);
    g_assert_cmpuint(eager.precompute_ns_total, >, 0);
    g_assert_cmpuint(eager.precompute_ns_max, <=, eager.precompute_ns_total);
    g_assert_cmpuint(lazy.pairs_precomputed, ==, 0);
    g_assert_cmpuint(lazy.pairs_evaluated, >, 0);
    g_assert_cmpuint(lazy.pairs_evaluated, <=, ALL_PAIRS);
    g_assert_cmpuint(lazy.precompute_ns_total, ==, 0);
    g_assert_cmpuint(eager.coschedules, >, 0);
}

static void assert_same_schedule(const ksched_profile_cache *profiles)
{
    ksched_stats eager, lazy;
    GString *a = run(0, profiles, &eager, NULL), *b = run(1, profiles, &lazy, NULL);
    g_assert_cmpuint(eager.coschedules, >, 0);
    g_assert_cmpuint(eager.pairs_evaluated, ==, 0);
    g_assert_cmpuint(lazy.pairs_evaluated, >, 0);
    g_assert_cmpuint(eager.decisions, ==, lazy.decisions);
    g_assert_cmpuint(a->len, >, 0);
    g_assert_cmpstr(a->str, ==, b->str);
    g_string_free(a, TRUE);
    g_string_free(b, TRUE);
}

/* The same decisions, slices and times with and without the evaluations made beforehand:
 * kernels profiled on the run (the evaluations come with the profile's completion) ... */
static void test_same_choices_online(void)
{
    assert_same_schedule(NULL);
}

/* ... and from a profile cache (the class is profiled when its first kernel arrives). */
static void test_same_choices_cached(void)
{
    ksched_stats st;
    ksched_profile_cache *pc = NULL;
    g_string_free(run(1, NULL, &st, &pc), TRUE);
    g_assert_cmpuint(ksched_profile_cache_count(pc), ==, N_NAMES);
    assert_same_schedule(pc);
    ksched_profile_cache_free(pc);
}

/* The workload run under base from the profiles (NULL: profiled on the run); the scheduler
 * stays for the caller. */
static tenv *base_run(const ksched_profile_cache *profiles)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = KSCHED_BASE;
    tenv *t = tenv_new_profiled(&c, NULL, profiles);
    add_kernels(t);
    workload(t);
    return t;
}

/* Classes profiled under another policy get their pairs evaluated when kernelet takes
 * over, before its first decision. */
static void test_policy_switch(void)
{
    ksched_stats st;
    ksched_profile_cache *pc = NULL;
    g_string_free(run(1, NULL, &st, &pc), TRUE);
    tenv *t = base_run(pc);
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.pairs_precomputed, ==, 0);   /* base pairs nothing */
    g_assert_cmpint(ksched_set_policy(t->s, KSCHED_KERNELET, NULL), ==, 0);
    workload(t);
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.pairs_precomputed, ==, ALL_PAIRS);
    g_assert_cmpuint(st.pairs_evaluated, ==, 0);
    g_assert_cmpuint(st.coschedules, >, 0);
    tenv_free(t);
    ksched_profile_cache_free(pc);
}

/* While another thread evaluates a class's pairs (with the lock released), a decision that
 * meets one of them does not evaluate it too: the class is not paired until they are
 * stored (sched_pair_model answers NULL, counting nothing); afterwards it evaluates as
 * before. Classes profiled under base, whose kernelet pairs nobody evaluated yet. */
static void test_window_not_paired(void)
{
    tenv *t = base_run(NULL);
    ksched *s = t->s;
    g_assert_cmpuint(s->n_classes, >=, 2);
    sched_class *a = s->classes[0], *b = s->classes[1];
    g_assert_null(sched_pair_find(s, a->index, b->index, KSCHED_KERNELET));
    uint64_t before = s->stats.pairs_evaluated;
    a->pairs_evaluating = 1;
    g_assert_null(sched_pair_model(s, a, b));
    g_assert_null(sched_pair_model(s, b, a));
    g_assert_cmpuint(s->stats.pairs_evaluated, ==, before);
    g_assert_null(sched_pair_find(s, a->index, b->index, KSCHED_KERNELET));
    a->pairs_evaluating = 0;
    g_assert_nonnull(sched_pair_model(s, a, b));
    g_assert_cmpuint(s->stats.pairs_evaluated, ==, before + 1);
    tenv_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/precompute/counts", test_counts);
    g_test_add_func("/precompute/same-choices-online", test_same_choices_online);
    g_test_add_func("/precompute/same-choices-cached", test_same_choices_cached);
    g_test_add_func("/precompute/policy-switch", test_policy_switch);
    g_test_add_func("/precompute/window-not-paired", test_window_not_paired);
    return g_test_run();
}
