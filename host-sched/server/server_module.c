/* Modules: an image is PTX, a cubin (server_cubin.c: runs whole, natively) or a fatbin
 * (server_fatbin.c: its PTX for the device, else its cubin). PTX is parsed once to learn
 * each kernel's parameter layout, given its sliced variants by the slicer, and loaded into
 * the scheduler. All of that runs on a worker (server_call.c: a big module's rewriting and
 * JIT take 100 ms and more), the connection's later requests waiting for its answer.
 * Functions come back with their layout and attributes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/fatbin.h"
#include "kernelet/ptx.h"
#include "server_internal.h"

/* Attribute numbers of cuda.h used here. */
enum {
    DEV_MAX_THREADS_PER_BLOCK = 1,
    DEV_SHARED_OPTIN = 97,
    DEV_CC_MAJOR = 75,
    DEV_CC_MINOR = 76,
    FN_MAX_THREADS = 0, FN_SHARED = 1, FN_REGS = 4, FN_PTX_VERSION = 5, FN_BINARY_VERSION = 6,
    FN_MAX_DYNAMIC_SHARED = 8, FN_CARVEOUT = 9,
};

#define DEFAULT_DYNAMIC_SHARED (48u << 10)

void ks_module_free(struct ks_obj *o)
{
    struct ks_module *m = &o->u.module;

    for (unsigned i = 0; i < m->n_entries; i++) {
        free(m->entries[i].name);
        free(m->entries[i].params);
        free(m->entries[i].unfenced);
    }
    free(m->entries);
    m->entries = NULL;
    m->n_entries = 0;
}

unsigned ks_device_arch(const struct ks_server *s)
{
    return (unsigned)(s->device.attrs[DEV_CC_MAJOR] * 10 + s->device.attrs[DEV_CC_MINOR]);
}

/* ---- what the PTX says about each entry ------------------------------------------------------ */

static uint32_t declared_registers(const kptx_function *fn)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *st = &fn->stmts[i];
        if (st->kind == KPTX_STMT_VAR && st->u.var.space == KPTX_SPACE_REG)
            n += st->u.var.reg_range ? st->u.var.reg_range : 1;
    }
    return n > 255 ? 255 : (uint32_t)n;
}

static int describe_entry(const kptx_module *m, const kptx_function *fn, struct ks_entry *e)
{
    kptx_kernel_info info;
    kptx_error err;

    if (kptx_kernel_info_get(m, fn->name, &info, &err) != 0)
        return -1;
    if (info.n_params > KERNELET_MAX_PARAMS) {
        kptx_kernel_info_clear(&info);
        return -1;
    }
    e->name = strdup(fn->name);
    e->n_params = info.n_params;
    e->params = calloc(info.n_params ? info.n_params : 1, sizeof(*e->params));
    if (!e->name || !e->params) {
        kptx_kernel_info_clear(&info);
        return -1;
    }
    for (unsigned i = 0; i < info.n_params; i++)
        e->params[i] = (struct kernelet_param){info.params[i].offset, info.params[i].size};
    e->param_bytes = info.param_bytes;
    if (info.reqntid[0])
        e->max_threads = info.reqntid[0] * (info.reqntid[1] ? info.reqntid[1] : 1) *
                         (info.reqntid[2] ? info.reqntid[2] : 1);
    else if (info.maxntid[0])
        e->max_threads = info.maxntid[0] * (info.maxntid[1] ? info.maxntid[1] : 1) *
                         (info.maxntid[2] ? info.maxntid[2] : 1);
    e->regs = declared_registers(fn);
    kptx_kernel_info_clear(&info);
    return 0;
}

static int describe_module(const kptx_module *m, struct ks_module *mod)
{
    unsigned n = 0;

    for (unsigned i = 0; i < m->n_items; i++)
        n += m->items[i].kind == KPTX_ITEM_FUNCTION && m->items[i].u.fn.is_entry &&
             m->items[i].u.fn.has_body;
    mod->entries = calloc(n ? n : 1, sizeof(*mod->entries));
    if (!mod->entries)
        return -1;
    mod->ptx_version = m->version_major * 10 + m->version_minor;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION || !it->u.fn.is_entry || !it->u.fn.has_body)
            continue;
        if (describe_entry(m, &it->u.fn, &mod->entries[mod->n_entries]) != 0)
            return -1;
        mod->n_entries++;
    }
    return 0;
}

