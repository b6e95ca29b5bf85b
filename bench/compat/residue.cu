/* A tenant that looks for what earlier kernels left in on-chip and local memory it never
 * wrote (not a compatibility program; tests/gpu/acceptance/contain.sh, tests/libcuda):
 *   residue plant [BLOCKS]   each thread fills its block's 40 KiB __shared__ array, a 4 KiB
 *                            local array and 32 registers with a secret (high half 0x5ec7)
 *   residue read [BLOCKS]    reads a 40 KiB __shared__ array, a 1 KiB local array and 32
 *                            registers, none of them written, and counts the words that
 *                            hold the secret
 *   residue both [BLOCKS]    plant, then read, in one process (natively: one context)
 *   residue both-below [BLOCKS]  as both, and the read also counts the secrets in the 3 KiB
 *                            of local memory below its array (a deeper stack's leftovers;
 *                            an access there may fault where the thread's local memory is
 *                            smaller: run it natively)
 *   residue local-past [BLOCKS]  read, and a store and load 1 MiB past the local array
 *                            (what the GPU does with a local access out of bounds)
 *   residue frame [BLOCKS]   reads, before writing any of it, its thread's whole frame
 *                            word by word, from its stack pointer (stacksave) to the local
 *                            top: ptxas's spill area (64 values live in 32 registers), none
 *                            of it a variable PTX names; counts the secrets, the nonzero
 *                            words and the words read
 *   residue both-frame [BLOCKS]  plant, then frame, in one process
 * Prints
 *   RESULT name=residue mode=MODE status=NAME shared=N local=N below=N regs=N frame=N
 *          frame_nonzero=N frame_words=N
 * (words holding the secret; status is the launch's). Exits 0 when the launches completed
 * and no secret was found in shared or local memory, below the frame or in it included
 * (what kerneletd's fence promises: a block's shared memory and an entry's whole frame are
 * zeroed before the tenant's code runs, and local addresses are clamped into the thread's
 * own frames, so that the store past the array lands there too), and the frame modes read
 * some words; 1 otherwise. Registers are reported, not judged (docs/SECURITY.md). */
#include <string.h>

#include "compat.h"

enum { THREADS = 256, SMEM_WORDS = 10240, PLANT_LOCAL = 1024, READ_LOCAL = 256,
       BELOW = 768, REGS = 32 };
#define SECRET 0x5ec70000u
#define IS_SECRET(v) (((v) >> 16) == (SECRET >> 16))

__global__ void plant(unsigned *sink)
{
    __shared__ unsigned arr[SMEM_WORDS];
    volatile unsigned loc[PLANT_LOCAL];
    for (unsigned i = threadIdx.x; i < SMEM_WORDS; i += blockDim.x)
        ((volatile unsigned *)arr)[i] = SECRET | i;
    for (unsigned i = 0; i < PLANT_LOCAL; i++)
        loc[i] = SECRET | i;
    /* 32 secrets live at once, so that they sit in registers until the sum */
    unsigned r[REGS], acc = 0;
#pragma unroll
    for (int i = 0; i < REGS; i++)
        asm volatile("mov.b32 %0, %1;" : "=r"(r[i]) : "r"(SECRET | (threadIdx.x + i)));
#pragma unroll
    for (int i = 0; i < REGS; i++)
        acc ^= r[i];
    __syncthreads();
    if (acc == 1u && loc[threadIdx.x % PLANT_LOCAL] == arr[threadIdx.x])
        sink[0] = acc;     /* never: keeps the stores */
}

__device__ unsigned undefined_register(void)
{
    unsigned v;
    asm volatile("{ .reg .b32 u; mov.b32 %0, u; }" : "=r"(v));
    return v;
}

enum { READ_BELOW = 1, READ_PAST = 2, READ_FRAME = 4 };

/* Where a thread's frames start: an entry without locals has its stack pointer there, on
 * the H100 and the H200 (kbackend_device_info.local_top) and in the emulator
 * (KEMU_LOCAL_TOP). */
#define LOCAL_TOP 0xfffdc0ull
enum { SPILLED = 64, COUNTS = 8 };

/* A callee with a local array: in the emulator, which lays out every function's locals in
 * the entry's frame, words of the frame the entry does not name (on a GPU its frame lies
 * below the entry's). */
__device__ __noinline__ unsigned frame_callee(unsigned seed)
{
    volatile unsigned pad[32];
    for (unsigned i = 0; i < 32; i++)
        pad[i] = seed ^ i;
    return pad[seed & 31];
}

/* Reads [stack pointer, LOCAL_TOP) before writing it: counts[4] the secrets, counts[5] the
 * nonzero words, counts[6] the words. Then 64 values loaded in order (volatile: neither
 * reloaded nor recomputed) and used in reverse live in 32 registers, so that ptxas gives
 * the frame a spill area that PTX does not name (sm_90: 156 bytes of a 288-byte frame). */
