/* The policies on the sim: every block once under every policy (sliced, whole-only and
 * unsliceable kernels, 2-D grids, two tenants), pruning and its widening, reaction to an
 * arrival, determinism, and kernelet's gain over base against the model's prediction. */
#include <math.h>

#include "bench.h"
#include "sched_test.h"

/* ---- a trace recorder ---- */

typedef struct tracer {
    GArray *ev;         /* ksched_trace, entries copied */
} tracer;

static void on_trace(void *user, const ksched_trace *t)
{
    tracer *tr = user;
    ksched_trace c = *t;
    c.entry[0] = c.entry[1] = NULL;     /* not valid after the call */
    g_array_append_val(tr->ev, c);
}

/* A scheduler on config c whose trace goes to tr. */
static tenv *traced_env_with(ksched_config *c, tracer *tr)
{
    c->trace = on_trace;
    c->trace_user = tr;
    tr->ev = g_array_new(FALSE, FALSE, sizeof(ksched_trace));
    return tenv_new(c, NULL);
}

static tenv *traced_env(ksched_policy p, tracer *tr, uint64_t seed)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    c.seed = seed;
    return traced_env_with(&c, tr);
}

/* ---- every block exactly once ---- */

typedef struct launched {
    uint64_t op, blocks;
    rec r;
} launched;

static void test_blocks_once(gconstpointer data)
{
    ksched_policy p = (ksched_policy)GPOINTER_TO_INT(data);
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    ksim_config sc;
    ksim_config_default(&sc);
    sc.profile_blocks = 100;   /* the profiler runs the first 100 blocks of each new kernel */
    tenv *t = tenv_new(&c, &sc);
    GRand *r = g_rand_new_with_seed(42 + (guint32)p);
    uint32_t ta = tenv_tenant(t, "a"), tb = tenv_tenant(t, "b");
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.slicing = 0;                       /* b's kernels run whole */
    g_assert_cmpint(ksched_tenant_set_policy(t->s, tb, &pol, NULL), ==, 0);
    const char *names[3] = {"comp", "mem", "mid"};
    uint32_t fa[3], fb[3], fw;
    tenv_functions(t, ta, names, 3, 1, fa);
    tenv_functions(t, tb, names, 3, 1, fb);
    tenv_functions(t, ta, names + 2, 1, 0, &fw);   /* no sliced variant: runs whole */
    enum { N = 60 };
    launched *l = g_new0(launched, N);
    for (int i = 0; i < N; i++) {
        int who = g_rand_int_range(r, 0, 3);
        uint32_t tn = who == 1 ? tb : ta;
        uint32_t fn = who == 2 && i % 5 == 0 ? fw : (who == 1 ? fb : fa)[g_rand_int_range(r, 0, 3)];
        unsigned gx = (unsigned)g_rand_int_range(r, 1, 700), gy = (unsigned)g_rand_int_range(r, 1, 9);
        ksched_op op = launch_op(fn, gx, gy, (unsigned)g_rand_int_range(r, 1, 9) * 32);
        l[i].blocks = (uint64_t)gx * gy;
        l[i].op = tenv_submit(t, tn, tenv_stream(t, tn), &op, rec_done, &l[i].r);
        if (i % 10 == 9)
            g_assert_cmpint(ksched_run_until(t->s, ksched_now(t->s) + 20000, NULL), ==, 0);
    }
    tenv_run(t);
    for (int i = 0; i < N; i++) {
        g_assert_true(l[i].r.seen);
        g_assert_cmpint(l[i].r.r.status, ==, 0);
        assert_blocks_once(t, l[i].op, l[i].blocks);
    }
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.kernels_completed, ==, N);
    if (p >= KSCHED_KERNELET)
        g_assert_cmpuint(st.slices, >, N);          /* something was sliced */
    else
        g_assert_cmpuint(st.slices, ==, N);         /* fifo and base run kernels whole */
    g_free(l);
    g_rand_free(r);
    tenv_free(t);
}

/* A profiler that runs an unsliced launch whole as its own profile (blocks_done = count):
 * that launch is not run again, the others of its kernel run normally, and sliced kernels
 * are not affected. */
static void test_profile_whole(void)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = KSCHED_KERNELET;
    ksim_config sc;
    ksim_config_default(&sc);
    sc.profile_whole = 1;
    tenv *t = tenv_new(&c, &sc);
    uint32_t ta = tenv_tenant(t, "a"), tb = tenv_tenant(t, "b");
    ksched_tenant_policy pol;
    ksched_tenant_policy_default(&pol);
    pol.slicing = 0;                       /* b's kernels run whole */
    g_assert_cmpint(ksched_tenant_set_policy(t->s, tb, &pol, NULL), ==, 0);
    const char *names[2] = {"comp", "mem"};
    uint32_t fa, fb;
    tenv_functions(t, ta, names + 1, 1, 1, &fa);
    tenv_functions(t, tb, names, 1, 1, &fb);
    enum { N = 3 };
    launched lb[N], la[N];
    memset(lb, 0, sizeof(lb));
    memset(la, 0, sizeof(la));
    for (int i = 0; i < N; i++) {
        ksched_op op = launch_op(fb, 500 + 10 * (unsigned)i, 2, 128);
        lb[i].blocks = (500 + 10 * (uint64_t)i) * 2;
        lb[i].op = tenv_submit(t, tb, 0, &op, rec_done, &lb[i].r);
    }
    tenv_run(t);
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.profiles, ==, 1);
    g_assert_cmpuint(st.slices, ==, N - 1);     /* the first launch ran as the profile */
    ksim_stats ss;
    ksim_get_stats(t->sim, &ss);
    g_assert_cmpuint(ss.launches, ==, N - 1);
    for (int i = 0; i < N; i++) {
        g_assert_cmpint(lb[i].r.r.status, ==, 0);
        assert_blocks_once(t, lb[i].op, lb[i].blocks);
    }
    g_assert_cmpuint(lb[0].r.r.end_ns, >=, lb[0].r.r.start_ns);
    g_assert_cmpuint(lb[0].r.r.start_ns, >=, lb[0].r.r.submit_ns);
    /* a kernel without a sliced variant: the same */
    const char *mid = "mid";
    uint32_t fw;
    tenv_functions(t, ta, &mid, 1, 0, &fw);
    launched lw[2];
    memset(lw, 0, sizeof(lw));
    for (int i = 0; i < 2; i++) {
        ksched_op op = launch_op(fw, 700, 1, 64);
        lw[i].blocks = 700;
        lw[i].op = tenv_submit(t, ta, 0, &op, rec_done, &lw[i].r);
    }
    tenv_run(t);
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.profiles, ==, 2);
    g_assert_cmpuint(st.slices, ==, N - 1 + 1);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(lw[i].r.r.status, ==, 0);
        assert_blocks_once(t, lw[i].op, lw[i].blocks);
    }
    /* a sliced kernel's profile runs no block (profile_blocks is 0): all of it sliced */
    for (int i = 0; i < N; i++) {
        ksched_op op = launch_op(fa, 3000, 1, 256);
        la[i].blocks = 3000;
        la[i].op = tenv_submit(t, ta, 0, &op, rec_done, &la[i].r);
    }
    tenv_run(t);
    for (int i = 0; i < N; i++) {
        g_assert_cmpint(la[i].r.r.status, ==, 0);
        assert_blocks_once(t, la[i].op, la[i].blocks);
    }
    ksched_get_stats(t->s, &st);
    g_assert_cmpuint(st.profiles, ==, 3);
    g_assert_cmpuint(st.kernels_completed, ==, 2 * N + 2);
    tenv_free(t);
}

