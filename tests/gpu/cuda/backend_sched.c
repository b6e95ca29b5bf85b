/* backend-check, the scheduler on the cuda backend: two tenants, one launching tea (compute
 * bound on the H100) and one pc (memory bound), LAUNCHES times each, under the fifo and the
 * kernelet policies, with the profiles of the scheduler's H100 data file (so nothing is
 * profiled here). Outputs must verify against the CPU reference under both; the time to
 * run everything, the slices and the pairings are reported. */
#include <stdlib.h>
#include <string.h>

#include "backend_check.h"
#include "ksched.h"

#define LAUNCHES 4

typedef struct sched_tenant {
    const kw_kernel *k;
    kw_instance in;
    uint32_t id, module, fn;
    kbackend_devptr dev[KW_MAX_BUFFERS];
    unsigned char params[8 * KW_MAX_ARGS];
    size_t params_size;
} sched_tenant;

static void op_done(void *user, const ksched_op_result *r)
{
    if (r->status) {
        int *failed = user;
        __atomic_add_fetch(failed, 1, __ATOMIC_SEQ_CST);
        printf("operation failed: %s\n", r->msg);
    }
}

static int submit(ksched *s, sched_tenant *t, const ksched_op *op, int *failed)
{
    ksched_err e = {0};
    if (!ksched_submit(s, t->id, 0, op, op_done, failed, NULL, &e))
        return 0;
    bc_fail("scheduler: %s: %s", t->k->name, e.msg);
    return 1;
}

/* Tenant, module, memory, inputs: everything through the scheduler. */
static int setup(ksched *s, const char *dir, sched_tenant *t, int *failed)
{
    ksched_err e = {0};
    char msg[256];
    size_t len;
    char *text = bc_kernel_ptx(t->k, dir, &len, msg, sizeof(msg));
    if (!text || ksched_tenant_add(s, t->k->name, NULL, &t->id, &e) ||
        ksched_module_load(s, t->id, text, len, &t->module, &e) ||
        ksched_function_get(s, t->id, t->module, t->k->entry, &t->fn, NULL, &e)) {
        bc_fail("scheduler: %s: %s", t->k->name, text ? e.msg : msg);
        free(text);
        return 1;
    }
    free(text);
    for (unsigned b = 0; b < t->in.n_buffers; b++) {
        const kw_buffer *buf = &t->in.buffers[b];
        if (ksched_mem_alloc(s, t->id, buf->size, &t->dev[b], &e)) {
            bc_fail("scheduler: %s: %s", t->k->name, e.msg);
            return 1;
        }
        ksched_op op = {.kind = buf->copy_in ? KSCHED_OP_COPY_H2D : KSCHED_OP_MEMSET};
        if (buf->copy_in)
            op.u.h2d = (typeof(op.u.h2d)){.dst = t->dev[b], .src = buf->host, .bytes = buf->size};
        else
            op.u.memset = (typeof(op.u.memset)){.dst = t->dev[b], .bytes = buf->size};
        if (submit(s, t, &op, failed))
            return 1;
    }
    t->params_size = kw_pack_args(&t->in, t->dev, t->params);
    return 0;
}

static int launch_all(ksched *s, sched_tenant *t, int *failed)
{
    ksched_op op = {.kind = KSCHED_OP_LAUNCH};
    op.u.launch.function = t->fn;
    memcpy(op.u.launch.grid, t->in.grid, sizeof(op.u.launch.grid));
    memcpy(op.u.launch.block, t->in.block, sizeof(op.u.launch.block));
    op.u.launch.smem = t->in.dynamic_shared_bytes;
    op.u.launch.params = t->params;
    op.u.launch.params_size = t->params_size;
    for (int i = 0; i < LAUNCHES; i++)
        if (submit(s, t, &op, failed))
            return 1;
    return 0;
}

