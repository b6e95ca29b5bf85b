/* Device printf records to text (printf_records.h). The conversions and where their values
 * lie come from the same walker the rewriting pass used to size each record
 * (kptx_printf_next), so reader and writer cannot disagree on an offset; each conversion
 * is then rebuilt as a host format of known shape (flags, clamped width and precision,
 * a host length modifier) and given a value of the matching C type. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "le_bytes.h"
#include "printf_records.h"

/* Width and precision larger than this are clamped (a tenant's format must not make the
 * library build gigabytes of padding). */
#define MAX_FIELD 4096

static bool out_grow(struct kcu_pf_out *o, size_t extra)
{
    if (o->oom)
        return false;
    if (o->cap - o->len > extra)
        return true;
    size_t cap = o->cap ? o->cap : 256;
    while (cap - o->len <= extra)
        cap *= 2;
    char *p = realloc(o->p, cap);
    if (!p) {
        o->oom = true;
        return false;
    }
    o->p = p;
    o->cap = cap;
    return true;
}

static void out_put(struct kcu_pf_out *o, const char *s, size_t n)
{
    if (!out_grow(o, n))
        return;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

/* Appends text of the format, where "%%" is one '%'. */
static void out_text(struct kcu_pf_out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out_put(o, s + i, 1);
        if (s[i] == '%' && i + 1 < n && s[i + 1] == '%')
            i++;
    }
}

/* Appends what the host's printf makes of spec (one conversion) and its value. */
static void out_fmt(struct kcu_pf_out *o, const char *spec, ...)
{
    va_list ap;
    va_start(ap, spec);
    int n = vsnprintf(NULL, 0, spec, ap);
    va_end(ap);
    if (n < 0 || !out_grow(o, (size_t)n))
        return;
    va_start(ap, spec);
    vsnprintf(o->p + o->len, (size_t)n + 1, spec, ap);
    va_end(ap);
    o->len += (size_t)n;
}

/* A literal width or precision in the spec's text at *i (clamped). */
static int literal(const char *s, size_t end, size_t *i)
{
    int v = 0;
    for (; *i < end && s[*i] >= '0' && s[*i] <= '9'; (*i)++)
        v = v >= MAX_FIELD ? MAX_FIELD : v * 10 + (s[*i] - '0');
    return v > MAX_FIELD ? MAX_FIELD : v;
}

static int clamp_field(int32_t v)
{
    return v > MAX_FIELD ? MAX_FIELD : v < -MAX_FIELD ? -MAX_FIELD : v;
}

/* The host format of conversion sp: "%" flags width "." precision host-length conv. */
static void host_spec(const char *fmt, const kptx_printf_spec *sp, const uint8_t *args,
                      char *spec, size_t cap)
{
    size_t i = sp->start + 1, end = sp->start + sp->len, k = 0;
    char flags[8];
    while (i < end && strchr("-+ #0", fmt[i]) && k < 5)
        flags[k++] = fmt[i++];
    while (i < end && strchr("-+ #0", fmt[i]))
        i++;                                            /* repeated flags: once is enough */
    int width = sp->star_width ? clamp_field((int32_t)kcu_le32(args + sp->width_off))
                               : literal(fmt, end, &i);
    if (sp->star_width)
        i++;
    if (width < 0) {                                    /* C: a negative '*' width is '-' */
        flags[k++] = '-';
        width = -width;
    }
    flags[k] = '\0';
    int prec = -1;
    if (sp->has_prec) {
        i++;
        prec = sp->star_prec ? clamp_field((int32_t)kcu_le32(args + sp->prec_off))
                             : literal(fmt, end, &i);
    }
    bool wide_int = sp->size == 8 && strchr("diuxXo", sp->conv);
    int n = snprintf(spec, cap, "%%%s", flags);
    if (width)
        n += snprintf(spec + n, cap - (size_t)n, "%d", width);
    if (prec >= 0)
        n += snprintf(spec + n, cap - (size_t)n, ".%d", prec);
    snprintf(spec + n, cap - (size_t)n, "%s%c", wide_int ? "ll" : "", sp->conv);
}

