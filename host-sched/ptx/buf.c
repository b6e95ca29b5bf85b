/* A growable NUL-terminated text buffer; allocation failure is sticky (oom) so that
 * callers check once at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

static bool buf_reserve(kptx_buf *b, size_t extra)
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

void kptx_buf_put(kptx_buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void kptx_buf_puts(kptx_buf *b, const char *s)
{
    kptx_buf_put(b, s, strlen(s));
}

void kptx_buf_putc(kptx_buf *b, char c)
{
    if (!buf_reserve(b, 1))
        return;
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
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
    if (!buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}
