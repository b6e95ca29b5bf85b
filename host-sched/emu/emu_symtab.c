/* A scoped symbol table for compiling function bodies: registers (single and %r<N>
 * ranges), variables and labels, with nested { } scopes that shadow outer names. A hash
 * of (name, class) gives the newest symbol; each symbol remembers the one it shadows. */
#include "emu_compile.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_name(const char *s, bool range)
{
    uint64_t h = range ? 0x9e3779b97f4a7c15ull : 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

int emu_symtab_init(emu_symtab *st)
{
    memset(st, 0, sizeof *st);
    st->n_buckets = 256;
    st->heads = malloc(st->n_buckets * sizeof *st->heads);
    st->keys = calloc(st->n_buckets, sizeof *st->keys);
    st->key_range = calloc(st->n_buckets, sizeof *st->key_range);
    if (!st->heads || !st->keys || !st->key_range) {
        emu_symtab_free(st);
        return KEMU_ENOMEM;
    }
    for (unsigned i = 0; i < st->n_buckets; i++)
        st->heads[i] = -1;
    return 0;
}

void emu_symtab_free(emu_symtab *st)
{
    free(st->syms);
    free(st->heads);
    free(st->keys);
    free(st->key_range);
    memset(st, 0, sizeof *st);
}

/* The bucket of (name, range): its current key's slot, or the empty slot to use. */
static unsigned bucket(const emu_symtab *st, const char *name, bool range)
{
    unsigned mask = st->n_buckets - 1;
    unsigned i = (unsigned)hash_name(name, range) & mask;
    while (st->keys[i] && (st->key_range[i] != range || strcmp(st->keys[i], name) != 0))
        i = (i + 1) & mask;
    return i;
}

static int grow(emu_symtab *st)
{
    emu_symtab old = *st;
    st->n_buckets *= 2;
    st->heads = malloc(st->n_buckets * sizeof *st->heads);
    st->keys = calloc(st->n_buckets, sizeof *st->keys);
    st->key_range = calloc(st->n_buckets, sizeof *st->key_range);
    if (!st->heads || !st->keys || !st->key_range) {
        free(st->heads);
        free(st->keys);
        free(st->key_range);
        *st = old;
        return KEMU_ENOMEM;
    }
    for (unsigned i = 0; i < st->n_buckets; i++)
        st->heads[i] = -1;
    for (unsigned i = 0; i < old.n_buckets; i++) {
        if (!old.keys[i])
            continue;
        unsigned b = bucket(st, old.keys[i], old.key_range[i]);
        st->keys[b] = old.keys[i];
        st->key_range[b] = old.key_range[i];
        st->heads[b] = old.heads[i];
    }
    free(old.heads);
    free(old.keys);
    free(old.key_range);
    return 0;
}

void emu_symtab_push(emu_symtab *st)
{
    st->depth++;
}

void emu_symtab_pop(emu_symtab *st)
{
    while (st->n > 0 && st->syms[st->n - 1].depth == st->depth) {
        const emu_sym *s = &st->syms[st->n - 1];
        unsigned b = bucket(st, s->name, s->kind == EMU_SYM_REGRANGE);
        st->heads[b] = s->prev;
        st->n--;
    }
    if (st->depth > 0)
        st->depth--;
}

int emu_symtab_add(emu_symtab *st, const emu_sym *sym)
{
    if ((st->n_used + 1) * 2 > st->n_buckets && grow(st) != 0)
        return KEMU_ENOMEM;
    if (emu_grow((void **)&st->syms, &st->cap, st->n, sizeof *st->syms))
        return KEMU_ENOMEM;
    bool range = sym->kind == EMU_SYM_REGRANGE;
    unsigned b = bucket(st, sym->name, range);
    if (!st->keys[b]) {
        st->keys[b] = sym->name;
        st->key_range[b] = range;
        st->n_used++;
    }
    emu_sym *s = &st->syms[st->n];
    *s = *sym;
    s->depth = st->depth;
    s->prev = st->heads[b];
    st->heads[b] = (int)st->n;
    st->n++;
    return 0;
}

static const emu_sym *lookup(const emu_symtab *st, const char *name, bool range)
{
    unsigned b = bucket(st, name, range);
    return st->keys[b] && st->heads[b] >= 0 ? &st->syms[st->heads[b]] : NULL;
}

const emu_sym *emu_symtab_find(const emu_symtab *st, const char *name, emu_sym *tmp)
{
    const emu_sym *s = lookup(st, name, false);
    if (s)
        return s;
    /* %r57: the range %r<N> with 57 < N. */
    size_t len = strlen(name), digits = 0;
    while (digits < len && name[len - 1 - digits] >= '0' && name[len - 1 - digits] <= '9')
        digits++;
    if (digits == 0 || digits == len || digits > 9)
        return NULL;
    size_t plen = len - digits;
    if (name[plen] == '0' && digits > 1)
        return NULL;
    char prefix[128];
    if (plen >= sizeof prefix)
        return NULL;
    memcpy(prefix, name, plen);
    prefix[plen] = '\0';
    const emu_sym *r = lookup(st, prefix, true);
    if (!r)
        return NULL;
    uint32_t idx = (uint32_t)strtoul(name + plen, NULL, 10);
    if (idx >= r->count)
        return NULL;
    *tmp = *r;
    tmp->kind = EMU_SYM_REG;
    tmp->slot = r->slot + idx;
    tmp->count = 1;
    return tmp;
}

const emu_sym *emu_symtab_find_label(const emu_symtab *st, const char *name)
{
    const emu_sym *s = lookup(st, name, false);
    return s && s->kind == EMU_SYM_LABEL ? s : NULL;
}