static int copy_out(ksched *s, sched_tenant *t, int *failed)
{
    for (unsigned b = 0; b < t->in.n_buffers; b++) {
        kw_buffer *buf = &t->in.buffers[b];
        if (!buf->copy_out)
            continue;
        memset(buf->host, 0, buf->size);
        ksched_op op = {.kind = KSCHED_OP_COPY_D2H,
                        .u.d2h = {.dst = buf->host, .src = t->dev[b], .bytes = buf->size}};
        if (submit(s, t, &op, failed))
            return 1;
    }
    return 0;
}

static void run_policy(kbackend be, const char *dir, const ksched_profile_cache *profiles,
                       ksched_policy policy, sched_tenant t[2], FILE *csv)
{
    ksched_config cfg;
    ksched_config_default(&cfg);
    cfg.policy = policy;
    ksched *s;
    ksched_err e = {0};
    if (ksched_new(&s, &be, &cfg, profiles, &e)) {
        bc_fail("scheduler (%s): %s", ksched_policy_name(policy), e.msg);
        return;
    }
    int failed = 0, bad = 0;
    for (int i = 0; i < 2 && !bad; i++)
        bad = setup(s, dir, &t[i], &failed);
    bad = bad || ksched_run_until_idle(s, &e);
    uint64_t t0 = ksched_now(s);
    for (int i = 0; i < 2 && !bad; i++)
        bad = launch_all(s, &t[i], &failed);
    bad = bad || ksched_run_until_idle(s, &e);
    double ms = (double)(ksched_now(s) - t0) / 1e6;
    for (int i = 0; i < 2 && !bad; i++)
        bad = copy_out(s, &t[i], &failed);
    bad = bad || ksched_run_until_idle(s, &e);
    char why[2][256] = {"", ""};
    int wrong = 0;
    for (int i = 0; i < 2 && !bad; i++)
        wrong |= t[i].k->verify(&t[i].in, why[i], sizeof(why[i])) != KW_OK;
    ksched_stats st;
    ksched_get_stats(s, &st);
    if (bad || failed || wrong)
        bc_fail("scheduler (%s): %s%d operations failed; tea: %s; pc: %s",
                ksched_policy_name(policy), bad ? e.msg : "", failed, why[0], why[1]);
    printf("| %s | %.3f | %llu | %llu | %llu | %s |\n", ksched_policy_name(policy), ms,
           (unsigned long long)st.slices, (unsigned long long)st.coschedules,
           (unsigned long long)st.unprofiled, bad || failed || wrong ? "WRONG" : "verified");
    if (csv)
        fprintf(csv, "sched,%s,%.4f,%llu,%llu\n", ksched_policy_name(policy), ms,
                (unsigned long long)st.slices, (unsigned long long)st.coschedules);
    ksched_free(s);
}

void bc_check_sched(kbackend be, const char *dir, const char *profiles_path, FILE *csv)
{
    ksched_profile_cache *profiles;
    ksched_err e = {0};
    if (ksched_profile_cache_new(&profiles, &e) ||
        ksched_profile_load_file(profiles, profiles_path, &e)) {
        bc_fail("profiles %s: %s", profiles_path, e.msg);
        return;
    }
    sched_tenant t[2] = {{.k = kw_find("tea")}, {.k = kw_find("pc")}};
    int made = 0;
    for (; made < 2; made++)
        if (t[made].k->create(&t[made].in, KW_SIZE_DEFAULT, 1) != KW_OK) {
            bc_fail("scheduler: %s: create failed", t[made].k->name);
            break;
        }
    if (made == 2) {
        printf("\n| policy (tea + pc, %d launches each) | ms | slices | pairings | unprofiled | "
               "outputs |\n|---|---|---|---|---|---|\n", LAUNCHES);
        run_policy(be, dir, profiles, KSCHED_FIFO, t, csv);
        run_policy(be, dir, profiles, KSCHED_KERNELET, t, csv);
    }
    for (int i = 0; i < made; i++)
        t[i].k->destroy(&t[i].in);
    ksched_profile_cache_free(profiles);
}
