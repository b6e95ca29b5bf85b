/* Interned words of a parse: opcodes, modifiers and operand names repeat on most lines, so
 * each distinct word is stored once in the module's arena and instructions share it. */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

static uint32_t hash_bytes(const char *p, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static bool grow(kptx_intern_table *t)
{
    unsigned cap = t->cap ? t->cap * 2 : 256;
    kptx_intern_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (unsigned i = 0; i < t->cap; i++) {
        if (!t->slots[i].s)
            continue;
        unsigned k = t->slots[i].hash & (cap - 1);
        while (slots[k].s)
            k = (k + 1) & (cap - 1);
        slots[k] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return true;
}

const char *kptx_intern(kptx_intern_table *t, kptx_arena *a, const char *p, size_t len)
{
    if (2 * (t->n + 1) > t->cap && !grow(t))
        return NULL;
    uint32_t h = hash_bytes(p, len);
    unsigned k = h & (t->cap - 1);
    for (; t->slots[k].s; k = (k + 1) & (t->cap - 1)) {
        const kptx_intern_slot *s = &t->slots[k];
        if (s->hash == h && s->len == len && memcmp(s->s, p, len) == 0)
            return s->s;
    }
    const char *s = kptx_arena_strndup(a, p, len);
    if (s) {
        t->slots[k] = (kptx_intern_slot){s, h, (uint32_t)len};
        t->n++;
    }
    return s;
}

void kptx_intern_free(kptx_intern_table *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}