uint32_t ks_module_charge(struct ks_load *l, uint32_t sid, uint64_t bytes)
{
    ksched_err err;
    int rc = ksched_module_charge(l->sched, l->tenant, sid, bytes, &err);

    if (!rc)
        return KS_CUDA_SUCCESS;
    ksched_module_unload(l->sched, l->tenant, sid, NULL);
    return ks_cuda_of(rc, err.msg);
}

uint32_t ks_ptx_load(struct ks_load *l, const char *ptx, size_t len, struct ks_module *mod)
{
    kptx_module *m = NULL;
    kptx_error perr;
    ksched_err err;
    char *text = NULL;
    size_t text_len = 0;
    unsigned sliced = 0;
    uint32_t code = KS_CUDA_SUCCESS;
    uint64_t t0 = ks_now_ns();
    int rc;

    while (len > 0 && ptx[len - 1] == '\0')
        len--;
    if (kptx_parse(ptx, len, &m, &perr) != 0)
        return KS_CUDA_INVALID_PTX;
    if (describe_module(m, mod) != 0) {
        code = KS_CUDA_INVALID_PTX;
        goto out;
    }
    /* Device printf becomes records in a ring of the module's own (kernelet/ptx.h), before
     * fencing so that the ring's stores are fenced like any other; a module that uses the
     * ring's reserved names is refused. Device functions are not fenced: while fencing is
     * on, their printf calls stay calls (an entry calling one could not be fenced). */
    unsigned printfs = 0;
    if ((rc = kptx_printf_module(m, l->srv->cfg.no_fence ? 0 : KPTX_PRINTF_ENTRIES_ONLY,
                                 &printfs, &perr)) != 0) {
        code = rc == KPTX_ENOMEM ? KS_CUDA_OUT_OF_MEMORY : KS_CUDA_INVALID_PTX;
        goto out;
    }
    mod->printf_ring = printfs > 0;
    /* Fenced first, so that the sliced variants inherit the fence; never loaded unfenced
     * when fencing is on. Kernels that cannot be sliced stay whole; the rest get their
     * __kslice variants (a failed slicing leaves m as it was). */
    if (!l->srv->cfg.no_fence && ks_fence_module(l->srv, m, mod) != 0) {
        code = KS_CUDA_OUT_OF_MEMORY;
        goto out;
    }
    (void)kptx_slice_module(m, &sliced, &perr);
    if (kptx_print(m, &text, &text_len, &perr) != 0) {
        free(text);
        text = NULL;
        if (!l->srv->cfg.no_fence) {
            code = KS_CUDA_OUT_OF_MEMORY;
            goto out;
        }
    }
    ks_latency_load(l, KS_LOAD_REWRITE, t0);
    t0 = ks_now_ns();
    rc = ksched_module_load_in(l->sched, l->tenant, l->context, text ? text : ptx,
                               text ? text_len : len, &mod->sid, &err);
    ks_latency_load(l, KS_LOAD_BACKEND, t0);
    if (rc) {
        l->sched_rc = rc;
        code = rc == KSCHED_EBACKEND ? KS_CUDA_INVALID_PTX : ks_cuda_of(rc, err.msg);
    } else {
        code = ks_module_charge(l, mod->sid, kptx_module_global_bytes(m));
    }
out:
    free(text);
    kptx_module_free(m);
    return code;
}

/* ---- requests -------------------------------------------------------------------------------- */

/* The image bytes, copied out of shared memory (the client could change them meanwhile). */
static uint32_t image_copy(struct ks_conn *c, const struct kproto_request *r, uint8_t **out)
{
    const struct kernelet_module_load *q = &r->u.module_load.load;
    const uint8_t *src = r->u.module_load.inline_image;
    struct ks_region *reg;

    if (!src) {
        reg = ks_region_find(c, q->region);
        if (!reg || q->offset > reg->size || q->size > reg->size - q->offset)
            return KS_CUDA_INVALID_VALUE;
        src = reg->base + q->offset;
    }
    if (!(*out = malloc(q->size + 1)))
        return KS_CUDA_OUT_OF_MEMORY;
    memcpy(*out, src, q->size);
    (*out)[q->size] = 0;
    return KS_CUDA_SUCCESS;
}

