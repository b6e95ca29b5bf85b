/* Instruction-semantics tests: one PTX instruction (or a short sequence) runs in a
 * generated kernel over many random operand triples, and every result is compared with a
 * C computation of the same operation. */
#ifndef KERNELET_TESTS_EMU_OP_RUNNER_H
#define KERNELET_TESTS_EMU_OP_RUNNER_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* Input generators (what random operands look like). */
typedef enum op_gen {
    GEN_INT,      /* random bits of the operand's width, plus 0, 1, -1, min, max, small */
    GEN_SMALL,    /* 0..70: shift amounts, bit positions and lengths */
    GEN_FLOAT,    /* random bits, ordinary values, and 0, -0, inf, NaN, subnormals, 1, ... */
    GEN_POS,      /* like GEN_FLOAT, mostly positive ordinary values */
    GEN_ANGLE,    /* floats in [-100, 100] and specials */
    GEN_BOOL,     /* 0 or 1 */
    GEN_INTF,     /* floats near integers and halves, in and past integer ranges */
    GEN_POSLEN,   /* bfi position | length << 8, each 0..40 */
} op_gen;

/* Bodies may use scratch registers %u0..%u7 (.u32), %w0..%w3 (.u64), %p0..%p3 (.pred). */
typedef struct op_case {
    const char *name;        /* test path suffix */
    const char *body;        /* PTX using %a, %b, %c (sources) and %d (result) */
    const char *dt;          /* register types, ".u32" ...; NULL for an unused operand */
    const char *at, *bt, *ct;
    op_gen gen[3];
    /* The expected result bits (dt's width); or NULL and check instead. */
    uint64_t (*ref)(uint64_t a, uint64_t b, uint64_t c);
    /* Accepts a result (approximate instructions); with ref NULL. */
    bool (*check)(uint64_t a, uint64_t b, uint64_t c, uint64_t got);
} op_case;

/* Runs the case over random inputs on the emulator and asserts every result. */
void op_run(const op_case *c);

/* Registers every case as a test under prefix. */
void op_add_tests(const char *prefix, const op_case *cases, size_t n);

/* Float bits helpers for the references. */
static inline float fbits(uint64_t v)
{
    uint32_t b = (uint32_t)v;
    float f;
    __builtin_memcpy(&f, &b, 4);
    return f;
}

static inline double dbits(uint64_t v)
{
    double d;
    __builtin_memcpy(&d, &v, 8);
    return d;
}

static inline uint64_t bits_f(float f)
{
    uint32_t b;
    __builtin_memcpy(&b, &f, 4);
    return b;
}

static inline uint64_t bits_d(double d)
{
    uint64_t b;
    __builtin_memcpy(&b, &d, 8);
    return b;
}

#endif
