/* Floating-point helpers shared by the handlers: register bits to and from IEEE values,
 * and the FPU rounding mode for the instructions that name one. */
#ifndef KERNELET_EMU_FP_H
#define KERNELET_EMU_FP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float emu_f32(uint64_t v)
{
    uint32_t b = (uint32_t)v;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static inline double emu_f64(uint64_t v)
{
    double f;
    memcpy(&f, &v, 8);
    return f;
}

static inline uint64_t emu_bits32(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static inline uint64_t emu_bits64(double f)
{
    uint64_t b;
    memcpy(&b, &f, 8);
    return b;
}

/* Sign-preserving zero for a single-precision subnormal (.ftz). */
static inline float emu_ftz32(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

/* Sets the FPU rounding for EMU_RND_RZ/RM/RP and returns the previous mode, or -1 and
 * changes nothing (round to nearest). emu_round_end(-1) does nothing. */
int emu_round_begin(unsigned rnd);
void emu_round_end(int old);

#endif
