/* Pointer-chasing reference; see pc.h. */
#include "pc.h"
#include "bench_rng.h"

/* Inverse of an odd number modulo 2^32 (Newton's iteration doubles the correct bits). */
static uint32_t pc_odd_inverse(uint32_t m)
{
    uint32_t inv = m; /* correct to 3 bits for odd m */
    for (int i = 0; i < 5; i++)
        inv *= 2u - m * inv;
    return inv;
}

/* Inverse of y = x ^ (x >> s) on values below 2^bits. */
static uint32_t pc_unxorshift(uint32_t y, unsigned s, unsigned bits)
{
    uint32_t x = y;
    for (unsigned t = s; t < bits; t += s)
        x = y ^ (x >> s);
    return x;
}

void pc_perm_init(pc_perm *p, unsigned bits, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x7063); /* "pc" */
    p->bits = bits;
    p->mask = bits >= 32 ? 0xffffffffu : (1u << bits) - 1;
    p->shift = (bits + 1) / 2;
    p->add = bench_rng_u32(&r) & p->mask;
    p->m1 = bench_rng_u32(&r) | 1u;
    p->m2 = bench_rng_u32(&r) | 1u;
    p->m1_inv = pc_odd_inverse(p->m1);
    p->m2_inv = pc_odd_inverse(p->m2);
}

uint32_t pc_perm_apply(const pc_perm *p, uint32_t x)
{
    x = (x + p->add) & p->mask;
    x = (x * p->m1) & p->mask;
    x ^= x >> p->shift;
    x = (x * p->m2) & p->mask;
    x ^= x >> p->shift;
    x = (x * p->m1) & p->mask;
    return x;
}

uint32_t pc_perm_invert(const pc_perm *p, uint32_t y)
{
    y = (y * p->m1_inv) & p->mask;
    y = pc_unxorshift(y, p->shift, p->bits);
    y = (y * p->m2_inv) & p->mask;
    y = pc_unxorshift(y, p->shift, p->bits);
    y = (y * p->m1_inv) & p->mask;
    return (y - p->add) & p->mask;
}

void pc_generate(uint32_t *next, const pc_perm *p)
{
    /* Walk the cycle in position order: one evaluation of h per element. */
    uint32_t cur = pc_perm_apply(p, 0);
    for (uint64_t pos = 1; pos <= (uint64_t)p->mask + 1; pos++) {
        uint32_t succ = pc_perm_apply(p, (uint32_t)pos & p->mask);
        next[cur] = succ;
        cur = succ;
    }
}

uint32_t pc_expected(const pc_perm *p, uint32_t t, uint32_t steps)
{
    uint32_t pos = pc_perm_invert(p, t & p->mask);
    return pc_perm_apply(p, (pos + steps) & p->mask);
}

void pc_reference(const pc_perm *p, uint32_t steps, uint32_t *out, size_t n_threads)
{
    for (size_t t = 0; t < n_threads; t++)
        out[t] = pc_expected(p, (uint32_t)t, steps);
}

uint32_t pc_walk(const uint32_t *next, uint32_t mask, uint32_t t, uint32_t steps)
{
    uint32_t i = t & mask;
    for (uint32_t s = 0; s < steps; s++)
        i = next[i];
    return i;
}
