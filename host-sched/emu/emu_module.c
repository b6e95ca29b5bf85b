/* Modules: PTX text in, module variables allocated and initialised, entries compiled. */
#include "emu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EMU_MAX_MODULE_VAR (1ull << 32)

const emu_var *emu_module_var(const struct kemu_module *mod, const char *name)
{
    for (unsigned i = 0; i < mod->n_vars; i++)
        if (strcmp(mod->vars[i].name, name) == 0)
            return &mod->vars[i];
    return NULL;
}

uint64_t emu_function_handle(const kptx_module *m, const char *name)
{
    for (unsigned i = 0; i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_FUNCTION && strcmp(m->items[i].u.fn.name, name) == 0)
            return EMU_FUNC_WINDOW + 16u * i;
    return 0;
}

/* Name of the variable an initialiser symbol refers to, without generic(...) marks. */
static const char *init_symbol_name(const char *name)
{
    if (strncmp(name, ".generic", 8) == 0)
        name += 8;
    if (strncmp(name, "generic(", 8) == 0)
        name += 8;
    return name;
}

/* Writes initialiser element i (an operand) into elem of element type t. */
static int write_init(const kemu_module *mod, const kptx_operand *op, emu_type t,
                      uint8_t *elem, kemu_error *err, const char *var)
{
    unsigned size = emu_type_size(t);
    uint64_t bits = 0;
    switch (op->kind) {
    case KPTX_OPND_INT:
        if (t == EMU_T_F32) {
            float f = (float)op->value;
            memcpy(&bits, &f, 4);
        } else if (t == EMU_T_F64) {
            double d = (double)op->value;
            memcpy(&bits, &d, 8);
        } else {
            bits = (uint64_t)op->value;
        }
        break;
    case KPTX_OPND_FLOAT:
        if (t == EMU_T_F32 && op->width == 64) {
            double d;
            memcpy(&d, &op->bits, 8);
            float f = (float)d;
            memcpy(&bits, &f, 4);
        } else if (t == EMU_T_F64 && op->width == 32) {
            float f;
            uint32_t b32 = (uint32_t)op->bits;
            memcpy(&f, &b32, 4);
            double d = f;
            memcpy(&bits, &d, 8);
        } else {
            bits = op->bits;
        }
        break;
    case KPTX_OPND_SYMBOL: {
        const char *name = init_symbol_name(op->name);
        const emu_var *v = emu_module_var(mod, name);
        uint64_t fn = emu_function_handle(mod->ptx, name);
        if (fn) {
            bits = fn;   /* a function pointer table: loads, but calls through it fail */
        } else if (v && (v->space == KPTX_SPACE_GLOBAL || v->space == KPTX_SPACE_CONST)) {
            bits = v->addr + (uint64_t)op->value;
        } else {
            return emu_error_set(err, KEMU_EUNSUPPORTED,
                                 "initialiser of %s: address of %s is not supported", var,
                                 op->name);
        }
        break;
    }
    default:
        return emu_error_set(err, KEMU_EUNSUPPORTED, "initialiser of %s: unsupported element",
                             var);
    }
    memcpy(elem, &bits, size < 8 ? size : 8);
    return 0;
}

static int init_var(const kemu_module *mod, const kptx_var *v, uint8_t *host, uint64_t bytes,
                    kemu_error *err)
{
    emu_type t = emu_type_parse(v->type);
    unsigned size = emu_type_size(t);
    if (size == 0 || size > 8)
        return emu_error_set(err, KEMU_EUNSUPPORTED, "initialiser of %s: type %s", v->name,
                             v->type);
    for (unsigned i = 0; i < v->n_init; i++) {
        if ((uint64_t)(i + 1) * size > bytes)
            return emu_error_set(err, KEMU_EPTX, "initialiser of %s is longer than it", v->name);
        int rc = write_init(mod, &v->init[i], t, host + (uint64_t)i * size, err, v->name);
        if (rc)
            return rc;
    }
    return 0;
}

