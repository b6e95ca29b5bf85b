/* Which module variables can move into a tenant's window, where each goes in the block,
 * and the block's initial bytes (kernelet/ptx.h, "Relocating module variables"). The
 * text is a tenant's: sizes, dimensions and initialisers are checked here, so that a
 * huge or malformed variable is refused, never allocated or written out of bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* The variable an initialiser element names (written sym, generic(sym)). */
static const char *init_target(const char *name)
{
    if (!strncmp(name, ".generic", 8))
        name += 8;
    if (!strncmp(name, "generic(", 8))
        name += 8;
    return name;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int kptx_collect_init_names(const kptx_module *m, const char ***out, size_t *n)
{
    size_t count = 0, k = 0;
    for (unsigned i = 0; i < m->n_items; i++)
        for (unsigned j = 0; m->items[i].kind == KPTX_ITEM_VAR && j < m->items[i].u.var.n_init; j++)
            count += m->items[i].u.var.init[j].kind == KPTX_OPND_SYMBOL;
    *out = calloc(count ? count : 1, sizeof **out);
    *n = count;
    if (!*out)
        return KPTX_ENOMEM;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_var *v = &m->items[i].u.var;
        for (unsigned j = 0; m->items[i].kind == KPTX_ITEM_VAR && j < v->n_init; j++)
            if (v->init[j].kind == KPTX_OPND_SYMBOL && v->init[j].name)
                (*out)[k++] = init_target(v->init[j].name);
    }
    *n = k;
    qsort(*out, k, sizeof **out, by_name);
    return 0;
}

/* Through the module's analysis, computed once: a module of many variables and uses
 * must not cost a scan of every initialiser per use. Unknown (out of memory) counts as
 * named. */
static bool named_by_initialiser(const kptx_module *m, const char *name)
{
    const kptx_analysis *an = kptx_module_analysis(m, NULL);
    return !an || bsearch(&name, an->init_names, an->n_init_names, sizeof *an->init_names,
                          by_name);
}

/* Size of v in bytes (an open first dimension sized by its initialiser); 0 when unknown
 * or beyond the limit. */
static uint64_t var_bytes(const kptx_var *v)
{
    uint64_t elem = kptx_type_size(v->type) * (uint64_t)(v->vec ? v->vec : 1);
    uint64_t n = elem;
    for (unsigned i = 0; i < v->n_dims && n; i++) {
        uint64_t d = v->dims[i];
        if (d == 0 && i == 0 && v->has_init) {
            uint64_t per = v->vec ? v->vec : 1;
            for (unsigned j = 1; j < v->n_dims; j++)
                per = v->dims[j] && v->dims[j] <= KPTX_RELOC_MAX_BYTES ? per * v->dims[j] : 0;
            d = per ? (v->n_init + per - 1) / per : 0;
        }
        n = d && d <= KPTX_RELOC_MAX_BYTES / n ? n * d : 0;
    }
    return n <= KPTX_RELOC_MAX_BYTES ? n : 0;
}

/* How many initialiser elements are of kind k. */
static unsigned count_init(const kptx_var *v, kptx_operand_kind k)
{
    unsigned n = 0;
    for (unsigned i = 0; i < v->n_init; i++)
        n += v->init[i].kind == k;
    return n;
}

bool kptx_reloc_possible(const kptx_module *m, const kptx_var *v, char *why, size_t len)
{
    const char *no = NULL;
    uint64_t size = var_bytes(v), scalar = kptx_type_size(v->type);
    if (v->space != KPTX_SPACE_GLOBAL)
        no = "it is not in .global space";
    else if (v->linkage && !strcmp(v->linkage, ".extern"))
        no = "it is .extern (defined in another module)";
    else if (v->attribute)
        no = "it has an .attribute (managed memory)";
    else if (!scalar || scalar > 8 || !size)
        no = "its type or size is not one the relocation handles, or it is larger than 64 MiB";
    else if (count_init(v, KPTX_OPND_INT) + count_init(v, KPTX_OPND_FLOAT) != v->n_init)
        no = "its initialiser holds addresses";
    else if (count_init(v, KPTX_OPND_FLOAT) && scalar != 4 && scalar != 8)
        no = "its initialiser has float literals for elements of other than 4 or 8 bytes";
    else if ((uint64_t)v->n_init * scalar > size)
        no = "its initialiser is longer than it";
    else if (named_by_initialiser(m, v->name))
        no = "another variable's initialiser holds its address";
    if (why && len)
        snprintf(why, len, "%s", no ? no : "");
    return !no;
}

