/* A map from 32-bit ids to pointers: linear probing with tombstones. */
#include <stdlib.h>

#include "idmap.h"

static char tombstone;
#define TOMB ((void *)&tombstone)

static size_t home(uint32_t id, size_t cap)
{
    return (size_t)((id * 2654435761u) ^ (id >> 16)) & (cap - 1);
}

void *idmap_get(const idmap *m, uint32_t id)
{
    if (!m->cap)
        return NULL;
    for (size_t i = home(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i])
            return NULL;
        if (m->vals[i] != TOMB && m->keys[i] == id)
            return m->vals[i];
    }
}

static int rehash(idmap *m, size_t cap)
{
    uint32_t *keys = calloc(cap, sizeof(*keys));
    void **vals = calloc(cap, sizeof(*vals));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i] || m->vals[i] == TOMB)
            continue;
        size_t j = home(m->keys[i], cap);
        while (vals[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    m->used = m->live;
    return 0;
}

int idmap_put(idmap *m, uint32_t id, void *val)
{
    if ((m->used + 1) * 2 > m->cap &&
        rehash(m, m->live * 4 > m->cap ? (m->cap ? m->cap * 2 : 16) : (m->cap ? m->cap : 16)))
        return -1;
    size_t free_slot = (size_t)-1;
    for (size_t i = home(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i]) {
            size_t at = free_slot != (size_t)-1 ? free_slot : i;
            if (at == i)
                m->used++;
            m->keys[at] = id;
            m->vals[at] = val;
            m->live++;
            return 0;
        }
        if (m->vals[i] == TOMB) {
            if (free_slot == (size_t)-1)
                free_slot = i;
        } else if (m->keys[i] == id) {
            m->vals[i] = val;
            return 0;
        }
    }
}

void idmap_del(idmap *m, uint32_t id)
{
    if (!m->cap)
        return;
    for (size_t i = home(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i])
            return;
        if (m->vals[i] != TOMB && m->keys[i] == id) {
            m->vals[i] = TOMB;
            m->live--;
            return;
        }
    }
}

void idmap_each(const idmap *m, void (*fn)(uint32_t id, void *val, void *user), void *user)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i] && m->vals[i] != TOMB)
            fn(m->keys[i], m->vals[i], user);
}

void idmap_free(idmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->used = m->live = 0;
}
