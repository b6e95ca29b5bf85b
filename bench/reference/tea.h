/* Tiny Encryption Algorithm (Wheeler and Needham, 1994): CPU reference and input generator.
 * One 64-bit block is two 32-bit words; the key is four words; 32 cycles (64 Feistel rounds). */
#ifndef BENCH_TEA_H
#define BENCH_TEA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEA_DELTA 0x9E3779B9u
#define TEA_CYCLES 32
#define TEA_BLOCK_THREADS 128
#define TEA_DEFAULT_BLOCKS (1u << 22) /* 64-bit blocks: 32 MiB, 32768 thread blocks */
#define TEA_SMALL_BLOCKS 4096u

void tea_encrypt_block(uint32_t v[2], const uint32_t key[4]);
void tea_decrypt_block(uint32_t v[2], const uint32_t key[4]);

/* Fills n_blocks plaintext blocks (2 words each) and the key from seed. */
void tea_generate(uint32_t *data, size_t n_blocks, uint32_t key[4], uint64_t seed);

/* Encrypts n_blocks blocks of in into out. */
void tea_reference(const uint32_t *in, uint32_t *out, size_t n_blocks, const uint32_t key[4]);

#ifdef __cplusplus
}
#endif

#endif