/* The %s argument's text into buf. */
static const char *string_arg(uint64_t addr, kcu_pf_read_text read, void *user, char *buf)
{
    if (!addr)
        return "(null)";
    if (!read || !read(user, addr, false, buf, KCU_PF_MAX_STRING))
        return "(unreadable)";
    return buf;
}

/* One conversion's value, formatted. */
static void convert(const char *fmt, const kptx_printf_spec *sp, const uint8_t *args,
                    kcu_pf_read_text read, void *user, struct kcu_pf_out *out)
{
    char spec[64];
    host_spec(fmt, sp, args, spec, sizeof spec);
    uint64_t v = sp->size == 8 ? kcu_le64(args + sp->value_off) : kcu_le32(args + sp->value_off);
    char c = sp->conv;
    if (strchr("di", c)) {
        long long s = sp->size == 8 ? (long long)(int64_t)v : (long long)(int32_t)v;
        s = sp->length == 'h' ? (short)s : sp->length == 'H' ? (signed char)s : s;
        out_fmt(out, spec, s);
    } else if (strchr("uxXo", c)) {
        unsigned long long u = v;
        u = sp->length == 'h' ? (unsigned short)u : sp->length == 'H' ? (unsigned char)u : u;
        if (sp->size == 8)
            out_fmt(out, spec, u);
        else
            out_fmt(out, spec, (unsigned)u);
    } else if (c == 'c') {
        out_fmt(out, spec, (int)(int32_t)v);
    } else if (strchr("fFeEgGaA", c)) {
        double d;
        memcpy(&d, &v, sizeof d);
        out_fmt(out, spec, d);
    } else if (c == 's') {
        char *buf = malloc(KCU_PF_MAX_STRING);
        out_fmt(out, spec, buf ? string_arg(v, read, user, buf) : "(unreadable)");
        free(buf);
    } else if (c == 'p') {
        out_fmt(out, spec, (void *)(uintptr_t)v);
    }
}

void kcu_pf_format(const char *fmt, const uint8_t *args, size_t n, kcu_pf_read_text read,
                   void *user, struct kcu_pf_out *out)
{
    size_t len = strlen(fmt), pos = 0, text = 0;
    uint32_t bytes = 0;
    kptx_printf_spec sp;
    int rc;
    while ((rc = kptx_printf_next(fmt, len, &pos, &bytes, &sp)) == 1) {
        out_text(out, fmt + text, sp.start - text);
        text = sp.start + sp.len;
        if (bytes > n)
            out_put(out, fmt + sp.start, sp.len);
        else
            convert(fmt, &sp, args, read, user, out);
    }
    /* the text after the last conversion, or from a conversion the walker refused on */
    out_text(out, fmt + text, (rc < 0 ? len : pos) - text);
}

void kcu_pf_walk_records(const uint8_t *data, size_t len, kcu_pf_read_text read, void *user,
                         struct kcu_pf_out *out, struct kcu_pf_walk *res)
{
    const size_t head = KPTX_PRINTF_RECORD_HEADER;
    char *fmt = malloc(KCU_PF_MAX_FORMAT);
    size_t o = 0;
    memset(res, 0, sizeof *res);
    while (fmt && len - o >= head) {
        uint32_t total = kcu_le32(data + o), argb = kcu_le32(data + o + 4);
        if (total == 0)
            break;                                      /* reserved, not yet written */
        if (total < head || total % 8 || total > len - o || argb > total - head) {
            res->malformed = true;
            break;
        }
        if (read && read(user, kcu_le64(data + o + 8), true, fmt, KCU_PF_MAX_FORMAT)) {
            kcu_pf_format(fmt, data + o + head, argb, read, user, out);
            res->records++;
        } else {
            res->unreadable++;
        }
        o += total;
    }
    res->consumed = o;
    free(fmt);
}
