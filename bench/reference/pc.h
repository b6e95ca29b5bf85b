/* Pointer chasing: CPU reference and input generator.
 *
 * The input is an array next[] of n = 2^bits indices that forms one cycle through all n
 * elements in a seeded pseudo-random order: position p of the cycle holds element h(p),
 * where h is a bijection of [0, n) built from odd multiplications and xor-shifts, and
 * next[h(p)] = h(p + 1). Thread t starts at element t mod n and follows next[] `steps`
 * times, so its answer is h(h^-1(t mod n) + steps): the reference costs O(1) per thread
 * and no memory, however large the array. pc_chase does the same walk through memory. */
#ifndef BENCH_PC_H
#define BENCH_PC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PC_BLOCK_THREADS 256
#define PC_DEFAULT_BITS 26 /* 2^26 indices: 256 MiB, five times an H100's L2 */
#define PC_DEFAULT_THREADS (256u * 16384u)
#define PC_DEFAULT_STEPS 16
#define PC_SMALL_BITS 14
#define PC_SMALL_THREADS 4096u
#define PC_SMALL_STEPS 4
#define PC_MIN_BITS 4
#define PC_MAX_BITS 30

typedef struct {
    unsigned bits;
    uint32_t mask, add, m1, m2, m1_inv, m2_inv;
    unsigned shift;
} pc_perm;

/* Seeds the bijection of [0, 2^bits); bits must be in PC_MIN_BITS..PC_MAX_BITS. */
void pc_perm_init(pc_perm *p, unsigned bits, uint64_t seed);
uint32_t pc_perm_apply(const pc_perm *p, uint32_t x);
uint32_t pc_perm_invert(const pc_perm *p, uint32_t y);

/* Fills next[0 .. 2^bits) so that it is one cycle in the order of p. */
void pc_generate(uint32_t *next, const pc_perm *p);

/* Where thread t ends: the element `steps` hops after t mod 2^bits. */
uint32_t pc_expected(const pc_perm *p, uint32_t t, uint32_t steps);

/* Expected outputs of n_threads threads. */
void pc_reference(const pc_perm *p, uint32_t steps, uint32_t *out, size_t n_threads);

/* The walk itself through next[], as the kernel does it (for tests). */
uint32_t pc_walk(const uint32_t *next, uint32_t mask, uint32_t t, uint32_t steps);

#ifdef __cplusplus
}
#endif

#endif
