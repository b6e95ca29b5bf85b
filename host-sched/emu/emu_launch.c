/* Launches: checks the configuration, distributes blocks over the worker pool, reports
 * the first fault with the kernel, instruction, block and thread. */
#include "emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Host memory one worker may use for one block's state. */
#define EMU_MAX_BLOCK_CONTEXT (1ull << 30)

typedef struct launch_job {
    emu_job job;       /* first: the pool hands this pointer back */
    emu_launch *L;
} launch_job;

void emu_insn_text(const emu_insn *in, char *buf, size_t len)
{
    const kptx_instr *ki = in ? in->origin : NULL;
    if (!ki || !ki->opcode) {
        snprintf(buf, len, "?");
        return;
    }
    size_t n = (size_t)snprintf(buf, len, "%s", ki->opcode);
    for (unsigned i = 0; i < ki->n_mods && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s", ki->mods[i]);
}

void emu_launch_fail(emu_launch *L, const emu_warp *w, const emu_insn *in, int code,
                     const char *detail)
{
    atomic_store(&L->stop, 1);
    pthread_mutex_lock(&L->err_lock);
    if (L->err_code == 0) {
        L->err_code = code;
        char text[96], where[160] = "", what[160] = "";
        emu_insn_text(in, text, sizeof text);
        if (w) {
            const emu_block *blk = w->blk;
            unsigned t = w->thread0 + w->fault.lane;
            unsigned nx = L->block[0], ny = L->block[1];
            snprintf(where, sizeof where, " in block (%u,%u,%u) thread (%u,%u,%u)",
                     blk->ctaid[0], blk->ctaid[1], blk->ctaid[2], t % nx, t / nx % ny,
                     t / (nx * ny));
            if (code == KEMU_EADDRESS || code == KEMU_EMISALIGNED)
                snprintf(what, sizeof what, ": %s access of %u bytes at 0x%llx",
                         w->fault.what ? w->fault.what : "memory", w->fault.bytes,
                         (unsigned long long)w->fault.addr);
        }
        if (in)
            emu_error_set(&L->err, code, "kernel %s: %s (line %u): %s%s%s", L->code->name, text,
                          in->line, detail ? detail : kemu_strerror(code), what, where);
        else
            emu_error_set(&L->err, code, "kernel %s: %s", L->code->name,
                          detail ? detail : kemu_strerror(code));
    }
    pthread_mutex_unlock(&L->err_lock);
}

static void launch_work(emu_job *job, unsigned participant)
{
    emu_launch *L = ((launch_job *)job)->L;
    emu_block *blk = NULL;
    for (;;) {
        if (atomic_load_explicit(&L->stop, memory_order_relaxed))
            break;
        uint64_t id = atomic_fetch_add(&L->next_block, 1);
        if (id >= L->total_blocks)
            break;
        if (!blk && !(blk = emu_block_new(L, participant))) {
            emu_launch_fail(L, NULL, NULL, KEMU_ENOMEM, "out of host memory for a block");
            break;
        }
        if (emu_block_run(blk, id) != 0) {
            atomic_store(&L->stop, 1);
            break;
        }
    }
    emu_block_free(blk);
}

static int check_config(const kemu_function *fn, const kemu_launch_config *cfg,
                        const kemu_device *dev, kemu_error *err)
{
    const emu_code *c = fn->code;
    for (int d = 0; d < 3; d++)
        if (cfg->grid[d] == 0 || cfg->block[d] == 0)
            return emu_error_set(err, KEMU_EINVAL, "kernel %s: zero grid or block dimension",
                                 c->name);
    if (cfg->grid[0] > 0x7fffffffu || cfg->grid[1] > 65535 || cfg->grid[2] > 65535)
        return emu_error_set(err, KEMU_EINVAL, "kernel %s: grid (%u,%u,%u) too large", c->name,
                             cfg->grid[0], cfg->grid[1], cfg->grid[2]);
    uint64_t threads = (uint64_t)cfg->block[0] * cfg->block[1] * cfg->block[2];
    if (cfg->block[2] > 64 || threads > c->max_threads)
        return emu_error_set(err, KEMU_EINVAL, "kernel %s: block (%u,%u,%u) above %u threads",
                             c->name, cfg->block[0], cfg->block[1], cfg->block[2],
                             c->max_threads);
    if (cfg->params_bytes != c->param_bytes || (c->param_bytes && !cfg->params))
        return emu_error_set(err, KEMU_EPARAM,
                             "kernel %s: parameter block of %zu bytes, the kernel takes %u",
                             c->name, cfg->params_bytes, c->param_bytes);
    uint64_t shared = (uint64_t)c->dyn_offset + cfg->dynamic_shared_bytes;
    if (shared > dev->cfg.max_shared_bytes)
        return emu_error_set(err, KEMU_ERESOURCES,
                             "kernel %s: %llu bytes of shared memory, at most %u", c->name,
                             (unsigned long long)shared, dev->cfg.max_shared_bytes);
    if ((uint64_t)c->local_bytes + c->pframe_bytes > dev->cfg.max_local_bytes)
        return emu_error_set(err, KEMU_ERESOURCES,
                             "kernel %s: %u bytes of local memory per thread, at most %u",
                             c->name, c->local_bytes + c->pframe_bytes,
                             dev->cfg.max_local_bytes);
    /* What one worker allocates for a block: registers of every warp, local memory and
     * call frames of every thread, shared memory. */
    uint64_t warps = (threads + EMU_WARP - 1) / EMU_WARP;
    uint64_t bytes = warps * c->n_slots * EMU_WARP * sizeof(uint64_t) +
                     threads * ((uint64_t)c->local_bytes + c->pframe_bytes) + shared;
    if (bytes > EMU_MAX_BLOCK_CONTEXT)
        return emu_error_set(err, KEMU_ERESOURCES,
                             "kernel %s: a block of %llu threads needs %llu MiB of emulator "
                             "state (registers, local memory), at most %llu",
                             c->name, (unsigned long long)threads,
                             (unsigned long long)(bytes >> 20),
                             (unsigned long long)(EMU_MAX_BLOCK_CONTEXT >> 20));
    return 0;
}

int kemu_launch(kemu_function *fn, const kemu_launch_config *cfg, kemu_error *err)
{
    if (!fn || !cfg)
        return emu_error_set(err, KEMU_EINVAL, "NULL function or launch configuration");
    if (!fn->code) {
        if (err)
            *err = fn->error;
        return fn->error.code;
    }
    kemu_device *dev = fn->mod->dev;
    int rc = check_config(fn, cfg, dev, err);
    if (rc)
        return rc;
    const emu_code *c = fn->code;
    emu_launch *L = calloc(1, sizeof *L);
    if (!L)
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    L->dev = dev;
    L->fn = fn;
    L->code = c;
    L->params = cfg->params;
    L->param_bytes = c->param_bytes;
    memcpy(L->grid, cfg->grid, sizeof L->grid);
    memcpy(L->block, cfg->block, sizeof L->block);
    L->total_blocks = (uint64_t)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    L->dyn_shared = cfg->dynamic_shared_bytes;
    L->shared_total = c->dyn_offset + cfg->dynamic_shared_bytes;
    L->budget = cfg->max_warp_instructions;
    L->cancel = cfg->cancel;
    L->workers = dev->pool.n_threads + 1;
    L->gridid = atomic_fetch_add(&dev->launches, 1) + 1;
    pthread_mutex_init(&L->err_lock, NULL);
    L->map = emu_memory_snapshot(&dev->mem);

    launch_job job = {.L = L};
    job.job.work = launch_work;
    emu_pool_run(&dev->pool, &job.job);

    rc = L->err_code;
    if (rc && err)
        *err = L->err;
    if (cfg->stats) {
        cfg->stats->thread_instructions = atomic_load(&L->thread_insns);
        cfg->stats->warp_instructions = atomic_load(&L->warp_insns);
    }
    emu_memmap_release(L->map);
    pthread_mutex_destroy(&L->err_lock);
    free(L);
    return rc;
}

int kemu_params_pack(const kemu_function *fn, void *const *values, void *buf,
                     size_t buf_bytes, kemu_error *err)
{
    if (!fn || !buf || (fn->n_params && !values))
        return emu_error_set(err, KEMU_EINVAL, "NULL argument");
    uint32_t total = 0;
    for (unsigned i = 0; i < fn->n_params; i++)
        if (fn->params[i].offset + fn->params[i].size > total)
            total = fn->params[i].offset + fn->params[i].size;
    if (buf_bytes < total)
        return emu_error_set(err, KEMU_EPARAM, "parameter buffer of %zu bytes, %u needed",
                             buf_bytes, total);
    memset(buf, 0, total);
    for (unsigned i = 0; i < fn->n_params; i++) {
        if (!values[i])
            return emu_error_set(err, KEMU_EINVAL, "parameter %u has no value", i);
        memcpy((uint8_t *)buf + fn->params[i].offset, values[i], fn->params[i].size);
    }
    return 0;
}

int kemu_launch_slice(kemu_function *sliced, uint32_t first_block, uint32_t count,
                      const kemu_launch_config *cfg, kemu_error *err)
{
    if (!sliced || !cfg)
        return emu_error_set(err, KEMU_EINVAL, "NULL function or launch configuration");
    unsigned n = sliced->n_params;
    if (n < KPTX_SLICE_EXTRA_PARAMS)
        return emu_error_set(err, KEMU_EINVAL, "%s is not a sliced kernel",
                             sliced->fn ? sliced->fn->name : "?");
    const kemu_param_desc *extra = &sliced->params[n - KPTX_SLICE_EXTRA_PARAMS];
    for (unsigned i = 0; i < KPTX_SLICE_EXTRA_PARAMS; i++)
        if (extra[i].size != 4)
            return emu_error_set(err, KEMU_EINVAL, "%s: slice parameter %u is not 32-bit",
                                 sliced->fn->name, i);
    uint64_t total = (uint64_t)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    if (count == 0 || total == 0 || total > UINT32_MAX || first_block >= total ||
        count > total - first_block)
        return emu_error_set(err, KEMU_EINVAL,
                             "%s: slice [%u, +%u) outside a grid of %llu blocks",
                             sliced->fn->name, first_block, count, (unsigned long long)total);
    if (cfg->params_bytes > extra[0].offset || (cfg->params_bytes && !cfg->params))
        return emu_error_set(err, KEMU_EPARAM,
                             "%s: parameter block of %zu bytes, the original takes at most %u",
                             sliced->fn->name, cfg->params_bytes, extra[0].offset);
    uint32_t bytes = extra[3].offset + 4;
    uint8_t *params = calloc(1, bytes);
    if (!params)
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    if (cfg->params_bytes)
        memcpy(params, cfg->params, cfg->params_bytes);
    const uint32_t values[4] = {first_block, cfg->grid[0], cfg->grid[1], cfg->grid[2]};
    for (unsigned i = 0; i < 4; i++)
        memcpy(params + extra[i].offset, &values[i], 4);
    kemu_launch_config sc = *cfg;
    sc.grid[0] = count;
    sc.grid[1] = sc.grid[2] = 1;
    sc.params = params;
    sc.params_bytes = bytes;
    int rc = kemu_launch(sliced, &sc, err);
    free(params);
    return rc;
}
