/* What this GPU says about a block's shared memory, for the fence's clamp of shared
 * addresses (docs/SECURITY.md, "Memory fencing"; host-sched/ptx/fence_shared.c). Not a
 * compatibility program: run natively, not through kerneletd (which refuses kernels that
 * read %reserved_smem_offset_*); tests/gpu/acceptance/contain.sh prints what it says.
 *   smem_probe                 for 0 and 4096 bytes of dynamic shared memory, one line:
 *     SMEM dyn=D total_smem_size=.. dynamic_smem_size=.. reserved_begin=.. reserved_end=..
 *          reserved_cap=.. static_var=.. dynamic_array=.. fence_limit=.. window=..
 *          isshared(0)=.. isshared(limit+4096)=.. isshared(16M-4)=..
 *     (offsets in the block's shared window; fence_limit is what the fence computes: the
 *     dynamic array's offset plus %dynamic_smem_size; window: the generic address of
 *     shared offset 0)
 *   smem_probe touch OFFSET    writes and reads one word at shared offset OFFSET with 16
 *     bytes of static shared memory of its own, natively: TOUCH offset=.. status=..
 *     (a fault here ends only this process's context). The fence assumes every offset
 *     below fence_limit, the reserved region included when it lies below, is the
 *     block's: touch 0 must pass.
 * Exits 0 when every launch completed. */
#include <string.h>

#include "compat.h"

enum { WORDS = 16 };

extern __shared__ unsigned dyn[];

__global__ void probe(unsigned *out)
{
    __shared__ unsigned sv[8];
    unsigned total, dsize, rbegin, rend, rcap;
    asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(total));
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dsize));
    asm volatile("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(rbegin));
    asm volatile("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(rend));
    asm volatile("mov.u32 %0, %%reserved_smem_offset_cap;" : "=r"(rcap));
    sv[threadIdx.x & 7] = threadIdx.x;      /* sv is used: it is allocated */
    __syncthreads();
    if (threadIdx.x)
        return;
    unsigned sv_at = (unsigned)__cvta_generic_to_shared(sv);
    unsigned dyn_at = (unsigned)__cvta_generic_to_shared(dyn);
    unsigned limit = dyn_at + dsize;
    unsigned long long window = (unsigned long long)__cvta_shared_to_generic(0);
    out[0] = total;
    out[1] = dsize;
    out[2] = rbegin;
    out[3] = rend;
    out[4] = rcap;
    out[5] = sv_at;
    out[6] = dyn_at;
    out[7] = limit;
    out[8] = (unsigned)window;
    out[9] = (unsigned)(window >> 32);
    out[10] = __isShared((const void *)window);
    out[11] = __isShared(__cvta_shared_to_generic(limit + 4096));
    out[12] = __isShared(__cvta_shared_to_generic((16u << 20) - 4));
    out[13] = sv[7];
}

__global__ void touch(unsigned *out, unsigned off)
{
    __shared__ unsigned mine[4];
    unsigned v;
    mine[threadIdx.x & 3] = 1;
    asm volatile("st.shared.u32 [%1], %2;\n\tld.shared.u32 %0, [%1];"
                 : "=r"(v) : "r"(off), "r"(0x5a5a5a5au) : "memory");
    out[0] = v + mine[0] - 1;
}

int main(int argc, char **argv)
{
    unsigned *d, h[WORDS];
    CHECK(cudaMalloc((void **)&d, sizeof(h)));
    if (argc == 3 && !strcmp(argv[1], "touch")) {
        unsigned off = (unsigned)strtoul(argv[2], NULL, 0);
        touch<<<1, 1>>>(d, off);
        cudaError_t st = cudaDeviceSynchronize();
        memset(h, 0, sizeof(h));
        if (st == cudaSuccess)
            CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
        printf("TOUCH offset=%#x status=%s read=%#x\n", off, cudaGetErrorName(st), h[0]);
        return st == cudaSuccess && h[0] == 0x5a5a5a5au ? 0 : 1;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: smem_probe [touch OFFSET]\n");
        return 2;
    }
    const unsigned dyns[] = {0, 4096};
    for (unsigned i = 0; i < 2; i++) {
        memset(h, 0, sizeof(h));
        CHECK(cudaMemset(d, 0, sizeof(h)));
        probe<<<1, 32, dyns[i]>>>(d);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
        printf("SMEM dyn=%u total_smem_size=%#x dynamic_smem_size=%#x reserved_begin=%#x "
               "reserved_end=%#x reserved_cap=%#x static_var=%#x dynamic_array=%#x "
               "fence_limit=%#x window=%#llx isshared(0)=%u isshared(limit+4096)=%u "
               "isshared(16M-4)=%u\n",
               dyns[i], h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
               (unsigned long long)h[9] << 32 | h[8], h[10], h[11], h[12]);
    }
    return 0;
}
