/* MRI-Q ComputeQ: one thread per voxel sums |phi|^2 e^{i 2 pi k.x} over all k-space
 * samples (read by all threads at once: broadcast from cache). A sine and a cosine per
 * sample and almost no DRAM traffic: compute-bound. */
#ifndef BENCH_KERNEL_MRIQ_CUH
#define BENCH_KERNEL_MRIQ_CUH

extern "C" __global__ void mriq_computeq(const float *x, const float *y, const float *z,
                                         const float4 *kv, float *qr, float *qi,
                                         unsigned num_k, unsigned num_x)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_x)
        return;
    float xi = x[i], yi = y[i], zi = z[i], re = 0.0f, im = 0.0f;
    for (unsigned k = 0; k < num_k; k++) {
        float4 v = kv[k]; /* kx, ky, kz, |phi|^2 */
        float arg = 6.2831853071795865f * (v.x * xi + v.y * yi + v.z * zi);
        float s, c;
        sincosf(arg, &s, &c);
        re += v.w * c;
        im += v.w * s;
    }
    qr[i] = re;
    qi[i] = im;
}

#endif
