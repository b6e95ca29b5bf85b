/* Half-precision formats (IEEE binary16 and bfloat16) to and from double, with the four
 * IEEE rounding directions done in software: exact, and independent of the FPU mode.
 * NaN results are the GPU's canonical 0x7fff. */
#include "emu_internal.h"

#include <math.h>

typedef struct small_format {
    int ebits, mbits;
} small_format;

static const small_format fmt_f16 = {5, 10}, fmt_bf16 = {8, 7};

static uint16_t encode(double x, unsigned rnd, small_format f)
{
    const int bias = (1 << (f.ebits - 1)) - 1, emin = 1 - bias, emax = bias;
    const uint16_t exp_all = (uint16_t)((1u << f.ebits) - 1);
    const uint16_t sign = signbit(x) ? (uint16_t)(1u << (f.ebits + f.mbits)) : 0;
    if (isnan(x))
        return 0x7fff;
    double a = fabs(x);
    const uint16_t inf = sign | (uint16_t)(exp_all << f.mbits);
    const uint16_t maxf = sign | (uint16_t)((exp_all - 1u) << f.mbits) |
                          (uint16_t)((1u << f.mbits) - 1);
    bool up_dir = rnd == EMU_RND_RP ? !sign : rnd == EMU_RND_RM ? sign != 0 : false;
    bool overflow_inf = rnd == EMU_RND_RZ ? false : rnd == EMU_RND_RN || rnd == EMU_RND_NONE
                                                        ? true
                                                        : up_dir;
    if (isinf(a))
        return inf;
    if (a == 0.0)
        return sign;
    int e;
    frexp(a, &e);
    e -= 1;   /* a = 1.m * 2^e */
    int qexp = (e < emin ? emin : e) - f.mbits;
    double q = ldexp(a, -qexp);    /* exact: a power-of-two scaling */
    double n = floor(q), frac = q - n;
    bool inc;
    switch (rnd) {
    case EMU_RND_RZ: inc = false; break;
    case EMU_RND_RM: case EMU_RND_RP: inc = frac > 0.0 && up_dir; break;
    default: inc = frac > 0.5 || (frac == 0.5 && fmod(n, 2.0) != 0.0); break;
    }
    if (inc)
        n += 1.0;
    double v = ldexp(n, qexp);
    if (v >= ldexp(2.0, emax) || e > emax)
        return overflow_inf ? inf : maxf;
    if (v < ldexp(1.0, emin))   /* subnormal (or rounded up to the smallest normal) */
        return sign | (uint16_t)n;
    int ve;
    frexp(v, &ve);
    ve -= 1;
    uint16_t mant = (uint16_t)(ldexp(v, f.mbits - ve) - ldexp(1.0, f.mbits));
    return sign | (uint16_t)((unsigned)(ve + bias) << f.mbits) | mant;
}

static double decode(uint16_t h, small_format f)
{
    const int bias = (1 << (f.ebits - 1)) - 1;
    const unsigned exp_all = (1u << f.ebits) - 1;
    unsigned sign = (h >> (f.ebits + f.mbits)) & 1u;
    unsigned ex = (h >> f.mbits) & exp_all;
    unsigned mant = h & ((1u << f.mbits) - 1);
    double v;
    if (ex == exp_all)
        v = mant ? NAN : INFINITY;
    else if (ex == 0)
        v = ldexp((double)mant, 1 - bias - f.mbits);
    else
        v = ldexp((double)(mant | (1u << f.mbits)), (int)ex - bias - f.mbits);
    return sign ? -v : v;
}

uint16_t emu_f64_to_f16(double x, unsigned rnd)
{
    return encode(x, rnd, fmt_f16);
}

double emu_f16_to_f64(uint16_t h)
{
    return decode(h, fmt_f16);
}

uint16_t emu_f64_to_bf16(double x, unsigned rnd)
{
    return encode(x, rnd, fmt_bf16);
}

double emu_bf16_to_f64(uint16_t h)
{
    return decode(h, fmt_bf16);
}