void kptx_reloc_plan_clear(kptx_reloc_plan *p)
{
    if (!p)
        return;
    free(p->vars);
    *p = (kptx_reloc_plan){0};
}

int kptx_reloc_plan_make(const kptx_module *m, kptx_reloc_plan *out, kptx_error *err)
{
    if (!m || !out)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL argument");
    *out = (kptx_reloc_plan){0};
    out->vars = calloc(m->n_items ? m->n_items : 1, sizeof *out->vars);
    if (!out->vars)
        return kptx_fail(err, KPTX_ENOMEM, 0, 0, "out of memory");
    uint64_t off = 0;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_var *v = &m->items[i].u.var;
        if (m->items[i].kind != KPTX_ITEM_VAR || !kptx_reloc_possible(m, v, NULL, 0))
            continue;
        uint64_t size, a64;
        unsigned align;
        kptx_var_size_align(v, &size, &align);
        size = var_bytes(v);
        a64 = align && align <= 4096 ? align : 4096;
        off = (off + a64 - 1) / a64 * a64;
        if (off + size > KPTX_RELOC_MAX_BYTES) {
            kptx_reloc_plan_clear(out);
            return kptx_fail(err, KPTX_ELIMIT, 0, 0, "module variables of more than %llu "
                             "bytes", (unsigned long long)KPTX_RELOC_MAX_BYTES);
        }
        out->vars[out->n++] = (kptx_reloc_var){.name = v->name, .var = v, .offset = off, .size = size};
        off += size;
    }
    out->bytes = off;
    return 0;
}

/* One initialiser element of scalar type (size bytes) at dst. */
static void write_element(const kptx_var *v, const kptx_operand *o, unsigned size,
                          uint8_t *dst)
{
    uint64_t bits = (uint64_t)o->value;
    bool is_float = v->type[0] == '.' && v->type[1] == 'f';
    if (o->kind == KPTX_OPND_FLOAT && is_float && size == 4 && o->width == 64) {
        double d;
        memcpy(&d, &o->bits, 8);
        float f = (float)d;
        uint32_t b;
        memcpy(&b, &f, 4);
        bits = b;
    } else if (o->kind == KPTX_OPND_FLOAT && is_float && size == 8 && o->width == 32) {
        uint32_t b = (uint32_t)o->bits;
        float f;
        memcpy(&f, &b, 4);
        double d = f;
        memcpy(&bits, &d, 8);
    } else if (o->kind == KPTX_OPND_FLOAT) {
        bits = o->bits;
    }
    for (unsigned i = 0; i < size; i++)     /* little-endian, as the device */
        dst[i] = (uint8_t)(bits >> (8 * i));
}

int kptx_reloc_image(const kptx_reloc_plan *p, void *buf, uint64_t len, kptx_error *err)
{
    if (!p || (!buf && len) || len < p->bytes)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "no plan, or a buffer smaller than it");
    if (p->bytes)
        memset(buf, 0, p->bytes);
    for (unsigned i = 0; i < p->n; i++) {
        const kptx_var *v = p->vars[i].var;
        unsigned size = kptx_type_size(v->type);
        if ((uint64_t)v->n_init * size > p->vars[i].size)
            return kptx_fail(err, KPTX_EINVAL, 0, 0, "initialiser of %s longer than it",
                             v->name);
        for (unsigned k = 0; k < v->n_init; k++)
            write_element(v, &v->init[k], size,
                          (uint8_t *)buf + p->vars[i].offset + (uint64_t)k * size);
    }
    return 0;
}
