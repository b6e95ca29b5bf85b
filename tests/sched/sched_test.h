/* Helpers shared by the scheduler tests: a sim with a scheduler on it, test kernels,
 * modules and launches. */
#ifndef SCHED_TEST_H
#define SCHED_TEST_H

#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "ksched.h"
#include "sim.h"

typedef struct tenv {
    ksim *sim;
    kbackend be;
    ksched *s;
} tenv;

/* A kernel's truth: rm, instructions per warp, PUR, MUR (32 registers, no shared memory). */
static inline kbackend_profile test_profile(double rm, double insts, double pur, double mur)
{
    kbackend_profile p = {.pur = pur, .mur = mur, .rm = rm, .insts_per_warp = insts,
                       .regs_per_thread = 32};
    return p;
}

/* The test kernels: compute-bound, memory-bound, in between. */
static inline void tenv_standard_kernels(tenv *t)
{
    kbackend_profile comp = test_profile(0.002, 3000, 0.85, 0.05);
    kbackend_profile mem = test_profile(0.2, 300, 0.05, 0.7);
    kbackend_profile mid = test_profile(0.05, 300, 0.45, 0.35);
    g_assert_cmpint(ksim_add_kernel(t->sim, "comp", &comp, NULL), ==, 0);
    g_assert_cmpint(ksim_add_kernel(t->sim, "mem", &mem, NULL), ==, 0);
    g_assert_cmpint(ksim_add_kernel(t->sim, "mid", &mid, NULL), ==, 0);
}

/* A sim with the standard kernels and a scheduler on it that starts with the profiles
 * (may be NULL). */
static inline tenv *tenv_new_profiled(const ksched_config *cfg, const ksim_config *sc,
                                      const ksched_profile_cache *profiles)
{
    tenv *t = g_new0(tenv, 1);
    ksched_err e = {0};
    if (ksim_new(&t->sim, sc, &e))
        g_error("ksim_new: %s", e.msg);
    ksim_backend(t->sim, &t->be);
    tenv_standard_kernels(t);
    if (ksched_new(&t->s, &t->be, cfg, profiles, &e))
        g_error("ksched_new: %s", e.msg);
    return t;
}

static inline tenv *tenv_new(const ksched_config *cfg, const ksim_config *sc)
{
    return tenv_new_profiled(cfg, sc, NULL);
}

static inline tenv *tenv_policy(ksched_policy p)
{
    ksched_config c;
    ksched_config_default(&c);
    c.policy = p;
    return tenv_new(&c, NULL);
}

static inline void tenv_free(tenv *t)
{
    ksched_free(t->s);
    ksim_free(t->sim);
    g_free(t);
}

static inline uint32_t tenv_tenant(tenv *t, const char *name)
{
    uint32_t id;
    ksched_err e = {0};
    if (ksched_tenant_add(t->s, name, NULL, &id, &e))
        g_error("tenant_add: %s", e.msg);
    return id;
}

/* Loads a module with the given entries (and their sliced variants when sliced) and
 * returns the function of entries[0]... in fns. */
static inline void tenv_functions(tenv *t, uint32_t tenant, const char *const *entries,
                                  unsigned n, int sliced, uint32_t *fns)
{
    GString *text = g_string_new("// test module\n");
    for (unsigned i = 0; i < n; i++) {
        g_string_append_printf(text, ".visible .entry %s(\n)\n{\n}\n", entries[i]);
        if (sliced)
            g_string_append_printf(text, ".visible .entry %s__kslice(\n)\n{\n}\n", entries[i]);
    }
    uint32_t m;
    ksched_err e = {0};
    if (ksched_module_load(t->s, tenant, text->str, text->len, &m, &e))
        g_error("module_load: %s", e.msg);
    for (unsigned i = 0; i < n; i++)
        if (ksched_function_get(t->s, tenant, m, entries[i], &fns[i], NULL, &e))
            g_error("function_get %s: %s", entries[i], e.msg);
    g_string_free(text, TRUE);
}

static inline ksched_op launch_op(uint32_t fn, unsigned gx, unsigned gy, unsigned bx)
{
    ksched_op op = {.kind = KSCHED_OP_LAUNCH};
    op.u.launch.function = fn;
    op.u.launch.grid[0] = gx;
    op.u.launch.grid[1] = gy;
    op.u.launch.grid[2] = 1;
    op.u.launch.block[0] = bx;
    op.u.launch.block[1] = 1;
    op.u.launch.block[2] = 1;
    return op;
}

static inline uint64_t tenv_submit(tenv *t, uint32_t tenant, uint32_t stream,
                                   const ksched_op *op, ksched_done_fn done, void *user)
{
    uint64_t id = 0;
    ksched_err e = {0};
    if (ksched_submit(t->s, tenant, stream, op, done, user, &id, &e))
        g_error("submit: %s", e.msg);
    return id;
}

static inline uint32_t tenv_stream(tenv *t, uint32_t tenant)
{
    uint32_t st;
    ksched_err e = {0};
    if (ksched_stream_create(t->s, tenant, &st, &e))
        g_error("stream_create: %s", e.msg);
    return st;
}

static inline void tenv_run(tenv *t)
{
    ksched_err e = {0};
    if (ksched_run_until_idle(t->s, &e))
        g_error("run: %s", e.msg);
}

/* Every block of the launch tagged op ran exactly once. */
static inline void assert_blocks_once(tenv *t, uint64_t op, uint64_t total)
{
    ksim_coverage_result c;
    g_assert_cmpint(ksim_coverage(t->sim, op, total, &c, NULL), ==, 0);
    if (c.missing || c.duplicated || c.outside)
        g_error("launch %llu: %llu missing, %llu duplicated, %llu outside of %llu blocks",
                (unsigned long long)op, (unsigned long long)c.missing,
                (unsigned long long)c.duplicated, (unsigned long long)c.outside,
                (unsigned long long)total);
    g_assert_cmpuint(c.ran, ==, total);
}

/* A recorded operation result (the msg is copied). */
typedef struct rec {
    ksched_op_result r;
    char msg[160];
    unsigned order;     /* completion order */
    int seen;
} rec;

static unsigned rec_counter;

static inline void rec_done(void *user, const ksched_op_result *r)
{
    rec *x = user;
    g_assert_false(x->seen);
    x->r = *r;
    snprintf(x->msg, sizeof(x->msg), "%s", r->msg);
    x->r.msg = x->msg;
    x->order = ++rec_counter;
    x->seen = 1;
}

#endif