/* ---- pruning and widening ---- */

/* Kernels whose PUR and MUR come from the profile the sim reports. */
static void add_kernel(tenv *t, const char *name, double pur, double mur, double rm)
{
    kbackend_profile p = test_profile(rm, 500, pur, mur);
    g_assert_cmpint(ksim_add_kernel(t->sim, name, &p, NULL), ==, 0);
}

/* The widenings the rule needs: halve both thresholds until some pair differs by at least
 * alpha_p in PUR and alpha_m in MUR (after 8 halvings nothing is pruned). */
static unsigned expected_widenings(const double *pur, const double *mur, unsigned n,
                                   double ap, double am)
{
    for (unsigned w = 0;; w++) {
        for (unsigned i = 0; i < n; i++)
            for (unsigned j = i + 1; j < n; j++)
                if (fabs(pur[i] - pur[j]) >= ap && fabs(mur[i] - mur[j]) >= am)
                    return w;
        ap = w + 1 >= 8 ? 0 : ap / 2;
        am = w + 1 >= 8 ? 0 : am / 2;
    }
}

static const ksched_trace *first_decision(const tracer *tr)
{
    for (guint i = 0; i < tr->ev->len; i++) {
        const ksched_trace *x = &g_array_index(tr->ev, ksched_trace, i);
        if (x->kind == KSCHED_TRACE_DECISION)
            return x;
    }
    return NULL;
}

static void run_pruning_case(const double *pur, const double *mur, unsigned n,
                             unsigned want_pruned, int all_pruned)
{
    tracer tr;
    tenv *t = traced_env(KSCHED_KERNELET, &tr, 1);
    const char *names[4] = {"k0", "k1", "k2", "k3"};
    for (unsigned i = 0; i < n; i++)
        add_kernel(t, names[i], pur[i], mur[i], 0.01 + 0.05 * i);
    uint32_t tn = tenv_tenant(t, "p"), fn[4];
    tenv_functions(t, tn, names, n, 1, fn);
    /* all are submitted before the driver runs: the first decision sees them all (the
     * sim's profiles arrive at the same instant) */
    for (unsigned i = 0; i < n; i++) {
        ksched_op op = launch_op(fn[i], 4000, 1, 256);
        tenv_submit(t, tn, tenv_stream(t, tn), &op, NULL, NULL);
    }
    tenv_run(t);
    const ksched_trace *d = first_decision(&tr);
    g_assert_nonnull(d);
    g_assert_cmpuint(d->pairs_considered, ==, n * (n - 1) / 2);
    unsigned widen = all_pruned ? expected_widenings(pur, mur, n, 0.4, 0.1) : 0;
    g_assert_cmpuint(d->widenings, ==, widen);
    if (!all_pruned)
        g_assert_cmpuint(d->pairs_pruned, ==, want_pruned);
    g_assert_cmpuint(d->op[1], !=, 0);          /* a pair was chosen all the same */
    ksched_stats st;
    ksched_get_stats(t->s, &st);
    if (all_pruned)
        g_assert_cmpuint(st.widenings, >, 0);
    g_array_free(tr.ev, TRUE);
    tenv_free(t);
}

static void test_pruning(void)
{
    /* PUR and MUR far apart for k0-k1 only: the other two pairs are pruned */
    const double pur[3] = {0.9, 0.1, 0.8}, mur[3] = {0.05, 0.6, 0.58};
    unsigned pruned = 0;
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            pruned += fabs(pur[i] - pur[j]) < 0.4 || fabs(mur[i] - mur[j]) < 0.1;
    g_assert_cmpuint(pruned, ==, 2);
    run_pruning_case(pur, mur, 3, pruned, 0);
}

static void test_widening(void)
{
    /* all alike: every pair pruned at 0.4 / 0.1, so the thresholds are relaxed */
    const double pur[4] = {0.50, 0.55, 0.62, 0.70}, mur[4] = {0.30, 0.33, 0.37, 0.42};
    run_pruning_case(pur, mur, 4, 0, 1);
}

/* ---- reaction to an arrival ---- */

typedef struct span {
    uint64_t start, end;
} span;

static void spans_of(const tracer *tr, uint64_t op, GArray *out)
{
    for (guint i = 0; i < tr->ev->len; i++) {
        const ksched_trace *x = &g_array_index(tr->ev, ksched_trace, i);
        if (x->kind == KSCHED_TRACE_SLICE_DONE && x->op[0] == op) {
            span s = {x->start_ns, x->end_ns};
            g_array_append_val(out, s);
        }
    }
}

static uint64_t overlap(GArray *a, GArray *b)
{
    uint64_t sum = 0;
    for (guint i = 0; i < a->len; i++)
        for (guint j = 0; j < b->len; j++) {
            span x = g_array_index(a, span, i), y = g_array_index(b, span, j);
            uint64_t lo = MAX(x.start, y.start), hi = MIN(x.end, y.end);
            sum += hi > lo ? hi - lo : 0;
        }
    return sum;
}

/* The paper's reaction to an arrival: a kernel running alone in minimum slices is paired
 * with one that comes (lone_slice_ns 0: a lone stream's long slices are tested below). */
static void test_reaction_to_arrival(void)
{
    tracer tr;
    ksched_config c;
    ksched_config_default(&c);
    c.lone_slice_ns = 0;
    tenv *t = traced_env_with(&c, &tr);
    uint32_t tn = tenv_tenant(t, "r"), fn[2];
    const char *names[2] = {"comp", "mem"};
    tenv_functions(t, tn, names, 2, 1, fn);
    rec a = {0}, b = {0};
    ksched_op big = launch_op(fn[0], 60 * 8 * 132, 1, 256);
    uint64_t op_a = tenv_submit(t, tn, 0, &big, rec_done, &a);
    g_assert_cmpint(ksched_run_until(t->s, 300000, NULL), ==, 0);   /* comp runs alone */
    g_assert_false(a.seen);
    uint64_t arrival = ksched_now(t->s);
    ksched_op small = launch_op(fn[1], 4 * 8 * 132, 1, 256);
    uint64_t op_b = tenv_submit(t, tn, tenv_stream(t, tn), &small, rec_done, &b);
    tenv_run(t);
    g_assert_true(a.seen && b.seen);
    /* a decision after the arrival paired the two */
    int paired = 0;
    for (guint i = 0; i < tr.ev->len; i++) {
        const ksched_trace *x = &g_array_index(tr.ev, ksched_trace, i);
        if (x->kind == KSCHED_TRACE_DECISION && x->now_ns >= arrival &&
            ((x->op[0] == op_a && x->op[1] == op_b) || (x->op[0] == op_b && x->op[1] == op_a)))
            paired = 1;
    }
    g_assert_true(paired);
    GArray *sa = g_array_new(FALSE, FALSE, sizeof(span)), *sb = g_array_new(FALSE, FALSE, sizeof(span));
    spans_of(&tr, op_a, sa);
    spans_of(&tr, op_b, sb);
    /* mem ran side by side with comp for most of its time, and finished first */
    uint64_t busy_b = 0;
    for (guint j = 0; j < sb->len; j++)
        busy_b += g_array_index(sb, span, j).end - g_array_index(sb, span, j).start;
    g_assert_cmpuint(overlap(sa, sb), >, busy_b / 2);
    g_assert_cmpuint(b.r.end_ns, <, a.r.end_ns);
    g_assert_cmpuint(b.r.start_ns, <, arrival + 50000);
    g_array_free(sa, TRUE);
    g_array_free(sb, TRUE);
    g_array_free(tr.ev, TRUE);
    tenv_free(t);
}

