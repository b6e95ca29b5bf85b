/* Address windows of domains (include/kernelet/executor.h): one span of device addresses
 * cut into equal, size-aligned windows, each given to one domain at a time. A released
 * window is given out again only after every other window was used once since, so a
 * stale pointer of a tenant that left reaches memory of another tenant as late as it can
 * (the addresses are fenced, never checked: reuse is the only way across). */
#include <stdlib.h>

#include "kernelet/executor.h"

#define MAX_WINDOWS 65536u

struct kbackend_windows {
    uint64_t base, size;
    unsigned n, next;       /* windows; where the search for a free one starts */
    uint32_t *owner;        /* domain + 1 holding each window, 0 = free */
};

int kbackend_window_size_valid(uint64_t size)
{
    return size >= KBACKEND_WINDOW_MIN && size <= KBACKEND_WINDOW_MAX && !(size & (size - 1));
}

uint64_t kbackend_window_mask(const kbackend_window *w)
{
    uint64_t r = w->reach;
    return (r && r <= w->size && !(r & (r - 1)) ? r : w->size) - 1;
}

int kbackend_windows_new(uint64_t span_base, uint64_t span_size, uint64_t window_size,
                         kbackend_windows **out, kbackend_error *err)
{
    if (!out || !kbackend_window_size_valid(window_size) || span_base % window_size ||
        span_size < window_size)
        return kbackend_fail(err, KBACKEND_EINVAL, "window size %llu does not fit a span of "
                             "%llu bytes at 0x%llx", (unsigned long long)window_size,
                             (unsigned long long)span_size, (unsigned long long)span_base);
    kbackend_windows *w = calloc(1, sizeof *w);
    uint64_t n = span_size / window_size;
    n = n > MAX_WINDOWS ? MAX_WINDOWS : n;
    if (w)
        w->owner = calloc(n, sizeof *w->owner);
    if (!w || !w->owner) {
        kbackend_windows_free(w);
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
    }
    w->base = span_base;
    w->size = window_size;
    w->n = (unsigned)n;
    *out = w;
    return 0;
}

void kbackend_windows_free(kbackend_windows *w)
{
    if (!w)
        return;
    free(w->owner);
    free(w);
}

static int find(const kbackend_windows *w, uint32_t owner)
{
    for (unsigned i = 0; i < w->n; i++)
        if (w->owner[(w->next + i) % w->n] == owner)
            return (int)((w->next + i) % w->n);
    return -1;
}

int kbackend_windows_get(kbackend_windows *w, uint32_t domain, kbackend_window *out,
                         kbackend_error *err)
{
    if (!w || !out || domain == UINT32_MAX)
        return kbackend_fail(err, KBACKEND_EINVAL, "bad window request");
    int i = find(w, domain + 1);
    if (i < 0 && (i = find(w, 0)) >= 0) {
        w->owner[i] = domain + 1;
        w->next = ((unsigned)i + 1) % w->n;
    }
    if (i < 0)
        return kbackend_fail(err, KBACKEND_EDEVMEM, "all %u address windows are taken", w->n);
    *out = (kbackend_window){.base = w->base + (uint64_t)i * w->size, .size = w->size};
    return 0;
}

void kbackend_windows_release(kbackend_windows *w, uint32_t domain)
{
    int i = w && domain != UINT32_MAX ? find(w, domain + 1) : -1;
    if (i >= 0)
        w->owner[i] = 0;
}
