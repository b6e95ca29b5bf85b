/* Loaded modules by content (host-sched/backends/cuda/, plain C, no Driver API).
 *
 * Tenants load the same PTX again and again (every process of a program, every VM running
 * it). The backend compiles a text once: it keeps what it loaded under the text's hash
 * (ksched_hash, the scheduler's module identity) with a count of holders, compares the
 * whole text on a hash match, and unloads only when the last holder lets go. The payload
 * is the caller's (the backend's module record); the cache never frees it.
 *
 * A module that defines module-scope variables (__device__, __constant__) is private: each
 * load is one tenant's and its variables must be its own, so such a payload is recorded
 * (for kcuda_module_cache_hash and _release) but never handed out again by _acquire.
 */
#ifndef KERNELET_CUDA_MODULE_CACHE_H
#define KERNELET_CUDA_MODULE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kcuda_module_cache kcuda_module_cache;

int kcuda_module_cache_new(kcuda_module_cache **out, kbackend_error *err);

/* Frees the cache (not the payloads; take them out with kcuda_module_cache_at first). */
void kcuda_module_cache_free(kcuda_module_cache *c);

/* The payload cached for these len bytes of text, with one more holder; NULL when none. */
void *kcuda_module_cache_acquire(kcuda_module_cache *c, const char *text, size_t len);

/* Caches payload (not NULL, not cached yet) for the text, with one holder. */
int kcuda_module_cache_add(kcuda_module_cache *c, const char *text, size_t len, void *payload,
                           kbackend_error *err);

/* As kcuda_module_cache_add, but shared == 0 records a private payload: one holder, never
 * returned by kcuda_module_cache_acquire (another load of the same text gets its own). */
int kcuda_module_cache_add_shared(kcuda_module_cache *c, const char *text, size_t len,
                                  void *payload, int shared, kbackend_error *err);

/* 1 when payload is cached and shared, 0 when private or not cached. */
int kcuda_module_cache_shared(const kcuda_module_cache *c, const void *payload);

/* One holder of payload lets go: the holders left (0: it left the cache, the caller frees
 * the payload), or KBACKEND_EINVAL when the payload is not cached. */
int kcuda_module_cache_release(kcuda_module_cache *c, void *payload, kbackend_error *err);

/* Number of texts cached, and the payload of entry i (< count) or NULL. */
size_t kcuda_module_cache_count(const kcuda_module_cache *c);
void *kcuda_module_cache_at(const kcuda_module_cache *c, size_t i);

/* The text hash of a cached payload (0 when not cached). */
uint64_t kcuda_module_cache_hash(const kcuda_module_cache *c, const void *payload);

#ifdef __cplusplus
}
#endif

#endif