__global__ void __maxnreg__(32) read_frame(unsigned *counts)
{
    unsigned long long sp;
    asm volatile("stacksave.u64 %0;" : "=l"(sp));
    unsigned secret = 0, nonzero = 0, words = 0;
    for (unsigned long long a = sp & ~3ull; a < LOCAL_TOP; a += 4, words++) {
        unsigned v;
        asm volatile("ld.local.u32 %0, [%1];" : "=r"(v) : "l"(a));
        secret += IS_SECRET(v);
        nonzero += v != 0;
    }
    const unsigned *src = counts + COUNTS;     /* zeros */
    unsigned r[SPILLED], acc = 0;
#pragma unroll
    for (int i = 0; i < SPILLED; i++)         /* in this order (asm volatile) */
        asm volatile("ld.volatile.u32 %0, [%1];" : "=r"(r[i]) : "l"(src + i % COUNTS));
#pragma unroll
    for (int i = SPILLED - 1; i >= 0; i--)      /* the last loaded first: all live at once */
        acc = ((acc ^ r[i]) * 0x9e3779b1u) ^ (acc >> 7);
    acc += frame_callee(threadIdx.x);
    if (acc == 1u)
        counts[7] = acc;    /* never (src holds zeros: acc is threadIdx.x & ~31) */
    atomicAdd(&counts[4], secret);
    atomicAdd(&counts[5], nonzero);
    atomicAdd(&counts[6], words);
}

__global__ void read(unsigned *counts, int how)
{
    __shared__ unsigned arr[SMEM_WORDS];
    volatile unsigned loc[READ_LOCAL];
    unsigned shared = 0, local = 0, below = 0, regs = 0;
    for (unsigned i = threadIdx.x; i < SMEM_WORDS; i += blockDim.x)
        shared += IS_SECRET(((volatile unsigned *)arr)[i]);
    for (unsigned i = 0; i < READ_LOCAL; i++)
        local += IS_SECRET(loc[i]);
    if (how & READ_BELOW) {    /* where a deeper stack of an earlier kernel was */
        volatile unsigned *low = loc;
        asm volatile("" : "+l"(low));
        for (int i = 1; i <= BELOW; i++)
            below += IS_SECRET(low[-i]);
    }
    for (int i = 0; i < REGS; i++)
        regs += IS_SECRET(undefined_register());
    if (how & READ_PAST) {     /* 1 MiB past the array: out of the thread's local memory */
        volatile unsigned *far = loc;
        asm volatile("" : "+l"(far));
        far[1u << 18] = 1;
        local += far[1u << 18] != 1;
    }
    atomicAdd(&counts[0], shared);
    atomicAdd(&counts[1], local);
    atomicAdd(&counts[2], below);
    atomicAdd(&counts[3], regs);
}

static cudaError_t run_plant(unsigned blocks, unsigned *d)
{
    plant<<<blocks, THREADS>>>(d);
    return cudaDeviceSynchronize();
}

static cudaError_t run_read(unsigned blocks, unsigned *d, int how, unsigned *h)
{
    cudaError_t st = cudaMemset(d, 0, 2 * COUNTS * sizeof(unsigned));
    if (st != cudaSuccess)
        return st;
    if (how & READ_FRAME)
        read_frame<<<blocks, THREADS>>>(d);
    else
        read<<<blocks, THREADS>>>(d, how);
    st = cudaDeviceSynchronize();
    if (st == cudaSuccess)
        st = cudaMemcpy(h, d, COUNTS * sizeof(unsigned), cudaMemcpyDeviceToHost);
    return st;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    unsigned blocks = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 528;
    bool do_plant = !strcmp(mode, "plant") || !strncmp(mode, "both", 4);
    bool do_read = strcmp(mode, "plant") != 0;
    int how = !strcmp(mode, "both-below") ? READ_BELOW
              : !strcmp(mode, "local-past") ? READ_PAST
              : !strcmp(mode, "frame") || !strcmp(mode, "both-frame") ? READ_FRAME : 0;
    if (!do_plant && strcmp(mode, "read") && !how) {
        fprintf(stderr, "usage: residue plant|read|both|both-below|local-past|frame|both-frame"
                        " [BLOCKS]\n");
        return 2;
    }
    unsigned *d, h[COUNTS] = {0};
    CHECK(cudaMalloc((void **)&d, 2 * COUNTS * sizeof(unsigned)));
    cudaError_t st = do_plant ? run_plant(blocks, d) : cudaSuccess;
    if (st == cudaSuccess && do_read)
        st = run_read(blocks, d, how, h);
    printf("RESULT name=residue mode=%s status=%s shared=%u local=%u below=%u regs=%u frame=%u"
           " frame_nonzero=%u frame_words=%u\n", mode, cudaGetErrorName(st), h[0], h[1], h[2],
           h[3], h[4], h[5], h[6]);
    bool frame_read = !(how & READ_FRAME) || h[6] != 0;    /* not a vacuous pass */
    return st == cudaSuccess && h[0] == 0 && h[1] == 0 && h[2] == 0 && h[4] == 0 && frame_read
               ? 0 : 1;
}
