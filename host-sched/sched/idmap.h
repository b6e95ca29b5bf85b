/* A small map from 32-bit ids to pointers (open addressing), for handles. */
#ifndef KERNELET_SCHED_IDMAP_H
#define KERNELET_SCHED_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct idmap {
    uint32_t *keys;
    void **vals;        /* NULL = empty slot; a removed slot holds the tombstone */
    size_t cap, used, live;
} idmap;

/* The value of id, or NULL. */
void *idmap_get(const idmap *m, uint32_t id);
/* Stores val (not NULL) for id, replacing; 0 or -1 when out of memory. */
int idmap_put(idmap *m, uint32_t id, void *val);
/* Removes id (no effect when absent). */
void idmap_del(idmap *m, uint32_t id);
/* Calls fn for every entry; fn must not change the map. */
void idmap_each(const idmap *m, void (*fn)(uint32_t id, void *val, void *user), void *user);
void idmap_free(idmap *m);

#endif