static int add_var(kemu_module *mod, const kptx_var *v, kemu_error *err)
{
    emu_var *ev = &mod->vars[mod->n_vars];
    memset(ev, 0, sizeof *ev);
    ev->name = v->name;
    ev->space = v->space;
    ev->align = emu_var_align(v);
    ev->bytes = emu_var_bytes(v);
    if (ev->bytes > EMU_MAX_MODULE_VAR)
        return emu_error_set(err, KEMU_ENOMEM, "variable %s is too large", v->name);
    switch (v->space) {
    case KPTX_SPACE_GLOBAL:
    case KPTX_SPACE_CONST: {
        if (v->linkage && strcmp(v->linkage, ".extern") == 0)
            return emu_error_set(err, KEMU_EUNSUPPORTED,
                                 "external variable %s needs linking, which is not supported",
                                 v->name);
        emu_alloc *a;
        const kemu_range *in = mod->range.hi ? &mod->range : NULL;
        int rc = emu_memory_alloc(&mod->dev->mem, ev->bytes ? ev->bytes : 1, true, in, &a, err);
        if (rc)
            return rc;
        ev->addr = a->base;
        ev->alloc = a;
        mod->n_vars++;
        return v->has_init ? init_var(mod, v, a->host, ev->bytes, err) : 0;
    }
    case KPTX_SPACE_SHARED:
        if ((v->linkage && strcmp(v->linkage, ".extern") == 0) ||
            (v->n_dims > 0 && v->dims[0] == 0)) {
            ev->is_extern = true;
        } else {
            uint64_t off = (mod->shared_bytes + ev->align - 1) / ev->align * ev->align;
            if (off + ev->bytes > UINT32_MAX / 2)
                return emu_error_set(err, KEMU_ENOMEM, "shared variable %s is too large",
                                     v->name);
            ev->addr = off;
            mod->shared_bytes = (uint32_t)(off + ev->bytes);
        }
        mod->n_vars++;
        return 0;
    default:   /* .local at module scope is laid out per entry; .tex is not supported */
        mod->n_vars++;
        return 0;
    }
}

static void free_vars(kemu_module *mod)
{
    for (unsigned i = 0; i < mod->n_vars; i++)
        if (mod->vars[i].alloc)
            emu_memory_free(&mod->dev->mem, mod->vars[i].addr, true, NULL);
    free(mod->vars);
    mod->vars = NULL;
    mod->n_vars = 0;
}

static int add_function(kemu_module *mod, const kptx_function *f, kemu_error *err)
{
    kemu_function *fn = &mod->fns[mod->n_fns];
    memset(fn, 0, sizeof *fn);
    fn->mod = mod;
    fn->fn = f;
    fn->n_params = f->n_params;
    fn->params = calloc(f->n_params ? f->n_params : 1, sizeof *fn->params);
    if (!fn->params)
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    for (unsigned i = 0; i < f->n_params; i++) {
        fn->params[i].offset = f->params[i].offset;
        fn->params[i].size = f->params[i].size;
    }
    mod->n_fns++;
    /* A kernel that cannot be compiled stays visible: its launches return the error. */
    int rc = emu_compile(mod, f, &fn->code, &fn->error);
    if (rc == KEMU_ENOMEM) {
        if (err)
            *err = fn->error;
        return rc;
    }
    return 0;
}

static int build(kemu_module *mod, kemu_error *err)
{
    const kptx_module *m = mod->ptx;
    unsigned n_vars = 0, n_fns = 0;
    for (unsigned i = 0; i < m->n_items; i++) {
        n_vars += m->items[i].kind == KPTX_ITEM_VAR;
        n_fns += m->items[i].kind == KPTX_ITEM_FUNCTION && m->items[i].u.fn.is_entry &&
                 m->items[i].u.fn.has_body;
    }
    if (m->address_size != 0 && m->address_size != 64)
        return emu_error_set(err, KEMU_EUNSUPPORTED, ".address_size %u: only 64 is supported",
                             m->address_size);
    mod->vars = calloc(n_vars ? n_vars : 1, sizeof *mod->vars);
    mod->fns = calloc(n_fns ? n_fns : 1, sizeof *mod->fns);
    if (!mod->vars || !mod->fns)
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    /* Variables first: initialisers and code refer to their addresses. */
    for (unsigned i = 0; i < m->n_items; i++) {
        if (m->items[i].kind != KPTX_ITEM_VAR)
            continue;
        int rc = add_var(mod, &m->items[i].u.var, err);
        if (rc)
            return rc;
    }
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION || !it->u.fn.is_entry || !it->u.fn.has_body)
            continue;
        int rc = add_function(mod, &it->u.fn, err);
        if (rc)
            return rc;
    }
    return 0;
}

static void module_free(kemu_module *mod)
{
    for (unsigned i = 0; i < mod->n_fns; i++) {
        emu_code_free(mod->fns[i].code);
        free(mod->fns[i].params);
    }
    free(mod->fns);
    free_vars(mod);
    kptx_module_free(mod->ptx);
    free(mod);
}

