/* Which blocks of each launch (tag) the sim ran: ranges per tag, checked on demand. */
#include <stdlib.h>

#include "grow.h"
#include "sim_internal.h"

static size_t tag_slot(const ksim *s, uint64_t tag)
{
    size_t mask = s->cap_tags - 1;
    size_t i = (size_t)((tag * 0x9e3779b97f4a7c15ull) >> 17) & mask;
    while (s->tags[i].r && s->tags[i].tag != tag)
        i = (i + 1) & mask;
    return i;
}

static int tags_grow(ksim *s)
{
    size_t cap = s->cap_tags ? s->cap_tags * 2 : 1024;
    tag_ranges *old = s->tags;
    size_t old_cap = s->cap_tags;
    s->tags = calloc(cap, sizeof(*s->tags));
    if (!s->tags) {
        s->tags = old;
        return -1;
    }
    s->cap_tags = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].r)
            s->tags[tag_slot(s, old[i].tag)] = old[i];
    free(old);
    return 0;
}

int sim_coverage_add(ksim *s, uint64_t tag, uint64_t first, uint64_t count)
{
    if ((s->n_tags + 1) * 2 > s->cap_tags && tags_grow(s))
        return -1;
    tag_ranges *t = &s->tags[tag_slot(s, tag)];
    if (!t->r)
        s->n_tags++;
    if (grow_array(&t->r, &t->cap, t->n + 1, sizeof(*t->r)))
        return -1;
    t->tag = tag;
    t->r[t->n][0] = first;
    t->r[t->n][1] = count;
    t->n++;
    return 0;
}

void sim_coverage_free(ksim *s)
{
    for (size_t i = 0; i < s->cap_tags; i++)
        free(s->tags[i].r);
    free(s->tags);
    s->tags = NULL;
    s->cap_tags = s->n_tags = 0;
}

static int by_first(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

int ksim_coverage(const ksim *s, uint64_t tag, uint64_t total, ksim_coverage_result *out,
                  ksched_err *err)
{
    if (!s || !out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    *out = (ksim_coverage_result){0};
    if (!s->cap_tags || !s->tags[tag_slot(s, tag)].r) {
        out->missing = total;
        return 0;
    }
    const tag_ranges *t = &s->tags[tag_slot(s, tag)];
    uint64_t (*r)[2] = malloc(t->n * sizeof(*r));
    if (!r)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    for (size_t i = 0; i < t->n; i++) {
        r[i][0] = t->r[i][0];
        r[i][1] = t->r[i][1];
    }
    qsort(r, t->n, sizeof(*r), by_first);
    uint64_t covered_to = 0;    /* blocks [0, covered_to) are accounted for */
    for (size_t i = 0; i < t->n; i++) {
        uint64_t a = r[i][0], b = r[i][0] + r[i][1];
        uint64_t in_end = b < total ? b : total;
        if (b > total)
            out->outside += b - (a > total ? a : total);
        if (a >= in_end)
            continue;
        if (a > covered_to)
            out->missing += a - covered_to;
        uint64_t dup_end = covered_to < in_end ? covered_to : in_end;
        if (dup_end > a)
            out->duplicated += dup_end - a;
        if (in_end > covered_to) {
            out->ran += in_end - (a > covered_to ? a : covered_to);
            covered_to = in_end;
        }
    }
    if (total > covered_to)
        out->missing += total - covered_to;
    out->slices = t->n;
    free(r);
    return 0;
}
