/* Loaded modules by content (see module_cache.h). */
#include "module_cache.h"

#include <stdlib.h>
#include <string.h>

#include "profile.h"

typedef struct entry {
    uint64_t hash;
    size_t len;
    char *text;
    void *payload;
    unsigned holders;
    int shared;
} entry;

struct kcuda_module_cache {
    entry *e;
    size_t n, cap;
};

int kcuda_module_cache_new(kcuda_module_cache **out, kbackend_error *err)
{
    if (!out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
}

void kcuda_module_cache_free(kcuda_module_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->e[i].text);
    free(c->e);
    free(c);
}

/* The shared entry of this text (private entries are never found by text). */
static entry *find_text(kcuda_module_cache *c, const char *text, size_t len)
{
    uint64_t h = ksched_hash(text, len);
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].shared && c->e[i].hash == h && c->e[i].len == len &&
            !memcmp(c->e[i].text, text, len))
            return &c->e[i];
    return NULL;
}

static entry *find_payload(const kcuda_module_cache *c, const void *payload)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].payload == payload)
            return &c->e[i];
    return NULL;
}

void *kcuda_module_cache_acquire(kcuda_module_cache *c, const char *text, size_t len)
{
    entry *e = c && (text || !len) ? find_text(c, text, len) : NULL;
    if (!e || e->holders == UINT32_MAX)
        return NULL;
    e->holders++;
    return e->payload;
}

int kcuda_module_cache_add(kcuda_module_cache *c, const char *text, size_t len, void *payload,
                           kbackend_error *err)
{
    return kcuda_module_cache_add_shared(c, text, len, payload, 1, err);
}

int kcuda_module_cache_add_shared(kcuda_module_cache *c, const char *text, size_t len,
                                  void *payload, int shared, kbackend_error *err)
{
    if (!c || !payload || (!text && len))
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if (find_payload(c, payload))
        return kbackend_fail(err, KBACKEND_EINVAL, "module already cached");
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        entry *grown = realloc(c->e, cap * sizeof(*grown));
        if (!grown)
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
        c->e = grown;
        c->cap = cap;
    }
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    if (len)
        memcpy(copy, text, len);
    c->e[c->n++] = (entry){.hash = ksched_hash(text, len), .len = len, .text = copy,
                           .payload = payload, .holders = 1, .shared = shared != 0};
    return 0;
}

int kcuda_module_cache_release(kcuda_module_cache *c, void *payload, kbackend_error *err)
{
    entry *e = c ? find_payload(c, payload) : NULL;
    if (!e)
        return kbackend_fail(err, KBACKEND_EINVAL, "module not loaded");
    if (--e->holders)
        return (int)(e->holders > INT32_MAX ? INT32_MAX : e->holders);
    free(e->text);
    *e = c->e[--c->n];
    return 0;
}

size_t kcuda_module_cache_count(const kcuda_module_cache *c)
{
    return c ? c->n : 0;
}

void *kcuda_module_cache_at(const kcuda_module_cache *c, size_t i)
{
    return c && i < c->n ? c->e[i].payload : NULL;
}

int kcuda_module_cache_shared(const kcuda_module_cache *c, const void *payload)
{
    const entry *e = c ? find_payload(c, payload) : NULL;
    return e ? e->shared : 0;
}

uint64_t kcuda_module_cache_hash(const kcuda_module_cache *c, const void *payload)
{
    const entry *e = c ? find_payload(c, payload) : NULL;
    return e ? e->hash : 0;
}
