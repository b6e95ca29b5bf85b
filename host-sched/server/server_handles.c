/* Handles of one connection: 64-bit values never reused, mapped to objects by an open-
 * addressing hash table. A handle carries its kind in the top byte, so a stream handle
 * passed where an event is expected is simply not found. */
#include <stdlib.h>

#include "server_internal.h"

#define TOMBSTONE ((struct ks_obj *)1)

static size_t slot_of(uint64_t handle, size_t cap)
{
    handle ^= handle >> 33;
    handle *= 0xff51afd7ed558ccdull;
    handle ^= handle >> 33;
    return (size_t)handle & (cap - 1);
}

/* The object in slot i, or NULL for an empty or deleted slot. */
static struct ks_obj *live(const struct ks_handles *h, size_t i)
{
    struct ks_obj *o = h->slots[i];

    return o == TOMBSTONE ? NULL : o;
}

static int grow(struct ks_handles *h)
{
    size_t cap = h->cap ? h->cap * 2 : 64;
    struct ks_obj **slots = calloc(cap, sizeof(*slots));

    if (!slots)
        return -1;
    for (size_t i = 0; i < h->cap; i++) {
        struct ks_obj *o = live(h, i);
        if (!o)
            continue;
        size_t j = slot_of(o->handle, cap);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = o;
    }
    free(h->slots);
    h->slots = slots;
    h->cap = cap;
    h->tomb = 0;
    return 0;
}

struct ks_obj *ks_handle_new(struct ks_handles *h, enum ks_kind kind, uint32_t owner)
{
    struct ks_obj *o;
    size_t j;

    if (h->used >= KS_MAX_HANDLES)
        return NULL;
    if ((h->used + h->tomb + 1) * 2 > h->cap && grow(h))
        return NULL;
    if (!(o = calloc(1, sizeof(*o))))
        return NULL;
    o->kind = kind;
    o->owner = owner;
    o->handle = ((uint64_t)kind << 56) | ++h->next;
    j = slot_of(o->handle, h->cap);
    while (h->slots[j] && h->slots[j] != TOMBSTONE)
        j = (j + 1) & (h->cap - 1);
    if (h->slots[j] == TOMBSTONE)
        h->tomb--;
    h->slots[j] = o;
    h->used++;
    return o;
}

static size_t find(const struct ks_handles *h, uint64_t handle)
{
    if (!h->cap)
        return SIZE_MAX;
    for (size_t j = slot_of(handle, h->cap), n = 0; n < h->cap; j = (j + 1) & (h->cap - 1), n++) {
        struct ks_obj *o = h->slots[j];
        if (!o)
            return SIZE_MAX;
        if (o != TOMBSTONE && o->handle == handle)
            return j;
    }
    return SIZE_MAX;
}

struct ks_obj *ks_handle_get(const struct ks_handles *h, uint64_t handle, enum ks_kind kind)
{
    size_t j = find(h, handle);

    if (j == SIZE_MAX || h->slots[j]->kind != kind)
        return NULL;
    return h->slots[j];
}

void ks_handle_remove(struct ks_handles *h, uint64_t handle)
{
    size_t j = find(h, handle);

    if (j == SIZE_MAX)
        return;
    free(h->slots[j]);
    h->slots[j] = TOMBSTONE;
    h->used--;
    h->tomb++;
}

void ks_handle_each(struct ks_handles *h, void (*fn)(struct ks_obj *, void *), void *arg)
{
    for (size_t i = 0; i < h->cap; i++)
        if (live(h, i))
            fn(h->slots[i], arg);
}

uint64_t *ks_handle_select(const struct ks_handles *h,
                           bool (*pick)(const struct ks_obj *, const void *), const void *arg,
                           size_t *n)
{
    uint64_t *out = NULL;
    size_t k = 0;

    *n = 0;
    for (size_t i = 0; i < h->cap; i++)
        if (live(h, i) && pick(h->slots[i], arg))
            k++;
    if (k == 0 || !(out = malloc(k * sizeof(*out))))
        return NULL;
    for (size_t i = 0; i < h->cap; i++)
        if (live(h, i) && pick(h->slots[i], arg))
            out[(*n)++] = h->slots[i]->handle;
    return out;
}

void ks_handles_free(struct ks_handles *h)
{
    for (size_t i = 0; i < h->cap; i++)
        free(live(h, i));
    free(h->slots);
    h->slots = NULL;
    h->cap = h->used = h->tomb = 0;
}