static uint32_t image_kind(const uint8_t *img, size_t size, uint32_t kind)
{
    uint32_t magic = 0;

    if (kind != KERNELET_IMAGE_AUTO)
        return kind;
    if (size >= 4)
        memcpy(&magic, img, 4);
    if (magic == KFATBIN_MAGIC)
        return KERNELET_IMAGE_FATBIN;
    if (size >= 4 && memcmp(img, "\177ELF", 4) == 0)
        return KERNELET_IMAGE_CUBIN;
    return KERNELET_IMAGE_PTX;
}

void ks_module_reset(struct ks_module *mod)
{
    struct ks_obj tmp = {.kind = KS_MODULE, .u.module = *mod};

    ks_module_free(&tmp);
    memset(mod, 0, sizeof(*mod));
}

static void load_free(struct ks_load *l)
{
    ks_module_reset(&l->mod);
    free(l->img);
    free(l);
}

/* On a worker: the image parsed, rewritten and loaded into the scheduler (touches only l). */
static void load_run(struct ks_call *k)
{
    struct ks_load *l = k->data;

    switch (image_kind(l->img, l->size, l->kind)) {
    case KERNELET_IMAGE_FATBIN: l->code = ks_fatbin_load(l, l->img, l->size, &l->mod); break;
    case KERNELET_IMAGE_CUBIN: l->code = ks_cubin_load(l, l->img, l->size, &l->mod); break;
    case KERNELET_IMAGE_PTX:
        l->code = ks_ptx_load(l, (const char *)l->img, l->size, &l->mod);
        break;
    default: l->code = KS_CUDA_INVALID_IMAGE;
    }
    ks_latency_load(l, KS_LOAD_ALL, l->t0);
}

/* Back on the server thread: the module's handle, and the answer. A connection closed
 * meanwhile has no table: a module loaded goes with its tenant (the scheduler's table
 * holds it), and what the server described of it is freed here. */
static void load_finish(struct ks_call *k)
{
    struct ks_conn *c = k->conn;
    struct ks_load *l = k->data;
    uint32_t code = k->rc ? KS_CUDA_INVALID_CONTEXT : l->code;
    struct ks_obj *o = NULL;

    if (c->closing) {
        load_free(l);
        return;
    }
    ks_latency_add_load(c, l);
    if (l->sched_rc == KSCHED_ECONTEXTS)
        code = ks_context_cuda_of(c, l->context, l->sched_rc, "");
    if (!code && !(o = ks_handle_new(&c->handles, KS_MODULE, c->context))) {
        ksched_module_unload(l->sched, l->tenant, l->mod.sid, NULL);
        code = KS_CUDA_OUT_OF_MEMORY;
    }
    if (code) {
        ks_reply_cuda(c, KERNELET_OP_MODULE_LOAD, k->id, code, 0);
        load_free(l);
        return;
    }
    o->u.module = l->mod;
    memset(&l->mod, 0, sizeof(l->mod)); /* the handle's now */
    /* libcuda looks a module's printf ring up only when it may have one: a framework loads
     * thousands of modules without */
    struct kernelet_module ans = {.module = o->handle, .n_functions = o->u.module.n_entries,
                                  .flags = o->u.module.printf_ring ? 0
                                                                   : KERNELET_MODULE_NO_PRINTF};
    ks_reply(c, KERNELET_OP_MODULE_LOAD, k->id, KERNELET_ST_OK, &ans, sizeof(ans));
    load_free(l);
}

/* The image is copied here, on the loop (its region is the connection's); the rest runs
 * off the loop: other connections are served meanwhile, this one's later requests (which
 * may name the module) wait for its answer. */
