/* A tenant whose kernel writes outside its block's shared array (not a compatibility
 * program: natively it faults; tests/gpu/acceptance/contain.sh, tests/libcuda):
 *   smash past [BLOCKS]        every thread writes 1 MiB past its word of a 256-word
 *                              __shared__ array (natively an illegal address)
 *   smash misaligned [BLOCKS]  every thread writes 2 bytes past the start of its word
 *                              (natively a misaligned address)
 *   smash generic [BLOCKS]     as past, through a generic pointer (the compiler cannot
 *                              tell it is shared)
 *   smash cp_async [BLOCKS]    as past, through cp.async (sm_80): a 4-byte copy from the
 *                              thread's word of global memory to 1 MiB past its word of the
 *                              array (inline PTX; the fence clamps its destination too)
 *   smash ok [BLOCKS]          writes its own word: a correct kernel
 * The kernel then copies its array to global memory. Prints
 *   RESULT name=smash mode=MODE status=NAME verified=yes|no
 * verified: every block's array holds what the fence makes of the writes (each word its
 * thread's index, the last perhaps the stray write: the clamp puts it at the end of the
 * block's shared memory; misaligned: every word the stray write, aligned below). On the
 * GPU both faults are sticky and end the context: without the fence, one tenant's shared
 * memory bug ends every tenant's work. Exits 0 when the launch completed and verified. */
#include <string.h>

#include "compat.h"

enum { THREADS = 256 };
#define STRAY 0xdeadu

/* st.shared: the compiler knows the address is arr's */
__global__ void smash(unsigned *out, unsigned skew)
{
    __shared__ unsigned arr[THREADS];
    arr[threadIdx.x] = threadIdx.x;
    __syncthreads();
    *(volatile unsigned *)((char *)&arr[threadIdx.x] + skew) = STRAY;
    __syncthreads();
    out[blockIdx.x * THREADS + threadIdx.x] = arr[threadIdx.x];
}

/* st through a generic pointer: the compiler no longer knows it is shared */
__global__ void smash_generic(unsigned *out, unsigned skew)
{
    __shared__ unsigned arr[THREADS];
    arr[threadIdx.x] = threadIdx.x;
    __syncthreads();
    unsigned *p = (unsigned *)((char *)&arr[threadIdx.x] + skew);
    asm volatile("" : "+l"(p));
    *(volatile unsigned *)p = STRAY;
    __syncthreads();
    out[blockIdx.x * THREADS + threadIdx.x] = arr[threadIdx.x];
}

/* cp.async.ca.shared.global to &arr[i] + skew, from out[i] (STRAY, written first): an
 * asynchronous copy, not an st.shared (bench/compat/meson.build: compute_80) */
__global__ void smash_cp_async(unsigned *out, unsigned skew)
{
    __shared__ unsigned arr[THREADS];
    unsigned *src = &out[blockIdx.x * THREADS + threadIdx.x];
    *src = STRAY;
    arr[threadIdx.x] = threadIdx.x;
    __syncthreads();
    unsigned dst = (unsigned)__cvta_generic_to_shared(&arr[threadIdx.x]) + skew;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n\tcp.async.wait_all;"
                 :: "r"(dst), "l"(src) : "memory");
    __syncthreads();
    *src = arr[threadIdx.x];
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    unsigned blocks = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 528;
    unsigned skew = 0;
    if (!strcmp(mode, "past") || !strcmp(mode, "generic") || !strcmp(mode, "cp_async"))
        skew = 1u << 20;
    else if (!strcmp(mode, "misaligned"))
        skew = 2;
    else if (strcmp(mode, "ok")) {
        fprintf(stderr, "usage: smash past|misaligned|generic|cp_async|ok [BLOCKS]\n");
        return 2;
    }
    size_t words = (size_t)blocks * THREADS;
    unsigned *d, *h = (unsigned *)calloc(words, sizeof(unsigned));
    CHECK(cudaMalloc((void **)&d, words * sizeof(unsigned)));
    CHECK(cudaMemset(d, 0, words * sizeof(unsigned)));
    if (!strcmp(mode, "generic"))
        smash_generic<<<blocks, THREADS>>>(d, skew);
    else if (!strcmp(mode, "cp_async"))
        smash_cp_async<<<blocks, THREADS>>>(d, skew);
    else
        smash<<<blocks, THREADS>>>(d, skew);
    cudaError_t st = cudaDeviceSynchronize();
    bool ok = st == cudaSuccess &&
              cudaMemcpy(h, d, words * sizeof(unsigned), cudaMemcpyDeviceToHost) == cudaSuccess;
    for (size_t i = 0; ok && i < words; i++) {
        unsigned t = (unsigned)(i % THREADS);
        if (skew == 2)
            ok = h[i] == STRAY;
        else if (skew)
            ok = h[i] == t || (t == THREADS - 1 && h[i] == STRAY);
        else
            ok = h[i] == STRAY;
    }
    printf("RESULT name=smash mode=%s status=%s verified=%s\n", mode, cudaGetErrorName(st),
           ok ? "yes" : "no");
    return ok ? 0 : 1;
}
