/* SAD reference; see sad.h. */
#include "sad.h"
#include "bench_rng.h"

static int sad_clamp(int v, int hi)
{
    return v < 0 ? 0 : v > hi ? hi : v;
}

void sad_generate(uint8_t *cur, uint8_t *ref, uint32_t width, uint32_t height, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x736164); /* "sad" */
    for (size_t i = 0; i < (size_t)width * height; i++)
        ref[i] = (uint8_t)bench_rng_u32(&r);
    for (uint32_t y = 0; y < height; y++)
        for (uint32_t x = 0; x < width; x++) {
            int sx = sad_clamp((int)x + 3, (int)width - 1), sy = sad_clamp((int)y - 2, (int)height - 1);
            int v = ref[(size_t)sy * width + sx] + (int)bench_rng_below(&r, 7) - 3;
            cur[(size_t)y * width + x] = (uint8_t)sad_clamp(v, 255);
        }
}

uint32_t sad_block(const uint8_t *cur, const uint8_t *ref, uint32_t width, uint32_t height,
                   uint32_t mbx, uint32_t mby, int dx, int dy)
{
    uint32_t s = 0;
    for (int py = 0; py < SAD_MB; py++)
        for (int px = 0; px < SAD_MB; px++) {
            int x = (int)mbx * SAD_MB + px, y = (int)mby * SAD_MB + py;
            int rx = sad_clamp(x + dx, (int)width - 1), ry = sad_clamp(y + dy, (int)height - 1);
            int d = (int)cur[(size_t)y * width + x] - (int)ref[(size_t)ry * width + rx];
            s += (uint32_t)(d < 0 ? -d : d);
        }
    return s;
}

void sad_reference(const uint8_t *cur, const uint8_t *ref, uint32_t width, uint32_t height,
                   uint32_t range, uint32_t *sads)
{
    uint32_t mbw = width / SAD_MB, mbh = height / SAD_MB, npos = sad_positions(range);
    int rg = (int)range;
    for (uint32_t mby = 0; mby < mbh; mby++)
        for (uint32_t mbx = 0; mbx < mbw; mbx++) {
            uint32_t *out = sads + ((size_t)mby * mbw + mbx) * npos;
            for (int dy = -rg; dy <= rg; dy++)
                for (int dx = -rg; dx <= rg; dx++)
                    *out++ = sad_block(cur, ref, width, height, mbx, mby, dx, dy);
        }
}