/* ---- determinism ---- */

static uint64_t run_hash(ksched_policy p, uint64_t seed)
{
    tracer tr;
    tenv *t = traced_env(p, &tr, seed);
    uint32_t tn = tenv_tenant(t, "d"), fn[3];
    const char *names[3] = {"comp", "mem", "mid"};
    tenv_functions(t, tn, names, 3, 1, fn);
    GRand *r = g_rand_new_with_seed(99);
    rec recs[40];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < 40; i++) {
        ksched_op op = launch_op(fn[i % 3], (unsigned)g_rand_int_range(r, 100, 5000), 1, 256);
        tenv_submit(t, tn, tenv_stream(t, tn), &op, rec_done, &recs[i]);
        g_assert_cmpint(ksched_run_until(t->s, ksched_now(t->s) +
                                         (uint64_t)g_rand_int_range(r, 0, 30000), NULL), ==, 0);
    }
    tenv_run(t);
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 40; i++)
        h = (h ^ recs[i].r.end_ns) * 1099511628211ull;
    for (guint i = 0; i < tr.ev->len; i++) {
        const ksched_trace *x = &g_array_index(tr.ev, ksched_trace, i);
        h = (h ^ (x->now_ns + x->first * 31 + x->count * 7 + x->blocks_per_sm[0])) *
            1099511628211ull;
    }
    g_rand_free(r);
    g_array_free(tr.ev, TRUE);
    tenv_free(t);
    return h;
}

/* A traced scheduler under c with two tenants: tn[0] "a" with the function comp (fn[0]),
 * tn[1] "b" with mem (fn[1]). */
static tenv *comp_and_mem(ksched_config *c, tracer *tr, uint32_t tn[2], uint32_t fn[2])
{
    tenv *t = traced_env_with(c, tr);
    const char *names[2] = {"comp", "mem"};
    for (int i = 0; i < 2; i++) {
        tn[i] = tenv_tenant(t, i ? "b" : "a");
        tenv_functions(t, tn[i], &names[i], 1, 1, &fn[i]);
    }
    return t;
}

/* Slices of one kernel of 40 waves of comp under lone_slice_ns, with another tenant's
 * kernel of mem: none (NOBODY), one that ran just before it (BEFORE) or one submitted
 * beside it (BESIDE); *paired: whether any decision paired the two. */
enum { NOBODY, BEFORE, BESIDE };

static unsigned lone_slices(uint64_t lone_slice_ns, int other, int *paired)
{
    tracer tr;
    ksched_config c;
    ksched_config_default(&c);
    c.lone_slice_ns = lone_slice_ns;
    uint32_t tn[2], fn[2];
    tenv *t = comp_and_mem(&c, &tr, tn, fn);
    uint32_t ta = tn[0], tb = tn[1], fa = fn[0], fb = fn[1];
    rec a = {0}, b = {0};
    ksched_op big = launch_op(fa, 40 * 8 * 132, 1, 256), mem_op = launch_op(fb, 40 * 8 * 132, 1, 256);
    uint64_t op_b = 0;
    if (other == BEFORE) {
        ksched_op small = launch_op(fb, 8 * 132, 1, 256);
        op_b = tenv_submit(t, tb, 0, &small, rec_done, &b);
        tenv_run(t);
    }
    uint64_t op_a = tenv_submit(t, ta, 0, &big, rec_done, &a);
    if (other == BESIDE)
        op_b = tenv_submit(t, tb, 0, &mem_op, rec_done, &b);
    tenv_run(t);
    g_assert_true(a.seen && a.r.status == 0 && (other == NOBODY || (b.seen && b.r.status == 0)));
    GArray *sa = g_array_new(FALSE, FALSE, sizeof(span));
    spans_of(&tr, op_a, sa);
    unsigned n = sa->len;
    *paired = 0;
    for (guint i = 0; other == BESIDE && i < tr.ev->len; i++) {
        const ksched_trace *x = &g_array_index(tr.ev, ksched_trace, i);
        *paired |= x->kind == KSCHED_TRACE_DECISION &&
                   ((x->op[0] == op_a && x->op[1] == op_b) || (x->op[0] == op_b && x->op[1] == op_a));
    }
    g_array_free(sa, TRUE);
    g_array_free(tr.ev, TRUE);
    tenv_free(t);
    return n;
}

/* A kernel on the only stream launching is not cut into the minimum slices a partner could
 * join: it runs whole when it is shorter than lone_slice_ns by the model, and in fewer,
 * longer slices than the minimum otherwise. Where another tenant launched lately, it is
 * sliced as the paper's policy does, and paired with a kernel submitted beside it. */
static void test_lone_stream(void)
{
    int paired;
    unsigned minimum = lone_slices(0, NOBODY, &paired);
    unsigned whole = lone_slices(1000000000ull, NOBODY, &paired);
    unsigned longer = lone_slices(100000, NOBODY, &paired);
    unsigned after = lone_slices(1000000000ull, BEFORE, &paired);
    g_test_message("slices: minimum %u, 100 us %u, 1 s %u; after another tenant's launch %u",
                   minimum, longer, whole, after);
    g_assert_cmpuint(minimum, >, 2);
    g_assert_cmpuint(whole, ==, 1);
    g_assert_cmpuint(longer, >, 1);
    g_assert_cmpuint(longer, <, minimum);
    g_assert_cmpuint(after, ==, minimum);
    g_assert_cmpuint(lone_slices(1000000000ull, BESIDE, &paired), >, 1);
    g_assert_true(paired);
}

/* The most launches of one tenant's `streams` streams (one small launch each, submitted
 * at once) that ran at the same time under policy p with base_lanes side by side (and
 * kernelet's pair_short_ns 1 s: none of them is long enough to pair, as in kerneletd). */
static unsigned most_at_once(ksched_policy p, unsigned base_lanes, unsigned streams)
{
    tracer tr;
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    c.base_lanes = base_lanes;
    c.pair_short_ns = 1000000000ull;
    uint32_t tn[2], fn[2];
    tenv *t = comp_and_mem(&c, &tr, tn, fn);
    rec r[16];
    uint64_t ops[16];
    memset(r, 0, sizeof r);
    g_assert_cmpuint(streams, <=, 16);
    ksched_op one_block = launch_op(fn[0], 1, 1, 256);
    for (unsigned i = 0; i < streams; i++)
        ops[i] = tenv_submit(t, tn[0], tenv_stream(t, tn[0]), &one_block, rec_done, &r[i]);
    tenv_run(t);
    GArray *sp = g_array_new(FALSE, FALSE, sizeof(span));
    for (unsigned i = 0; i < streams; i++) {
        g_assert_true(r[i].seen && r[i].r.status == 0);
        spans_of(&tr, ops[i], sp);
    }
    unsigned most = 0;
    for (guint i = 0; i < sp->len; i++) {     /* at each span's start, how many run */
        uint64_t at = g_array_index(sp, span, i).start;
        unsigned n = 0;
        for (guint j = 0; j < sp->len; j++)
            n += g_array_index(sp, span, j).start <= at && at < g_array_index(sp, span, j).end;
        most = MAX(most, n);
    }
    g_array_free(sp, TRUE);
    g_array_free(tr.ev, TRUE);
    tenv_free(t);
    return most;
}