void ks_module_load(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_load *l = calloc(1, sizeof(*l));
    uint32_t code;

    if (!l) {
        ks_reply_cuda(c, KERNELET_OP_MODULE_LOAD, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    l->srv = c->srv;
    l->sched = c->srv->cfg.sched;
    l->tenant = c->tenant;
    l->context = c->context;
    l->size = r->u.module_load.load.size;
    l->kind = r->u.module_load.load.kind;
    l->t0 = ks_now_ns();
    code = image_copy(c, r, &l->img);
    ks_latency_load(l, KS_LOAD_COPY, l->t0);
    if (code) {
        ks_reply_cuda(c, KERNELET_OP_MODULE_LOAD, id, code, 0);
        load_free(l);
        return;
    }
    if (!ks_call_start_data(c, id, KERNELET_OP_MODULE_LOAD, load_run, load_finish, l))
        load_free(l);
}

void ks_module_unload(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    if (!ks_handle_get(&c->handles, r->u.handle.handle, KS_MODULE)) {
        ks_reply_cuda(c, KERNELET_OP_MODULE_UNLOAD, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    ks_drain_then(c, id, KERNELET_OP_MODULE_UNLOAD, KS_AFTER_UNLOAD, r->u.handle.handle);
}

static bool function_of_module(const struct ks_obj *o, const void *module)
{
    return o->kind == KS_FUNCTION && o->u.function.module == *(const uint64_t *)module;
}

uint32_t ks_module_release(struct ks_conn *c, uint64_t handle)
{
    struct ks_obj *o = ks_handle_get(&c->handles, handle, KS_MODULE);
    uint64_t *functions;
    size_t n;
    ksched_err err;
    int rc;

    if (!o)
        return KS_CUDA_INVALID_HANDLE;
    rc = ksched_module_unload(c->srv->cfg.sched, c->tenant, o->u.module.sid, &err);
    ks_module_free(o);
    ks_handle_remove(&c->handles, handle);
    ks_alloc_remove_module(c, handle);
    /* Out of memory here leaves the functions behind as handles that name nothing loaded;
     * launching one fails cleanly (its module is gone). */
    functions = ks_handle_select(&c->handles, function_of_module, &handle, &n);
    for (size_t i = 0; i < n; i++)
        ks_handle_remove(&c->handles, functions[i]);
    free(functions);
    return rc ? ks_cuda_of(rc, err.msg) : KS_CUDA_SUCCESS;
}

static const struct ks_entry *find_entry(const struct ks_module *m, const char *name, size_t len)
{
    for (unsigned i = 0; i < m->n_entries; i++)
        if (strlen(m->entries[i].name) == len && memcmp(m->entries[i].name, name, len) == 0)
            return &m->entries[i];
    return NULL;
}

static void function_attrs(const struct ks_conn *c, const struct ks_module *m,
                           const struct ks_entry *e, const ksched_function_info *info,
                           int32_t *attrs)
{
    const int32_t *dev = c->srv->device.attrs;
    int32_t max_threads = dev[DEV_MAX_THREADS_PER_BLOCK];
    int32_t smem = (int32_t)info->attrs.static_smem;
    int32_t dyn = (int32_t)DEFAULT_DYNAMIC_SHARED - smem;

    if (e->max_threads && (int32_t)e->max_threads < max_threads)
        max_threads = (int32_t)e->max_threads;
    if (info->attrs.max_threads_per_block && (int32_t)info->attrs.max_threads_per_block < max_threads)
        max_threads = (int32_t)info->attrs.max_threads_per_block;
    if (dev[DEV_SHARED_OPTIN] && dyn > dev[DEV_SHARED_OPTIN] - smem)
        dyn = dev[DEV_SHARED_OPTIN] - smem;
    memset(attrs, 0, sizeof(int32_t) * KERNELET_FUNC_ATTRS);
    attrs[FN_MAX_THREADS] = max_threads;
    attrs[FN_SHARED] = smem;
    attrs[FN_REGS] = info->attrs.regs_per_thread ? (int32_t)info->attrs.regs_per_thread
                                                 : (int32_t)(e->regs ? e->regs : 1);
    /* A cubin of the current ELF ABI does not record the virtual architecture it came
     * from; its SM stands in (nvcc builds sm_XY from compute_XY). */
    attrs[FN_PTX_VERSION] = (int32_t)(m->cubin_arch ? m->cubin_arch : m->ptx_version);
    attrs[FN_BINARY_VERSION] = m->cubin_arch ? (int32_t)m->cubin_arch
                                             : dev[DEV_CC_MAJOR] * 10 + dev[DEV_CC_MINOR];
    attrs[FN_MAX_DYNAMIC_SHARED] = dyn > 0 ? dyn : 0;
    attrs[FN_CARVEOUT] = -1;
}

void ks_function_get(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_obj *mo = ks_handle_get(&c->handles, r->u.name.req.module, KS_MODULE), *fo;
    const struct ks_entry *e;
    ksched_function_info info;
    ksched_err err;
    char name[KERNELET_MAX_SYMBOL + 1];
    uint32_t fid;
    int rc;

    if (!mo) {
        ks_reply_cuda(c, KERNELET_OP_FUNCTION_GET, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    if (!(e = find_entry(&mo->u.module, r->u.name.name, r->u.name.req.name_len))) {
        ks_reply_cuda(c, KERNELET_OP_FUNCTION_GET, id, KS_CUDA_NOT_FOUND, 0);
        return;
    }
    memcpy(name, r->u.name.name, r->u.name.req.name_len);
    name[r->u.name.req.name_len] = 0;
    rc = ksched_function_get(c->srv->cfg.sched, c->tenant, mo->u.module.sid, name, &fid, &info, &err);
    if (rc) {
        ks_reply_cuda(c, KERNELET_OP_FUNCTION_GET, id,
                      rc == KSCHED_ENOTFOUND ? KS_CUDA_NOT_FOUND : ks_cuda_of(rc, err.msg), 0);
        return;
    }
    if (!(fo = ks_handle_new(&c->handles, KS_FUNCTION, c->context))) {
        ks_reply_cuda(c, KERNELET_OP_FUNCTION_GET, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    fo->u.function.sid = fid;
    fo->u.function.module = mo->handle;
    fo->u.function.entry = (uint32_t)(e - mo->u.module.entries);
    fo->u.function.no_code = info.no_code;
    ks_fence_function(c, &fo->u.function);
    fo->u.function.param_bytes = e->param_bytes;
    function_attrs(c, &mo->u.module, e, &info, fo->u.function.attrs);

    struct kernelet_function ans = {.function = fo->handle, .n_params = e->n_params,
                                    .param_bytes = e->param_bytes};
    memcpy(ans.attrs, fo->u.function.attrs, sizeof(ans.attrs));
    struct iovec parts[2] = {{&ans, sizeof(ans)},
                             {e->params, e->n_params * sizeof(struct kernelet_param)}};
    ks_reply_parts(c, KERNELET_OP_FUNCTION_GET, id, KERNELET_ST_OK, parts, e->n_params ? 2 : 1);
}

/* A module variable (cuModuleGetGlobal): the scheduler asks the backend for this load's
 * range and lets the tenant's copies reach it; the connection's table learns it too, tied
 * to the module so that its unload forgets it. */
void ks_global_get(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_obj *mo = ks_handle_get(&c->handles, r->u.name.req.module, KS_MODULE);
    uint32_t len = r->u.name.req.name_len; /* 1..KERNELET_MAX_SYMBOL, no NUL: the decoder */
    char name[KERNELET_MAX_SYMBOL + 1];
    kbackend_devptr p;
    uint64_t size;
    ksched_err err;
    int rc;

    if (!mo) {
        ks_reply_cuda(c, KERNELET_OP_GLOBAL_GET, id, KS_CUDA_INVALID_HANDLE, 0);
        return;
    }
    memcpy(name, r->u.name.name, len);
    name[len] = 0;
    rc = ksched_global_get(c->srv->cfg.sched, c->tenant, mo->u.module.sid, name, &p, &size, &err);
    if (rc) {
        ks_reply_cuda(c, KERNELET_OP_GLOBAL_GET, id,
                      rc == KSCHED_ENOTFOUND || rc == KSCHED_EINVAL ? KS_CUDA_NOT_FOUND
                      : rc == KSCHED_EBACKEND ? KS_CUDA_UNKNOWN : ks_cuda_of(rc, err.msg), 0);
        return;
    }
    if (ks_alloc_add(c, p, size, mo->handle) != 0) {
        ks_reply_cuda(c, KERNELET_OP_GLOBAL_GET, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    struct kernelet_global ans = {.dptr = p, .size = size};
    ks_reply(c, KERNELET_OP_GLOBAL_GET, id, KERNELET_ST_OK, &ans, sizeof(ans));
}
