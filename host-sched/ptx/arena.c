/* The module arena: a list of chunks that bump-allocate; freed all at once. Parsing makes
 * many small objects (names, operands, statements) that live exactly as long as the
 * module, so one free of the chunk list replaces tracking each of them. */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* Chunks start at 64 KiB and double up to 4 MiB: small modules stay small, big ones need
 * few chunks (and few fresh pages: the allocator keeps big freed blocks for reuse). */
#define CHUNK_MIN ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)4096 << 10)

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} chunk;

struct kptx_arena {
    chunk *head;
    size_t next_chunk;              /* size of the next regular chunk */
    void *cache;                    /* derived data about the module (analysis) */
    void (*cache_free)(void *);
};

kptx_arena *kptx_arena_new(void)
{
    return calloc(1, sizeof(kptx_arena));
}

void kptx_arena_free(kptx_arena *a)
{
    if (!a)
        return;
    kptx_arena_set_cache(a, NULL, NULL);
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

static chunk *chunk_new(size_t cap)
{
    chunk *c = malloc(sizeof(chunk) + cap);
    if (!c)
        return NULL;
    c->next = NULL;
    c->used = 0;
    c->cap = cap;
    return c;
}

void *kptx_arena_alloc_raw(kptx_arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n == 0)
        n = 8;
    chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        if (a->next_chunk < CHUNK_MIN)
            a->next_chunk = CHUNK_MIN;
        if (n > a->next_chunk / 4) {
            /* A big object gets a chunk of its own, kept behind the current one so
             * that the current chunk's free space is not abandoned. */
            chunk *big = chunk_new(n);
            if (!big)
                return NULL;
            big->used = n;
            if (c) {
                big->next = c->next;
                c->next = big;
            } else {
                a->head = big;
            }
            return big->data;
        }
        c = chunk_new(a->next_chunk);
        if (!c)
            return NULL;
        if (a->next_chunk < CHUNK_MAX)
            a->next_chunk *= 2;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

void *kptx_arena_alloc(kptx_arena *a, size_t n)
{
    void *p = kptx_arena_alloc_raw(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

char *kptx_arena_strndup(kptx_arena *a, const char *s, size_t len)
{
    char *d = kptx_arena_alloc_raw(a, len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *kptx_arena_strdup(kptx_arena *a, const char *s)
{
    return kptx_arena_strndup(a, s, strlen(s));
}

void *kptx_arena_memdup(kptx_arena *a, const void *p, size_t n)
{
    if (n == 0)
        return NULL;
    void *d = kptx_arena_alloc_raw(a, n);
    if (d)
        memcpy(d, p, n);
    return d;
}

void *kptx_arena_cache(const kptx_arena *a)
{
    return a->cache;
}

void kptx_arena_set_cache(kptx_arena *a, void *cache, void (*free_fn)(void *))
{
    if (a->cache && a->cache_free)
        a->cache_free(a->cache);
    a->cache = cache;
    a->cache_free = free_fn;
}
