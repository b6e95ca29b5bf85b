// Atomics on global and shared memory (tests/emu/test_emu_kernels.c).

extern "C" __global__ void atomic_ops(const int *in, int *c, float *fsum, unsigned long long *u64,
                                      double *dsum, int *olds)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    atomicAdd(&c[0], v);
    atomicMax(&c[1], v);
    atomicMin(&c[2], v);
    atomicInc((unsigned *)&c[3], 100u);
    atomicAnd(&c[4], v | 0x0f0f0f0f);
    atomicOr(&c[5], v & 0x00ff00ff);
    atomicXor(&c[6], v);
    atomicExch(&c[7], v);
    olds[t] = atomicAdd(&c[8], 1);
    atomicDec((unsigned *)&c[9], 7u);
    atomicAdd(fsum, (float)(v & 15));
    atomicAdd(u64, (unsigned long long)(unsigned)v);
    atomicAdd(dsum, (double)(v & 255));
    // maximum through a compare-and-swap loop
    int old = c[10], assumed;
    do {
        assumed = old;
        old = atomicCAS(&c[10], assumed, assumed > v ? assumed : v);
    } while (assumed != old);
}

extern "C" __global__ void shared_histogram(const int *in, int *hist)
{
    __shared__ int h[16];
    if (threadIdx.x < 16)
        h[threadIdx.x] = 0;
    __syncthreads();
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&h[in[t] & 15], 1);
    __syncthreads();
    if (threadIdx.x < 16)
        atomicAdd(&hist[threadIdx.x], h[threadIdx.x]);
}

// A lock taken by every thread in turn, lanes of one warp included: needs forward progress
// for the lane holding the lock while its neighbours spin (independent thread scheduling).
__device__ int lock_word;
__device__ volatile int guarded;

extern "C" __global__ void spin_lock(int *out)
{
    bool done = false;
    while (!done) {
        if (atomicCAS(&lock_word, 0, 1) == 0) {
            guarded = guarded + 1;
            __threadfence();
            atomicExch(&lock_word, 0);
            done = true;
        }
    }
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0)
        out[0] = 1;
}

// The textbook lock: losers spin at the loop head (below the holder's pc), so the holder
// only runs if the scheduler lets other groups of the warp make progress.
__device__ volatile int guarded2;

extern "C" __global__ void spin_lock_naive(void)
{
    while (atomicCAS(&lock_word, 0, 1) != 0)
        ;
    guarded2 = guarded2 + 1;
    __threadfence();
    atomicExch(&lock_word, 0);
}
