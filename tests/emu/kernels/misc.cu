// Calls, local memory, divergent loops, module variables, special registers
// (tests/emu/test_emu_kernels.c).

struct pair { int a; float b; long long c; };

__device__ __noinline__ long long combine(pair p, int k)
{
    return p.c * k + p.a + (long long)p.b;
}

__device__ __noinline__ int twice(int x)
{
    return x * 2;
}

__device__ __noinline__ int chain(int x)
{
    return twice(x) + twice(x + 1);
}

extern "C" __global__ void calls(const int *in, long long *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    pair p = {v, 0.5f * (float)(v & 7), (long long)v * 3};
    long long r = combine(p, t);
    if (v & 1)   // divergent call
        r += chain(v);
    out[t] = r;
}

extern "C" __global__ void local_array(const int *in, int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    volatile int a[16];
    for (int i = 0; i < 16; i++)
        a[i] = in[t] * i + i;
    out[t] = a[in[t] & 15];
}

// Per-lane loop counts: Collatz steps.
extern "C" __global__ void collatz(const unsigned *in, unsigned *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = in[t];
    unsigned steps = 0;
    while (x > 1 && steps < 1000) {
        x = (x & 1) ? 3 * x + 1 : x / 2;
        steps++;
    }
    out[t] = steps;
}

__constant__ int table[4] = {10, 20, 30, 40};
__constant__ float scale;
__device__ int bias = 7;

extern "C" __global__ void module_vars(const int *in, float *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = (float)(table[in[t] & 3] + bias) * scale;
}

extern "C" __global__ void sregs(unsigned *out)
{
    unsigned x = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned t = b * blockDim.x * blockDim.y * blockDim.z + x;
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[4 * t + 0] = threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16;
    out[4 * t + 1] = blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16;
    out[4 * t + 2] = blockDim.x | blockDim.y << 8 | blockDim.z << 16 | gridDim.x << 24;
    out[4 * t + 3] = lane | gridDim.y << 8 | gridDim.z << 16;
}

// Generic pointers into local and shared memory, passed to a function that cannot know
// which space they point to.
__device__ __noinline__ int sum_array(const int *p, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += p[i];
    return s;
}

extern "C" __global__ void generic_pointers(const int *in, int *out)
{
    __shared__ int tile[64];
    extern __shared__ int dyn[];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int a[8];
    for (int i = 0; i < 8; i++)
        a[i] = in[t] + i;
    tile[threadIdx.x] = in[t] * 3;
    dyn[threadIdx.x] = in[t] * 5;
    __syncthreads();
    const int *from_shared = &tile[threadIdx.x & ~7];
    const int *from_dyn = &dyn[threadIdx.x & ~3];
    out[t] = sum_array(a, 8) + sum_array(from_shared, 8) + sum_array(from_dyn, 4) +
             sum_array(in + (t & ~1), 2);
}

// Recursion with a different depth in every lane, and mutual recursion.
__device__ __noinline__ unsigned fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ int is_odd(unsigned n);

__device__ __noinline__ int is_even(unsigned n)
{
    return n == 0 ? 1 : is_odd(n - 1);
}

__device__ __noinline__ int is_odd(unsigned n)
{
    return n == 0 ? 0 : is_even(n - 1);
}

extern "C" __global__ void recursion(const unsigned *in, unsigned *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned n = in[t] % 16;
    out[2 * t] = fib(n);
    out[2 * t + 1] = is_even(in[t] % 100);
}

// Calls through pointers: a table of functions (a different target in each lane) and
// virtual functions.
typedef unsigned (*op_fn)(unsigned);
__device__ __noinline__ unsigned op_double(unsigned x) { return 2 * x; }
__device__ __noinline__ unsigned op_square(unsigned x) { return x * x; }
__device__ __noinline__ unsigned op_step(unsigned x) { return (x & 1) ? 3 * x + 1 : x / 2; }
__device__ op_fn ops_table[3] = {op_double, op_square, op_step};

struct shape {
    __device__ virtual float area(float s) const = 0;
};
struct square : shape {
    __device__ float area(float s) const override { return s * s; }
};
struct circle : shape {
    __device__ float area(float s) const override { return 3.0f * s * s; }
};

__device__ __noinline__ float area_of(const shape *sh, float s)
{
    return sh->area(s);
}

extern "C" __global__ void pointers(const unsigned *in, unsigned *out, float *areas)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    op_fn f = ops_table[in[t] % 3];
    out[t] = f(in[t]);
    square sq;
    circle ci;
    const shape *sh = (in[t] & 4) ? (const shape *)&sq : (const shape *)&ci;
    areas[t] = area_of(sh, (float)(in[t] % 10));
}