/* base_lanes: a tenant's independent streams run that many kernels side by side (base,
 * and kernelet's whole kernels), as a GPU runs a program's streams; fifo runs one. With
 * the library's default of 2, one program's 32 streams ran 2 at a time on the H100. */
static void test_side_by_side(void)
{
    unsigned base2 = most_at_once(KSCHED_BASE, 2, 6), base6 = most_at_once(KSCHED_BASE, 6, 6);
    unsigned kernelet6 = most_at_once(KSCHED_KERNELET, 6, 6);
    unsigned fifo = most_at_once(KSCHED_FIFO, 6, 6);
    g_test_message("at once: base 2 lanes %u, 6 lanes %u; kernelet 6 lanes %u; fifo %u",
                   base2, base6, kernelet6, fifo);
    g_assert_cmpuint(base2, ==, 2);
    g_assert_cmpuint(base6, ==, 6);
    g_assert_cmpuint(kernelet6, ==, 6);
    g_assert_cmpuint(fifo, ==, 1);
}

/* Decisions that paired a kernel of tenant a with one of tenant b, each tenant queueing
 * `per_stream` launches of 10 waves (comp, mem) on its stream at once, under pair_short_ns. */
static unsigned pairs_of_short(uint64_t pair_short_ns, unsigned per_stream)
{
    tracer tr;
    ksched_config c;
    ksched_config_default(&c);
    c.pair_short_ns = pair_short_ns;
    uint32_t tn[2], fn[2];
    tenv *t = comp_and_mem(&c, &tr, tn, fn);
    uint32_t ta = tn[0], tb = tn[1], fa = fn[0], fb = fn[1];
    rec r[16];
    memset(r, 0, sizeof r);
    ksched_op ka = launch_op(fa, 10 * 8 * 132, 1, 256), kb = launch_op(fb, 10 * 8 * 132, 1, 256);
    for (unsigned i = 0; i < per_stream; i++) {
        tenv_submit(t, ta, 0, &ka, rec_done, &r[2 * i]);
        tenv_submit(t, tb, 0, &kb, rec_done, &r[2 * i + 1]);
    }
    tenv_run(t);
    for (unsigned i = 0; i < 2 * per_stream; i++)
        g_assert_true(r[i].seen && r[i].r.status == 0);
    unsigned pairs = 0;
    for (guint i = 0; i < tr.ev->len; i++) {
        const ksched_trace *x = &g_array_index(tr.ev, ksched_trace, i);
        pairs += x->kind == KSCHED_TRACE_DECISION && x->op[0] && x->op[1];
    }
    g_array_free(tr.ev, TRUE);
    tenv_free(t);
    return pairs;
}

/* pair_short_ns: kernels shorter than it by the model pair only while more launches wait
 * behind them on their streams; one launch each (programs that wait for each) runs whole,
 * side by side. With 0 (the paper's policy) the same kernels pair either way. */
static void test_pair_short(void)
{
    unsigned paper_one = pairs_of_short(0, 1), paper_queued = pairs_of_short(0, 4);
    unsigned short_one = pairs_of_short(1000000000ull, 1);
    unsigned short_queued = pairs_of_short(1000000000ull, 4);
    g_test_message("pair decisions: paper %u (one launch each), %u (four); short rule %u, %u",
                   paper_one, paper_queued, short_one, short_queued);
    g_assert_cmpuint(paper_one, >, 0);
    g_assert_cmpuint(paper_queued, >, 0);
    g_assert_cmpuint(short_one, ==, 0);
    g_assert_cmpuint(short_queued, >, 0);
}

static void test_determinism(void)
{
    for (int p = 0; p < (int)ksched_policy_count(); p++)
        g_assert_cmpuint(run_hash((ksched_policy)p, 5), ==, run_hash((ksched_policy)p, 5));
    /* mc's choices follow its seed */
    g_assert_cmpuint(run_hash(KSCHED_MC, 5), !=, run_hash(KSCHED_MC, 6));
}

/* The harness's arrivals: a seed fixes them; another seed gives others with the same
 * counts; the mean gap of each kernel's arrivals is near 1 / lambda. */
static void test_arrivals(void)
{
    const bench_workload *all = &bench_workloads()[3];
    bench_arrival *a, *b, *c;
    size_t na, nb, nc;
    const double lambda = 1e-5;     /* one arrival per 100 us per kernel */
    g_assert_cmpint(bench_arrivals(all, 500, lambda, 1, &a, &na), ==, 0);
    g_assert_cmpint(bench_arrivals(all, 500, lambda, 1, &b, &nb), ==, 0);
    g_assert_cmpint(bench_arrivals(all, 500, lambda, 2, &c, &nc), ==, 0);
    g_assert_cmpuint(na, ==, 8 * 500);
    g_assert_cmpuint(nb, ==, na);
    g_assert_cmpuint(nc, ==, na);
    size_t differ = 0;
    for (size_t i = 0; i < na; i++) {
        g_assert_cmpuint(a[i].t_ns, ==, b[i].t_ns);
        g_assert_cmpuint(a[i].kernel, ==, b[i].kernel);
        differ += a[i].t_ns != c[i].t_ns;
    }
    g_assert_cmpuint(differ, >, na / 2);
    unsigned count[BENCH_KERNELS] = {0};
    uint64_t last[BENCH_KERNELS] = {0};
    for (size_t i = 0; i < na; i++) {
        if (i)
            g_assert_cmpuint(a[i].t_ns, >=, a[i - 1].t_ns);
        count[a[i].kernel]++;
        last[a[i].kernel] = a[i].t_ns;
    }
    for (unsigned k = 0; k < BENCH_KERNELS; k++) {
        g_assert_cmpuint(count[k], ==, 500);
        double mean_gap = (double)last[k] / 500;    /* 500 exponential gaps */
        g_assert_cmpfloat(fabs(mean_gap * lambda - 1), <, 0.15);
    }
    free(a);
    free(b);
    free(c);
}

/* ---- kernelet against base ---- */

/* N instances each of comp and mem, all there at once. Base runs them whole (each fills
 * the GPU, so at best a little faster than one after the other); kernelet pairs them at the
 * balanced ratio until one kind runs out, then runs the rest alone. Both estimated here
 * from the model. */
static double run_pair_workload_on(const ksched_config *c, const ksim_config *sc,
                                   const char *const names[2], unsigned n, unsigned gc,
                                   unsigned gm, ksched_stats *st)
{
    tenv *t = tenv_new(c, sc);
    uint32_t tn = tenv_tenant(t, "w"), fn[2];
    tenv_functions(t, tn, names, 2, 1, fn);
    for (unsigned i = 0; i < n; i++) {
        ksched_op c = launch_op(fn[0], gc, 1, 256), m = launch_op(fn[1], gm, 1, 256);
        tenv_submit(t, tn, tenv_stream(t, tn), &c, NULL, NULL);
        tenv_submit(t, tn, tenv_stream(t, tn), &m, NULL, NULL);
    }
    tenv_run(t);
    double end = (double)ksched_now(t->s);
    if (st)
        ksched_get_stats(t->s, st);
    tenv_free(t);
    return end;
}

