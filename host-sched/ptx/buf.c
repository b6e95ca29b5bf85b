/* Growable memory: a NUL-terminated text buffer whose allocation failure is sticky (oom)
 * so that callers check once at the end, and arrays that double. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

bool kptx_grow_array(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
    void **p = v;
    if (n < *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : first;
    if (ncap > SIZE_MAX / size)
        return false;
    void *np = realloc(*p, ncap * size);
    if (!np)
        return false;
    *p = np;
    *cap = ncap;
    return true;
}

bool kptx_buf_grow(kptx_buf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->cap - b->len > extra)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len <= extra) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void kptx_buf_printf(kptx_buf *b, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        kptx_buf_put(b, small, (size_t)n);
        return;
    }
    if (!kptx_buf_grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}