/* Takes ownership of m. */
static int module_from_parsed(kemu_device *dev, kptx_module *m, const kemu_range *in,
                              kemu_module **out, kemu_error *err)
{
    kemu_module *mod = calloc(1, sizeof *mod);
    if (mod && in)
        mod->range = *in;
    if (!mod) {
        kptx_module_free(m);
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    }
    mod->dev = dev;
    mod->ptx = m;
    int rc = build(mod, err);
    if (rc) {
        module_free(mod);
        return rc;
    }
    pthread_mutex_lock(&dev->modules_lock);
    mod->next = dev->modules;
    if (dev->modules)
        dev->modules->prev = mod;
    dev->modules = mod;
    pthread_mutex_unlock(&dev->modules_lock);
    *out = mod;
    return 0;
}

int kemu_module_load(kemu_device *dev, const char *ptx, size_t len, kemu_module **out,
                     kemu_error *err)
{
    return kemu_module_load_in(dev, NULL, ptx, len, out, err);
}

int kemu_module_load_in(kemu_device *dev, const kemu_range *in, const char *ptx, size_t len,
                        kemu_module **out, kemu_error *err)
{
    if (!dev || !ptx || !out)
        return emu_error_set(err, KEMU_EINVAL, "NULL argument");
    *out = NULL;
    kptx_module *m = NULL;
    kptx_error pe = {0};
    int rc = kptx_parse(ptx, len, &m, &pe);
    if (rc == KPTX_ENOMEM)
        return emu_error_set(err, KEMU_ENOMEM, "out of memory parsing PTX");
    if (rc)
        return emu_error_set(err, KEMU_EPTX, "PTX line %u column %u: %s", pe.line, pe.column,
                             pe.message);
    return module_from_parsed(dev, m, in, out, err);
}

int kemu_module_load_parsed(kemu_device *dev, const struct kptx_module *m, kemu_module **out,
                            kemu_error *err)
{
    if (!dev || !m || !out)
        return emu_error_set(err, KEMU_EINVAL, "NULL argument");
    char *text = NULL;
    size_t len = 0;
    kptx_error pe = {0};
    int rc = kptx_print(m, &text, &len, &pe);
    if (rc)
        return emu_error_set(err, rc == KPTX_ENOMEM ? KEMU_ENOMEM : KEMU_EPTX,
                             "printing the module: %s", pe.message);
    rc = kemu_module_load(dev, text, len, out, err);
    free(text);
    return rc;
}

void kemu_module_unload(kemu_module *mod)
{
    if (!mod)
        return;
    kemu_device *dev = mod->dev;
    pthread_mutex_lock(&dev->modules_lock);
    if (mod->prev)
        mod->prev->next = mod->next;
    else
        dev->modules = mod->next;
    if (mod->next)
        mod->next->prev = mod->prev;
    pthread_mutex_unlock(&dev->modules_lock);
    module_free(mod);
}

int kemu_module_get_global(kemu_module *mod, const char *name, kemu_devptr *addr,
                           size_t *bytes, kemu_error *err)
{
    if (!mod || !name)
        return emu_error_set(err, KEMU_EINVAL, "NULL argument");
    const emu_var *v = emu_module_var(mod, name);
    if (!v || !v->alloc)
        return emu_error_set(err, KEMU_ENOTFOUND, "no .global or .const variable %s", name);
    if (addr)
        *addr = v->addr;
    if (bytes)
        *bytes = (size_t)v->bytes;
    return 0;
}

int kemu_module_get_function(kemu_module *mod, const char *name, kemu_function **out,
                             kemu_error *err)
{
    if (!mod || !name || !out)
        return emu_error_set(err, KEMU_EINVAL, "NULL argument");
    for (unsigned i = 0; i < mod->n_fns; i++) {
        if (strcmp(mod->fns[i].fn->name, name) == 0) {
            *out = &mod->fns[i];
            return 0;
        }
    }
    *out = NULL;
    return emu_error_set(err, KEMU_ENOTFOUND, "no kernel %s in the module", name);
}

void kemu_function_info_get(const kemu_function *fn, kemu_function_info *info)
{
    memset(info, 0, sizeof *info);
    if (!fn)
        return;
    info->name = fn->fn->name;
    info->n_params = fn->n_params;
    info->params = fn->params;
    info->param_bytes = fn->fn->param_bytes;
    const emu_code *c = fn->code;
    if (!c) {
        info->unsupported = fn->error.message;
        return;
    }
    info->static_shared_bytes = c->shared_static;
    info->local_bytes = c->local_bytes + c->pframe_bytes;
    info->registers = c->n_regs;
    info->max_threads_per_block = c->max_threads;
    info->unsupported = c->unsupported;
}