static double run_pair_workload_of(const ksched_config *c, const char *const names[2],
                                   unsigned n, unsigned gc, unsigned gm, ksched_stats *st)
{
    return run_pair_workload_on(c, NULL, names, n, gc, gm, st);
}

static double run_pair_workload(ksched_policy p, unsigned n, unsigned gc, unsigned gm)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    static const char *const names[2] = {"comp", "mem"};
    return run_pair_workload_of(&c, names, n, gc, gm, NULL);
}

static void test_kernelet_beats_base_model(void)
{
    const unsigned n = 10, gc = 4 * 8 * 132, gm = 20 * 132;
    kmodel_ctx *m;
    ksim_config sc;
    ksim_config_default(&sc);
    g_assert_cmpint(kmodel_ctx_new(&m, &sc.gpu, &sc.model, NULL, 0), ==, 0);
    kmodel_kernel kc = {.warps_per_block = 8, .regs_per_thread = 32, .rm = 0.002,
                        .insts_per_warp = 3000};
    kmodel_kernel km = {.warps_per_block = 8, .regs_per_thread = 32, .rm = 0.2,
                        .insts_per_warp = 300};
    kmodel_pair_result pr;
    g_assert_cmpint(kmodel_balanced(m, &kc, &km, &pr), ==, 0);
    /* blocks per ns: 132 SMs * IPC / instructions per block * 1.98 cycles per ns */
    double rc = 132 * pr.ipc[0] / 24000 * 1.98, rm = 132 * pr.ipc[1] / 2400 * 1.98;
    double ac = 132 * pr.single_ipc[0] / 24000 * 1.98, am = 132 * pr.single_ipc[1] / 2400 * 1.98;
    double wc = (double)n * gc, wm = (double)n * gm;
    double t_base = wc / ac + wm / am;
    double t1 = fmin(wc / rc, wm / rm);
    double t_pred = t1 + (wc / rc < wm / rm ? (wm - rm * t1) / am : (wc - rc * t1) / ac);
    kmodel_ctx_free(m);
    g_assert_cmpfloat(t_pred, <, 0.85 * t_base);    /* the model expects a clear gain */

    double base = run_pair_workload(KSCHED_BASE, n, gc, gm);
    double kern = run_pair_workload(KSCHED_KERNELET, n, gc, gm);
    g_test_message("base %.0f ns (model %.0f), kernelet %.0f ns (model %.0f)", base, t_base,
                   kern, t_pred);
    /* base: at most the serial time (consolidation overlaps a kernel's tail with the next) */
    g_assert_cmpfloat(base, <, 1.01 * t_base);
    g_assert_cmpfloat(fabs(kern - t_pred) / t_pred, <, 0.08);
    g_assert_cmpfloat(kern, <, 0.95 * base);
}

/* comp + mem on a GPU that launches a pair's slices one wave at a time (as the cuda
 * backend does), each launch costing gap_ns: policy p's makespan and stats. */
static double run_wave_launched(ksched_policy p, uint64_t gap_ns, ksched_stats *st)
{
    static const char *const names[2] = {"comp", "mem"};
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    ksim_config sc;
    ksim_config_default(&sc);
    sc.wave_launches = 1;
    sc.stream_gap_ns = gap_ns;
    return run_pair_workload_on(&c, &sc, names, 10, 4 * 8 * 132, 20 * 132, st);
}

/* The cost of a pair's launches decides whether it pairs: with launches of 3 us (the
 * H100's) beside waves of tens of us the pair still gains and runs; with launches of 200 us
 * every pair loses to running the kernels in turn (the sim charges each wave's launch),
 * so kernelet pairs nothing and keeps base's time. Judged by the paper's CP alone it
 * would pair both. */
static void test_launch_cost_decides_pairing(void)
{
    ksched_stats cheap, dear;
    double base_cheap = run_wave_launched(KSCHED_BASE, 3000, NULL);
    double kern_cheap = run_wave_launched(KSCHED_KERNELET, 3000, &cheap);
    double base_dear = run_wave_launched(KSCHED_BASE, 200000, NULL);
    double kern_dear = run_wave_launched(KSCHED_KERNELET, 200000, &dear);
    g_test_message("launches of 3 us: base %.3f ms, kernelet %.3f ms (%llu pairs); of 200 us: "
                   "base %.3f ms, kernelet %.3f ms (%llu pairs)", base_cheap / 1e6,
                   kern_cheap / 1e6, (unsigned long long)cheap.coschedules, base_dear / 1e6,
                   kern_dear / 1e6, (unsigned long long)dear.coschedules);
    g_assert_cmpuint(cheap.coschedules, >, 0);
    g_assert_cmpfloat(kern_cheap, <, 0.95 * base_cheap);
    g_assert_cmpuint(dear.coschedules, ==, 0);
    g_assert_cmpfloat(kern_dear, <, 1.02 * base_dear);
}

/* The paper's MIX on the H100 profiles through the harness: kernelet beats base; base is
 * close to the serial sum of the kernels' times alone (estimated here). */
