/* The conversions of a device printf format string and where their values lie in the
 * argument buffer CUDA's vprintf receives (kernelet/ptx.h, "Device printf"). nvcc packs
 * the arguments after C's default promotions, each at its natural alignment: char, short
 * and int as 4 bytes; long, long long, size_t, pointers and %s as 8 (64-bit code); float
 * and double as an 8-byte double. Shared by the rewriting pass (which copies that many
 * bytes) and the guest library (which formats them), so both agree on every offset. */
#include <string.h>

#include "kernelet/ptx.h"

static bool is_flag(char c)
{
    return c == '-' || c == '+' || c == ' ' || c == '#' || c == '0';
}

/* Reserves size bytes at the next multiple of size. */
static uint32_t take(uint32_t *bytes, uint32_t size)
{
    uint32_t off = (*bytes + size - 1) & ~(size - 1);
    *bytes = off + size;
    return off;
}

/* Digits or '*' of a width or precision at *i; *star when '*'. */
static void number(const char *f, size_t len, size_t *i, bool *star)
{
    if (*i < len && f[*i] == '*') {
        *star = true;
        (*i)++;
        return;
    }
    while (*i < len && f[*i] >= '0' && f[*i] <= '9')
        (*i)++;
}

/* The length modifier at *i: how many bytes an integer conversion's value takes. */
static unsigned length_of(const char *f, size_t len, size_t *i, char *mod)
{
    *mod = 0;
    if (*i >= len)
        return 4;
    char c = f[*i];
    if (c == 'h') {
        *mod = (*i + 1 < len && f[*i + 1] == 'h') ? 'H' : 'h';
        *i += *mod == 'H' ? 2 : 1;
        return 4;
    }
    if (c == 'l') {
        *mod = (*i + 1 < len && f[*i + 1] == 'l') ? 'q' : 'l';
        *i += *mod == 'q' ? 2 : 1;
        return 8;
    }
    if (c == 'z' || c == 'j' || c == 't' || c == 'L') {
        *mod = c;
        (*i)++;
        return 8;
    }
    return 4;
}

/* The value's size of conversion c with integer size isize, 0 when c is unknown. */
static unsigned value_size(char c, unsigned isize)
{
    if (!c)
        return 0;       /* strchr would find the terminator */
    if (strchr("diuxXoc", c))
        return c == 'c' ? 4 : isize;
    if (strchr("fFeEgGaA", c))
        return 8;
    if (c == 's' || c == 'p')
        return 8;
    return 0;
}

int kptx_printf_next(const char *fmt, size_t len, size_t *pos, uint32_t *bytes,
                     kptx_printf_spec *spec)
{
    size_t i = *pos;
    while (i < len && fmt[i] && !(fmt[i] == '%' && !(i + 1 < len && fmt[i + 1] == '%'))) {
        i += fmt[i] == '%' ? 2 : 1;     /* "%%" is text */
    }
    if (i >= len || !fmt[i]) {
        *pos = i;
        return 0;
    }
    memset(spec, 0, sizeof *spec);
    spec->start = (uint32_t)i++;
    while (i < len && is_flag(fmt[i]))
        i++;
    number(fmt, len, &i, &spec->star_width);
    if (i < len && fmt[i] == '.') {
        i++;
        spec->has_prec = true;
        number(fmt, len, &i, &spec->star_prec);
    }
    unsigned isize = length_of(fmt, len, &i, &spec->length);
    spec->conv = i < len ? fmt[i] : 0;
    spec->size = (uint8_t)value_size(spec->conv, isize);
    if (!spec->size || (spec->length == 'L' && !strchr("fFeEgGaA", spec->conv)) ||
        (spec->length && strchr("sp", spec->conv)))
        return KPTX_EUNSUPPORTED;
    spec->len = (uint32_t)(i + 1 - spec->start);
    if (spec->star_width)
        spec->width_off = take(bytes, 4);
    if (spec->star_prec)
        spec->prec_off = take(bytes, 4);
    spec->value_off = take(bytes, spec->size);
    *pos = i + 1;
    return 1;
}

int kptx_printf_layout_of(const char *fmt, size_t len, uint32_t *bytes, unsigned *n_args)
{
    size_t pos = 0;
    uint32_t b = 0;
    unsigned n = 0;
    kptx_printf_spec s;
    int rc;

    if (!fmt || !bytes)
        return KPTX_EINVAL;
    while ((rc = kptx_printf_next(fmt, len, &pos, &b, &s)) == 1) {
        n += 1u + s.star_width + s.star_prec;
        if (n > KPTX_PRINTF_MAX_ARGS)
            return KPTX_ELIMIT;
    }
    if (rc < 0)
        return rc;
    *bytes = b;
    if (n_args)
        *n_args = n;
    return 0;
}
