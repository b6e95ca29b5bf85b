/* Kernel classes: one kernel identity with one launch shape, the unit the policies pair.
 * A class holds the profile, the model's kernel description and the minimum slice size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sched_internal.h"

static int same_class(const sched_class *c, const sched_function *f, const ksched_op *op)
{
    return c->module_hash == f->module->hash && !strcmp(c->entry, f->entry) &&
           !memcmp(c->block, op->u.launch.block, sizeof(c->block)) &&
           c->smem == op->u.launch.smem;
}

/* The model's time per block of the class alone at full occupancy, over the whole GPU:
 * instructions per block / (SMs x IPC) / clock. 0 when the model gives no rate. */
double sched_class_block_ns(ksched *s, const sched_class *c)
{
    double ipc;
    if (kmodel_ipc_single(s->model, &c->k, 0, &ipc) || !(ipc > 0))
        return 0;
    double block_cycles = c->k.insts_per_warp * c->k.warps_per_block / (ipc * s->gpu.sms);
    return block_cycles / s->gpu.clock_mhz * 1000.0;
}

/* The minimum slice (paper: the smallest slice whose overhead is at most p of its run
 * time): the profiled figure, else derived from the backend's per-launch overhead and the
 * model's time per block alone; a multiple of the SM count. */
uint64_t sched_class_min_slice(ksched *s, const sched_class *c)
{
    uint64_t sms = s->gpu.sms;
    if (c->prof.min_slice_blocks)
        return c->prof.min_slice_blocks;
    double block_ns = c->block_ns;
    if (!s->dev.slice_overhead_ns || !(block_ns > 0))
        return sms;
    double blocks = (double)s->dev.slice_overhead_ns / (s->cfg.slice_overhead * block_ns);
    if (!(blocks < 1e15))
        blocks = 1e15;
    uint64_t waves = (uint64_t)ceil(blocks / (double)sms);
    return (waves ? waves : 1) * sms;
}

void sched_class_set_profile(ksched *s, sched_class *c, const kbackend_profile *p)
{
    uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
    c->prof = *p;
    c->k = (kmodel_kernel){
        .warps_per_block = (unsigned)((threads + 31) / 32),
        .regs_per_thread = c->attrs.regs_per_thread ? c->attrs.regs_per_thread
                                                    : p->regs_per_thread,
        .smem_per_block = (c->attrs.static_smem ? c->attrs.static_smem : p->smem_per_block) +
                          c->smem,
        .rm = p->rm,
        .uncoalesced = p->uncoalesced,
        .insts_per_warp = p->insts_per_warp,
    };
    if (kmodel_max_blocks(s->model, &c->k, &c->max_blocks)) {
        c->profiled = -1;       /* the model cannot place it: run it whole */
        return;
    }
    c->block_ns = sched_class_block_ns(s, c);
    c->min_slice = sched_class_min_slice(s, c);
    c->profiled = 1;
    sched_precompute_mark(s, c);    /* its pairs, evaluated before a decision needs them */
}

sched_class *sched_class_of(ksched *s, sched_function *f, const ksched_op *op,
                            ksched_err *err)
{
    for (unsigned i = 0; i < s->n_classes; i++)
        if (same_class(s->classes[i], f, op))
            return s->classes[i];
    if (grow_array(&s->classes, &s->cap_classes, s->n_classes + 1, sizeof(*s->classes))) {
        ksched_fail(err, KSCHED_ENOMEM, "out of memory");
        return NULL;
    }
    sched_class *c = calloc(1, sizeof(*c));
    if (!c) {
        ksched_fail(err, KSCHED_ENOMEM, "out of memory");
        return NULL;
    }
    c->index = s->n_classes;
    c->module_hash = f->module->hash;
    strcpy(c->entry, f->entry);
    memcpy(c->block, op->u.launch.block, sizeof(c->block));
    c->smem = op->u.launch.smem;
    c->attrs = f->attrs;
    const kbackend_profile *p = ksched_profile_cache_get(s->profiles, c->module_hash, c->entry);
    if (p)
        sched_class_set_profile(s, c, p);
    s->classes[s->n_classes++] = c;
    return c;
}

void sched_classes_free(ksched *s)
{
    for (unsigned i = 0; i < s->n_classes; i++)
        free(s->classes[i]);
    free(s->classes);
    s->classes = NULL;
    s->n_classes = s->cap_classes = 0;
}
