/* Kernel profiles by kernel identity (library kernelet-sched).
 *
 * The scheduler needs each kernel's characteristics (kbackend_profile: PUR, MUR, Rm, ...)
 * before it can pair it. A profile is found by kernel identity: the 64-bit hash of the
 * module's PTX text (ksched_hash) and the entry name. On a miss the scheduler asks the
 * backend's profile op (CUPTI on the GPU; the sim answers from its data file) and stores the
 * answer here. Profiles read from a data file have module hash 0 and match the entry in any
 * module.
 *
 * Data file format (text, one record per line, '#' starts a comment):
 *
 *   profile entry=tea_encrypt rm=0.0089 insts=343.3 pur=0.755 mur=0.215 unc=0 wpb=4 regs=16 smem=0 min_slice=0
 *
 * entry, rm and insts are required; module (the module hash in hex, as
 * ksched_profile_cache_save writes learned profiles) limits the record to that module; pur, mur, unc (uncoalesced fraction), wpb (warps per
 * block), regs, smem (static bytes) and min_slice (blocks; 0 = derive from the 2% rule)
 * default to 0. Every value is range-checked; a bad line fails the whole file with its
 * line number.
 */
#ifndef KERNELET_SCHED_PROFILE_H
#define KERNELET_SCHED_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"
#include "sched_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest entry name accepted: the mangled names of templated kernels (PyTorch's) run to
 * thousands of characters; the wire protocol allows KERNELET_MAX_SYMBOL (4096). */
#define KSCHED_ENTRY_MAX 4095

typedef struct ksched_profile_cache ksched_profile_cache;

/* FNV-1a 64-bit hash of len bytes; the module identity. Never returns 0. */
uint64_t ksched_hash(const void *data, size_t len);

/* 0 when p is a usable profile, else KSCHED_EINVAL with the reason in err. */
int ksched_profile_validate(const kbackend_profile *p, ksched_err *err);

/* 0 when name is a valid PTX identifier of at most KSCHED_ENTRY_MAX characters. */
int ksched_entry_validate(const char *name, ksched_err *err);

int ksched_profile_cache_new(ksched_profile_cache **out, ksched_err *err);
void ksched_profile_cache_free(ksched_profile_cache *c);

/* Stores (a copy of) p for (module_hash, entry), replacing an older one. */
int ksched_profile_cache_put(ksched_profile_cache *c, uint64_t module_hash, const char *entry,
                             const kbackend_profile *p, ksched_err *err);

/* The profile of (module_hash, entry), else of (0, entry), else NULL. The pointer stays
 * valid until the next put or free. */
const kbackend_profile *ksched_profile_cache_get(const ksched_profile_cache *c,
                                              uint64_t module_hash, const char *entry);

/* Number of profiles held. */
size_t ksched_profile_cache_count(const ksched_profile_cache *c);

/* Entry name and profile of record i (< count), in insertion order; NULL when out of range. */
const kbackend_profile *ksched_profile_cache_at(const ksched_profile_cache *c, size_t i,
                                             const char **entry, uint64_t *module_hash);

/* Parses a data file's text (len bytes) into c, with module hash 0 unless a record names
 * its module. Nothing is added when any line is bad. */
int ksched_profile_parse(ksched_profile_cache *c, const char *text, size_t len,
                         ksched_err *err);

/* Reads and parses the file at path (at most 16 MiB). */
int ksched_profile_load_file(ksched_profile_cache *c, const char *path, ksched_err *err);

/* Writes the data-file line of (module_hash, entry, p) into buf, with a newline (module_hash
 * 0: no module key); returns the length snprintf would have written (>= buflen: truncated). */
int ksched_profile_format(uint64_t module_hash, const char *entry, const kbackend_profile *p,
                          char *buf, size_t buflen);

/* Writes every record of c to the file at path (replaced whole, never left half written),
 * in the data-file format with module hashes, so that a later start can load them. */
int ksched_profile_cache_save(const ksched_profile_cache *c, const char *path, ksched_err *err);

#ifdef __cplusplus
}
#endif

#endif
