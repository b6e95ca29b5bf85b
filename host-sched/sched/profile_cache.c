/* The profile cache: kernel identity (module hash, entry) -> kbackend_profile. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "profile.h"

typedef struct {
    uint64_t module_hash;
    char *entry;
    kbackend_profile p;
} record;

struct ksched_profile_cache {
    record *recs;
    size_t n, cap;
    int32_t *slots;       /* open addressing: record index + 1, 0 = empty */
    size_t nslots;        /* power of two */
};

uint64_t ksched_hash(const void *data, size_t len)
{
    const unsigned char *b = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h ? h : 1;
}

static int in_unit(double v)
{
    return isfinite(v) && v >= 0 && v <= 1;
}

int ksched_profile_validate(const kbackend_profile *p, ksched_err *err)
{
    if (!p)
        return ksched_fail(err, KSCHED_EINVAL, "no profile");
    if (!in_unit(p->pur) || !in_unit(p->mur))
        return ksched_fail(err, KSCHED_EINVAL, "pur and mur must be in [0, 1]");
    if (!in_unit(p->rm))
        return ksched_fail(err, KSCHED_EINVAL, "rm must be in [0, 1]");
    if (!in_unit(p->uncoalesced))
        return ksched_fail(err, KSCHED_EINVAL, "uncoalesced fraction must be in [0, 1]");
    if (!isfinite(p->insts_per_warp) || p->insts_per_warp <= 0 || p->insts_per_warp > 1e12)
        return ksched_fail(err, KSCHED_EINVAL, "instructions per warp must be in (0, 1e12]");
    if (p->warps_per_block > 32 || p->regs_per_thread > 255 || p->smem_per_block > (1u << 20))
        return ksched_fail(err, KSCHED_EINVAL,
                           "warps per block (<= 32), registers (<= 255) or shared memory "
                           "(<= 1 MiB) out of range");
    if (p->min_slice_blocks > (1ull << 40) || p->blocks_done > (1ull << 40))
        return ksched_fail(err, KSCHED_EINVAL, "block counts out of range");
    return 0;
}

int ksched_entry_validate(const char *name, ksched_err *err)
{
    if (!name || !*name)
        return ksched_fail(err, KSCHED_EINVAL, "empty entry name");
    size_t len = strlen(name);
    if (len > KSCHED_ENTRY_MAX)
        return ksched_fail(err, KSCHED_EINVAL, "entry name longer than %d characters",
                           KSCHED_ENTRY_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        int alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
                    ch == '$' || (i == 0 && ch == '%');
        if (!alpha && !(i > 0 && ch >= '0' && ch <= '9'))
            return ksched_fail(err, KSCHED_EINVAL, "entry name has an invalid character at %zu",
                               i);
    }
    return 0;
}

int ksched_profile_cache_new(ksched_profile_cache **out, ksched_err *err)
{
    if (!out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : ksched_fail(err, KSCHED_ENOMEM, "out of memory");
}

void ksched_profile_cache_free(ksched_profile_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->recs[i].entry);
    free(c->recs);
    free(c->slots);
    free(c);
}

static uint64_t key_hash(uint64_t module_hash, const char *entry)
{
    return ksched_hash(entry, strlen(entry)) ^ (module_hash * 0x9e3779b97f4a7c15ull);
}

/* The slot holding (module_hash, entry), or the empty slot where it would go. */
static size_t find_slot(const ksched_profile_cache *c, uint64_t module_hash, const char *entry)
{
    size_t mask = c->nslots - 1;
    size_t i = (size_t)key_hash(module_hash, entry) & mask;
    for (;;) {
        int32_t s = c->slots[i];
        if (!s)
            return i;
        const record *r = &c->recs[s - 1];
        if (r->module_hash == module_hash && !strcmp(r->entry, entry))
            return i;
        i = (i + 1) & mask;
    }
}

static int grow_slots(ksched_profile_cache *c)
{
    size_t n = c->nslots ? c->nslots * 2 : 64;
    int32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return KSCHED_ENOMEM;
    free(c->slots);
    c->slots = slots;
    c->nslots = n;
    for (size_t r = 0; r < c->n; r++)
        c->slots[find_slot(c, c->recs[r].module_hash, c->recs[r].entry)] = (int32_t)(r + 1);
    return 0;
}

int ksched_profile_cache_put(ksched_profile_cache *c, uint64_t module_hash, const char *entry,
                             const kbackend_profile *p, ksched_err *err)
{
    if (!c)
        return ksched_fail(err, KSCHED_EINVAL, "NULL cache");
    int rc = ksched_entry_validate(entry, err);
    if (rc)
        return rc;
    if ((rc = ksched_profile_validate(p, err)))
        return rc;
    if ((c->n + 1) * 2 > c->nslots && grow_slots(c))
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    size_t slot = find_slot(c, module_hash, entry);
    if (c->slots[slot]) {
        c->recs[c->slots[slot] - 1].p = *p;
        return 0;
    }
    if (grow_array(&c->recs, &c->cap, c->n + 1, sizeof(*c->recs)))
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    char *copy = strdup(entry);
    if (!copy)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    c->recs[c->n] = (record){.module_hash = module_hash, .entry = copy, .p = *p};
    c->slots[slot] = (int32_t)(++c->n);
    return 0;
}

const kbackend_profile *ksched_profile_cache_get(const ksched_profile_cache *c,
                                              uint64_t module_hash, const char *entry)
{
    if (!c || !entry || !c->nslots)
        return NULL;
    int32_t s = c->slots[find_slot(c, module_hash, entry)];
    if (!s && module_hash)
        s = c->slots[find_slot(c, 0, entry)];
    return s ? &c->recs[s - 1].p : NULL;
}

size_t ksched_profile_cache_count(const ksched_profile_cache *c)
{
    return c ? c->n : 0;
}

const kbackend_profile *ksched_profile_cache_at(const ksched_profile_cache *c, size_t i,
                                             const char **entry, uint64_t *module_hash)
{
    if (!c || i >= c->n)
        return NULL;
    if (entry)
        *entry = c->recs[i].entry;
    if (module_hash)
        *module_hash = c->recs[i].module_hash;
    return &c->recs[i].p;
}
