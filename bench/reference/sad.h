/* Sum of absolute differences for motion estimation (as in MPEG encoders): for every 8x8
 * macroblock of the current frame and every displacement (dx, dy) in [-range, range]^2,
 * the SAD against the reference frame displaced by (dx, dy), reference pixels clamped at
 * the frame edges. Output sads[mb * npos + (dy + range) * (2 range + 1) + dx + range],
 * macroblocks in row-major order, npos = (2 range + 1)^2. Exact integer results. */
#ifndef BENCH_SAD_H
#define BENCH_SAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SAD_MB 8
#define SAD_BLOCK_THREADS 32 /* one warp per macroblock, as in the paper's configuration */
#define SAD_MAX_RANGE 16
#define SAD_DEFAULT_WIDTH 1920u /* 240 x 134 = 32160 macroblocks = thread blocks */
#define SAD_DEFAULT_HEIGHT 1072u
#define SAD_DEFAULT_RANGE 8u
#define SAD_SMALL_WIDTH 64u
#define SAD_SMALL_HEIGHT 32u
#define SAD_SMALL_RANGE 4u

static inline uint32_t sad_positions(uint32_t range)
{
    return (2 * range + 1) * (2 * range + 1);
}

/* Reference frame of random texture; the current frame is it moved by a fixed motion plus
 * noise, so each macroblock has a clear best match. */
void sad_generate(uint8_t *cur, uint8_t *ref, uint32_t width, uint32_t height, uint64_t seed);

/* width and height must be multiples of SAD_MB; sads holds macroblocks * npos entries. */
void sad_reference(const uint8_t *cur, const uint8_t *ref, uint32_t width, uint32_t height,
                   uint32_t range, uint32_t *sads);

/* SAD of the macroblock at (mbx, mby) displaced by (dx, dy). */
uint32_t sad_block(const uint8_t *cur, const uint8_t *ref, uint32_t width, uint32_t height,
                   uint32_t mbx, uint32_t mby, int dx, int dy);

#ifdef __cplusplus
}
#endif

#endif
