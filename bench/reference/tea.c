/* TEA reference; see tea.h. */
#include "tea.h"
#include "bench_rng.h"

void tea_encrypt_block(uint32_t v[2], const uint32_t key[4])
{
    uint32_t v0 = v[0], v1 = v[1], sum = 0;
    for (int i = 0; i < TEA_CYCLES; i++) {
        sum += TEA_DELTA;
        v0 += ((v1 << 4) + key[0]) ^ (v1 + sum) ^ ((v1 >> 5) + key[1]);
        v1 += ((v0 << 4) + key[2]) ^ (v0 + sum) ^ ((v0 >> 5) + key[3]);
    }
    v[0] = v0;
    v[1] = v1;
}

void tea_decrypt_block(uint32_t v[2], const uint32_t key[4])
{
    uint32_t v0 = v[0], v1 = v[1], sum = TEA_DELTA * TEA_CYCLES;
    for (int i = 0; i < TEA_CYCLES; i++) {
        v1 -= ((v0 << 4) + key[2]) ^ (v0 + sum) ^ ((v0 >> 5) + key[3]);
        v0 -= ((v1 << 4) + key[0]) ^ (v1 + sum) ^ ((v1 >> 5) + key[1]);
        sum -= TEA_DELTA;
    }
    v[0] = v0;
    v[1] = v1;
}

void tea_generate(uint32_t *data, size_t n_blocks, uint32_t key[4], uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x746561); /* "tea" */
    for (int i = 0; i < 4; i++)
        key[i] = bench_rng_u32(&r);
    for (size_t i = 0; i < 2 * n_blocks; i++)
        data[i] = bench_rng_u32(&r);
}

void tea_reference(const uint32_t *in, uint32_t *out, size_t n_blocks, const uint32_t key[4])
{
    for (size_t i = 0; i < n_blocks; i++) {
        uint32_t v[2] = {in[2 * i], in[2 * i + 1]};
        tea_encrypt_block(v, key);
        out[2 * i] = v[0];
        out[2 * i + 1] = v[1];
    }
}