static void test_kernelet_beats_base_mix(void)
{
    ksched_profile_cache *pc;
    g_assert_cmpint(ksched_profile_cache_new(&pc, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_load_file(pc, DATA_DIR "/h100-bench.profiles", NULL), ==, 0);
    bench_options o = {.backend = "sim", .instances = 100, .seed = 3, .load = 2.0,
                       .gpu = "H100", .a0 = 0.92, .alpha_p = 0.4, .alpha_m = 0.1,
                       .depth = 2, .launch_latency_ns = 5000, .stream_gap_ns = 1000};
    char msg[256];
    double alone[BENCH_KERNELS];
    g_assert_cmpint(bench_alone_times(&o, pc, alone, msg, sizeof(msg)), ==, 0);
    const bench_workload *mix = &bench_workloads()[2];
    g_assert_cmpstr(mix->name, ==, "MIX");
    double serial = 0;
    for (unsigned k = 0; k < mix->n; k++)
        serial += o.instances * alone[mix->kernel[k]];
    bench_arrival *arr;
    size_t n;
    g_assert_cmpint(bench_arrivals(mix, o.instances, o.load / (serial / o.instances), o.seed,
                                   &arr, &n), ==, 0);
    bench_result rb, rk;
    g_assert_cmpint(bench_run(&o, pc, mix, KSCHED_BASE, 1, arr, n, alone, NULL, 0, &rb, msg,
                              sizeof(msg)), ==, 0);
    g_assert_cmpint(bench_run(&o, pc, mix, KSCHED_KERNELET, 1, arr, n, alone, NULL, 0, &rk, msg,
                              sizeof(msg)), ==, 0);
    g_assert_cmpuint(rb.failed + rb.block_errors + rk.failed + rk.block_errors, ==, 0);
    g_test_message("MIX: serial %.3f ms, base %.3f ms, kernelet %.3f ms", serial / 1e6,
                   rb.total_ns / 1e6, rk.total_ns / 1e6);
    g_assert_cmpfloat(fabs((double)rb.total_ns - serial) / serial, <, 0.05);
    g_assert_cmpfloat((double)rk.total_ns, <, 0.98 * (double)rb.total_ns);
    bench_result_free(&rb);
    bench_result_free(&rk);
    free(arr);
    ksched_profile_cache_free(pc);
}

/* ---- tuning pair plans on their real work (pair_tune) ---- */

static double run_tuned(int tune, const char *const names[2], unsigned n, ksched_stats *st)
{
    ksched_config c;
    ksched_config_default(&c);
    c.pair_tune = tune;
    return run_pair_workload_of(&c, names, n, 4 * 8 * 132, 20 * 132, st);
}

/* A pair that gains (comp + mem): tuning tries every candidate, keeps one, and what it
 * keeps is no worse than the model's plan by more than the time spent trying the others,
 * and still beats base clearly (a tuning that measured wrongly would keep "not paired" or a
 * poor plan here). */
static void test_tune_keeps_a_gaining_plan(void)
{
    static const char *const names[2] = {"comp", "mem"};
    ksched_stats st;
    double base = run_pair_workload(KSCHED_BASE, 200, 4 * 8 * 132, 20 * 132);
    double model = run_tuned(0, names, 200, NULL);
    double tuned = run_tuned(1, names, 200, &st);
    g_test_message("base %.2f ms, kernelet %.2f ms, tuned %.2f ms; %llu tuned, %llu not gaining",
                   base / 1e6, model / 1e6, tuned / 1e6, (unsigned long long)st.pairs_tuned,
                   (unsigned long long)st.pairs_not_gaining);
    g_assert_cmpuint(st.pairs_tuned, ==, 1);
    g_assert_cmpuint(st.pairs_not_gaining, ==, 0);
    g_assert_cmpfloat(tuned, <, 0.95 * base);
    g_assert_cmpfloat(tuned, <, 1.03 * model);
}

/* comp and its twin, both compute-bound in truth, while the scheduler is told the twin is
 * memory-bound (a profile that lies, or a GPU that differs from the model): the model
 * expects a large gain from pairing them, the GPU gives none. */
static double run_misjudged_pair_on(ksched_policy p, int tune, unsigned n,
                                    uint64_t launch_latency_ns, ksched_stats *st)
{
    kbackend_profile comp = test_profile(0.002, 3000, 0.85, 0.05);
    kbackend_profile lie = test_profile(0.2, 300, 0.05, 0.7);
    tenv *t = g_new0(tenv, 1);
    ksched_profile_cache *pc;
    ksched_err e = {0};
    ksim_config sc;
    ksim_config_default(&sc);
    if (launch_latency_ns)
        sc.launch_latency_ns = launch_latency_ns;
    g_assert_cmpint(ksim_new(&t->sim, &sc, &e), ==, 0);
    ksim_backend(t->sim, &t->be);
    g_assert_cmpint(ksim_add_kernel(t->sim, "comp", &comp, NULL), ==, 0);
    g_assert_cmpint(ksim_add_kernel(t->sim, "twin", &comp, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_cache_new(&pc, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_cache_put(pc, 0, "comp", &comp, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_cache_put(pc, 0, "twin", &lie, NULL), ==, 0);
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    c.pair_tune = tune;
    g_assert_cmpint(ksched_new(&t->s, &t->be, &c, pc, &e), ==, 0);
    ksched_profile_cache_free(pc);
    uint32_t tn = tenv_tenant(t, "w"), fn[2];
    static const char *const names[2] = {"comp", "twin"};
    tenv_functions(t, tn, names, 2, 1, fn);
    for (unsigned i = 0; i < n; i++) {
        ksched_op a = launch_op(fn[0], 4 * 8 * 132, 1, 256), b = launch_op(fn[1], 4 * 8 * 132, 1, 256);
        tenv_submit(t, tn, tenv_stream(t, tn), &a, NULL, NULL);
        tenv_submit(t, tn, tenv_stream(t, tn), &b, NULL, NULL);
    }
    tenv_run(t);
    double end = (double)ksched_now(t->s);
    ksched_get_stats(t->s, st);
    tenv_free(t);
    return end;
}

static double run_misjudged_pair(ksched_policy p, int tune, unsigned n, ksched_stats *st)
{
    return run_misjudged_pair_on(p, tune, n, 0, st);
}

/* The misjudged pair where every launch costs 200 us (slices are expensive): the model's
 * plan loses clearly to running the two kernels whole, and tuning stops at the second plan
 * it tries (not pairing, then the configured plan) and runs them whole from then on. */
static void test_tune_stops_a_losing_pair(void)
{
    ksched_stats sb, sm, st;
    double base = run_misjudged_pair_on(KSCHED_BASE, 0, 200, 200000, &sb);
    double model = run_misjudged_pair_on(KSCHED_KERNELET, 0, 200, 200000, &sm);
    double tuned = run_misjudged_pair_on(KSCHED_KERNELET, 1, 200, 200000, &st);
    g_test_message("base %.2f ms, kernelet %.2f ms (%llu pairs), tuned %.2f ms (%llu pairs, "
                   "%llu tuned, %llu not gaining)", base / 1e6, model / 1e6,
                   (unsigned long long)sm.coschedules, tuned / 1e6,
                   (unsigned long long)st.coschedules, (unsigned long long)st.pairs_tuned,
                   (unsigned long long)st.pairs_not_gaining);
    g_assert_cmpfloat(model, >, 1.05 * base);          /* pairing loses here */
    g_assert_cmpuint(st.pairs_tuned, ==, 1);
    g_assert_cmpuint(st.pairs_not_gaining, ==, 1);
    g_assert_cmpfloat(tuned, <, model);
    /* stopping after two plans keeps it close to base (trying all six: 45.5 against 39) */
    g_assert_cmpfloat(tuned, <, 1.05 * base);
}

/* The misjudged pair: the model pairs it all along for a gain that is not there (on the
 * sim pairing two compute-bound kernels costs little, so it does not lose much either);
 * tuning measures every candidate, keeps one, and the result is no worse than base. */
static void test_tune_misjudged_pair(void)
{
    ksched_stats sb, sm, st;
    double base = run_misjudged_pair(KSCHED_BASE, 0, 400, &sb);
    double model = run_misjudged_pair(KSCHED_KERNELET, 0, 400, &sm);
    double tuned = run_misjudged_pair(KSCHED_KERNELET, 1, 400, &st);
    g_test_message("base %.2f ms, kernelet %.2f ms (%llu pairs), tuned %.2f ms (%llu pairs, "
                   "%llu not gaining)", base / 1e6, model / 1e6,
                   (unsigned long long)sm.coschedules, tuned / 1e6,
                   (unsigned long long)st.coschedules, (unsigned long long)st.pairs_not_gaining);
    g_assert_cmpuint(sm.coschedules, >, 100);     /* the model believes the lie */
    g_assert_cmpuint(st.pairs_tuned, ==, 1);
    g_assert_cmpfloat(tuned, <, 1.02 * base);
}

/* ---- the policy table ---- */

/* The paper's five keep their constants; every row is found by its name, any case. */
static void test_table_names(void)
{
    const char *paper[] = {"fifo", "base", "kernelet", "opt", "mc"};
    const ksched_policy ids[] = {KSCHED_FIFO, KSCHED_BASE, KSCHED_KERNELET, KSCHED_OPT,
                                 KSCHED_MC};
    g_assert_cmpuint(ksched_policy_count(), >=, 5);
    g_assert_cmpuint(ksched_policy_count(), <=, KSCHED_POLICY_MAX);
    for (unsigned i = 0; i < 5; i++)
        g_assert_cmpstr(ksched_policy_name(ids[i]), ==, paper[i]);
    for (unsigned p = 0; p < ksched_policy_count(); p++) {
        char upper[32];
        g_strlcpy(upper, ksched_policy_name((ksched_policy)p), sizeof(upper));
        for (char *c = upper; *c; c++)
            *c = g_ascii_toupper(*c);
        ksched_policy got;
        g_assert_cmpint(ksched_policy_parse(upper, &got), ==, 0);
        g_assert_cmpint(got, ==, p);
    }
    ksched_policy got;
    g_assert_cmpint(ksched_policy_parse("lottery", &got), ==, KSCHED_EINVAL);
    g_assert_null(ksched_policy_name((ksched_policy)ksched_policy_count()));
    char list[256], small[12];
    g_assert_true(g_str_has_prefix(ksched_policy_list(list, sizeof(list), ","),
                                   "fifo,base,kernelet,opt,mc"));
    g_assert_cmpstr(ksched_policy_list(small, sizeof(small), ", "), ==, "fifo, base");
}

/* A policy that measures pairs (opt) is refused, at creation and on a switch, by a backend
 * without the trial op; the others are not. */
static void test_table_needs_trial(void)
{
    tenv *t = tenv_policy(KSCHED_KERNELET);
    kbackend_ops no_trial = *t->be.ops;
    no_trial.trial = NULL;
    kbackend be = {.ops = &no_trial, .state = t->be.state};
    ksched_config c;
    ksched_config_default(&c);
    c.policy = KSCHED_OPT;
    ksched *s = NULL;
    ksched_err e;
    g_assert_cmpint(ksched_new(&s, &be, &c, NULL, &e), ==, KSCHED_EUNSUPPORTED);
    g_assert_cmpstr(e.msg, ==, "policy opt needs the backend's trial op");
    c.policy = KSCHED_MC;
    g_assert_cmpint(ksched_new(&s, &be, &c, NULL, &e), ==, 0);
    g_assert_cmpint(ksched_set_policy(s, KSCHED_OPT, &e), ==, KSCHED_EUNSUPPORTED);
    g_assert_cmpint(ksched_get_policy(s), ==, KSCHED_MC);
    g_assert_cmpint(ksched_set_policy(s, KSCHED_FIFO, &e), ==, 0);
    ksched_free(s);
    tenv_free(t);
}

/* A fixed split (ksched_config.pair_split) replaces the model's: the compute-bound kernel
 * gets the first number of blocks per SM, the other the second; a split the SM cannot
 * hold, or half of one, is refused. */
static void test_pair_split(void)
{
    tracer tr;
    ksched_config c;
    ksched_config_default(&c);
    c.policy = KSCHED_KERNELET;
    c.pair_split[0] = 2;
    c.pair_split[1] = 5;
    tenv *t = traced_env_with(&c, &tr);
    uint32_t tn = tenv_tenant(t, "s"), fn[2];
    const char *names[2] = {"comp", "mem"};
    tenv_functions(t, tn, names, 2, 1, fn);
    rec a = {0}, b = {0};
    ksched_op x = launch_op(fn[0], 20 * 8 * 132, 1, 256), y = launch_op(fn[1], 20 * 8 * 132, 1, 256);
    uint64_t op_comp = tenv_submit(t, tn, 0, &x, rec_done, &a);
    uint64_t op_mem = tenv_submit(t, tn, tenv_stream(t, tn), &y, rec_done, &b);
    tenv_run(t);
    g_assert_true(a.seen && b.seen);
    int pairs = 0;
    for (guint i = 0; i < tr.ev->len; i++) {
        const ksched_trace *e = &g_array_index(tr.ev, ksched_trace, i);
        if (e->kind != KSCHED_TRACE_DECISION || !e->op[1])
            continue;
        int comp_first = e->op[0] == op_comp;
        g_assert_true(comp_first ? e->op[1] == op_mem : e->op[0] == op_mem);
        g_assert_cmpuint(e->blocks_per_sm[!comp_first], ==, 2);
        g_assert_cmpuint(e->blocks_per_sm[comp_first], ==, 5);
        pairs++;
    }
    g_assert_cmpint(pairs, >, 0);
    tenv_free(t);
    g_array_free(tr.ev, TRUE);
    ksched_config bad;
    ksched_config_default(&bad);
    bad.pair_split[1] = 4;
    ksim *sim;
    kbackend be;
    ksched *s;
    ksched_err e = {0};
    g_assert_cmpint(ksim_new(&sim, NULL, &e), ==, 0);
    ksim_backend(sim, &be);
    g_assert_cmpint(ksched_new(&s, &be, &bad, NULL, &e), ==, KSCHED_EINVAL);
    g_assert_nonnull(strstr(e.msg, "pair_split"));
    ksim_free(sim);
}

/* Runs comp and mem (20 full waves each) in two streams of one tenant, fixed split 4:4,
 * pair_waves as given, pipeline depth 1; reports the largest paired slice, the number of
 * paired slices that were not exactly one wave at the split, and the most slices one
 * lane had queued at once. */
typedef struct {
    uint64_t largest;
    unsigned off_wave, max_queued, paired;
} pair_shape;

static pair_shape run_split_pair(unsigned pair_waves)
{
    tracer tr;
    ksched_config c;
    ksched_config_default(&c);
    c.pair_split[0] = c.pair_split[1] = 4;
    c.pair_waves = pair_waves;
    c.pipeline_depth = 1;
    tenv *t = traced_env_with(&c, &tr);
    uint32_t tn = tenv_tenant(t, "w"), fn[2];
    const char *names[2] = {"comp", "mem"};
    tenv_functions(t, tn, names, 2, 1, fn);
    rec a = {0}, b = {0};
    ksched_op x = launch_op(fn[0], 20 * 8 * 132, 1, 256), y = launch_op(fn[1], 20 * 8 * 132, 1, 256);
    tenv_submit(t, tn, 0, &x, rec_done, &a);
    tenv_submit(t, tn, tenv_stream(t, tn), &y, rec_done, &b);
    tenv_run(t);
    g_assert_true(a.seen && b.seen);
    g_assert_cmpint(a.r.status, ==, 0);
    g_assert_cmpint(b.r.status, ==, 0);
    pair_shape r = {0};
    unsigned queued[8] = {0};
    for (guint i = 0; i < tr.ev->len; i++) {
        const ksched_trace *e = &g_array_index(tr.ev, ksched_trace, i);
        if (e->lane >= 8 || (e->kind != KSCHED_TRACE_SLICE && e->kind != KSCHED_TRACE_SLICE_DONE))
            continue;
        if (e->kind == KSCHED_TRACE_SLICE_DONE) {
            queued[e->lane]--;
            continue;
        }
        if (++queued[e->lane] > r.max_queued)
            r.max_queued = queued[e->lane];
        if (e->blocks_per_sm[0] != 4)
            continue;           /* not part of the pair */
        r.paired++;
        r.largest = e->count > r.largest ? e->count : r.largest;
        r.off_wave += e->count != 4 * 132;
    }
    tenv_free(t);
    g_array_free(tr.ev, TRUE);
    return r;
}

/* pair_waves = 1: every slice of the pair is one wave at its split (the last of a kernel
 * may be shorter) and the lanes queue more than the pipeline depth, so that the GPU is not
 * left waiting for the host between short slices; 0: the paper's longer slices. */
static void test_pair_waves(void)
{
    pair_shape one = run_split_pair(1), paper = run_split_pair(0);
    g_test_message("pair_waves 1: %u slices, largest %llu, %u off, queued %u; 0: largest %llu, "
                   "queued %u", one.paired, (unsigned long long)one.largest, one.off_wave,
                   one.max_queued, (unsigned long long)paper.largest, paper.max_queued);
    g_assert_cmpuint(one.paired, >, 10);
    g_assert_cmpuint(one.largest, ==, 4 * 132);
    g_assert_cmpuint(one.off_wave, <=, 2);
    g_assert_cmpuint(one.max_queued, >, 1);
    g_assert_cmpuint(paper.largest, >, 4 * 132);
    g_assert_cmpuint(paper.max_queued, ==, 1);
}

/* ---- the kernelet policy picks the best of several candidate pairs ---- */

/* Four kernels, two compute-bound and two memory-bound: four pairs survive pruning (the
 * two of one kind are pruned), and the model's CP differs between them. */
static const char *const choice_names[4] = {"comp", "mem", "comp_b", "mem_b"};

static tenv *choice_env(tracer *tr)
{
    ksched_config c;
    ksched_config_default(&c);
    tenv *t = traced_env_with(&c, tr);
    kbackend_profile comp_b = test_profile(0.02, 1200, 0.65, 0.2);
    kbackend_profile mem_b = test_profile(0.1, 400, 0.2, 0.45);
    g_assert_cmpint(ksim_add_kernel(t->sim, "comp_b", &comp_b, NULL), ==, 0);
    g_assert_cmpint(ksim_add_kernel(t->sim, "mem_b", &mem_b, NULL), ==, 0);
    return t;
}

/* Submits the kernels of mask (bit i: choice_names[i]) at once, each in its own stream, and
 * returns the first pair decision: the CP, the pair as a bit mask, the pairs considered
 * and pruned. */
typedef struct {
    double cp;
    unsigned pair, considered, pruned;
} first_pair;

static first_pair first_pair_of(unsigned mask)
{
    tracer tr;
    tenv *t = choice_env(&tr);
    uint32_t tn = tenv_tenant(t, "w"), fn[4];
    tenv_functions(t, tn, choice_names, 4, 1, fn);
    uint64_t op[4] = {0};
    for (unsigned i = 0; i < 4; i++)
        if (mask & (1u << i)) {
            ksched_op l = launch_op(fn[i], 30 * 8 * 132, 1, 256);
            op[i] = tenv_submit(t, tn, tenv_stream(t, tn), &l, NULL, NULL);
        }
    tenv_run(t);
    first_pair r = {0};
    for (guint e = 0; e < tr.ev->len && !r.pair; e++) {
        const ksched_trace *d = &g_array_index(tr.ev, ksched_trace, e);
        if (d->kind != KSCHED_TRACE_DECISION || !d->op[1])
            continue;
        for (unsigned i = 0; i < 4; i++)
            if (op[i] && (d->op[0] == op[i] || d->op[1] == op[i]))
                r.pair |= 1u << i;
        r = (first_pair){d->cp, r.pair, d->pairs_considered, d->pairs_pruned};
    }
    tenv_free(t);
    g_array_free(tr.ev, TRUE);
    return r;
}

/* The CP of every unpruned pair alone (each the only candidate), then all four kernels at
 * once: the policy must take the pair of highest CP. A policy that takes any other
 * candidate (the lowest, the first, the oldest) fails. */
static void test_kernelet_picks_best_pair(void)
{
    static const unsigned pairs[4] = {0x3, 0x9, 0x6, 0xc};  /* comp+mem, comp+mem_b, ... */
    double cp[4];
    unsigned best = 0;
    for (unsigned i = 0; i < 4; i++) {
        first_pair alone = first_pair_of(pairs[i]);
        g_assert_cmpuint(alone.pair, ==, pairs[i]);     /* it pairs at all */
        cp[i] = alone.cp;
        g_test_message("pair %#x alone: CP %.3f", pairs[i], cp[i]);
        if (cp[i] > cp[best])
            best = i;
    }
    for (unsigned i = 0; i < 4; i++)    /* a clear best: the test can tell a wrong pick */
        if (i != best)
            g_assert_cmpfloat(cp[best] - cp[i], >, 0.01);
    first_pair all = first_pair_of(0xf);
    g_test_message("all four: pair %#x, CP %.3f, %u considered, %u pruned", all.pair, all.cp,
                   all.considered, all.pruned);
    g_assert_cmpuint(all.considered, ==, 6);
    g_assert_cmpuint(all.considered - all.pruned, >=, 3);
    g_assert_cmpuint(all.pair, ==, pairs[best]);
    g_assert_cmpfloat(fabs(all.cp - cp[best]), <, 1e-9);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (int p = 0; p < (int)ksched_policy_count(); p++) {
        char path[64];
        snprintf(path, sizeof(path), "/policies/blocks-once/%s",
                 ksched_policy_name((ksched_policy)p));
        g_test_add_data_func(path, GINT_TO_POINTER(p), test_blocks_once);
    }
    g_test_add_func("/policies/table/names", test_table_names);
    g_test_add_func("/policies/pair-waves", test_pair_waves);
    g_test_add_func("/policies/kernelet-picks-best-pair", test_kernelet_picks_best_pair);
    g_test_add_func("/policies/table/needs-trial", test_table_needs_trial);
    g_test_add_func("/policies/profile-whole", test_profile_whole);
    g_test_add_func("/policies/pair-split", test_pair_split);
    g_test_add_func("/policies/pruning", test_pruning);
    g_test_add_func("/policies/widening", test_widening);
    g_test_add_func("/policies/reaction-to-arrival", test_reaction_to_arrival);
    g_test_add_func("/policies/lone-stream", test_lone_stream);
    g_test_add_func("/policies/pair-short", test_pair_short);
    g_test_add_func("/policies/side-by-side", test_side_by_side);
    g_test_add_func("/policies/determinism", test_determinism);
    g_test_add_func("/policies/arrivals", test_arrivals);
    g_test_add_func("/policies/kernelet-beats-base-model", test_kernelet_beats_base_model);
    g_test_add_func("/policies/kernelet-beats-base-mix", test_kernelet_beats_base_mix);
    g_test_add_func("/policies/launch-cost-decides-pairing", test_launch_cost_decides_pairing);
    g_test_add_func("/policies/tune/keeps-a-gaining-plan", test_tune_keeps_a_gaining_plan);
    g_test_add_func("/policies/tune/misjudged-pair", test_tune_misjudged_pair);
    g_test_add_func("/policies/tune/stops-a-losing-pair", test_tune_stops_a_losing_pair);
    return g_test_run();
}
