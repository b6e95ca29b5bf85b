/* Registered host memory (cudaHostRegister): malloc'ed buffers registered, then copied to
 * and from (synchronously and asynchronously on a stream) around a kernel; registering
 * twice and unregistering what is not registered fail with CUDA's errors. Mapped
 * registration (kernels reading host memory) is tried as programs do: where the device
 * cannot map host memory it fails with cudaErrorNotSupported and the program falls back
 * to copies; where it works (a local GPU) the kernel reads host memory directly. */
#include "compat.h"

__global__ void affine(const int *in, int *out, int a, int b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * in[i] + b;
}

static void fill(int *v, int n, int seed)
{
    for (int i = 0; i < n; i++)
        v[i] = (i * seed) % 9973 - 5000;
}

static void verify(const int *in, const int *out, int a, int b, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        EXPECT(out[i] == a * in[i] + b, "%s: element %d = %d", what, i, out[i]);
}

/* Copies through registered buffers: synchronous, then asynchronous on a stream. */
static void copy_rounds(int *h_in, int *h_out, int *d_in, int *d_out, int n)
{
    size_t bytes = n * sizeof(int);
    int blocks = (n + 255) / 256;
    cudaStream_t s;

    fill(h_in, n, 7);
    CHECK(cudaMemcpy(d_in, h_in, bytes, cudaMemcpyHostToDevice));
    affine<<<blocks, 256>>>(d_in, d_out, 3, 1, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_out, d_out, bytes, cudaMemcpyDeviceToHost));
    verify(h_in, h_out, 3, 1, n, "sync");

    CHECK(cudaStreamCreate(&s));
    fill(h_in, n, 13);
    CHECK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, s));
    affine<<<blocks, 256, 0, s>>>(d_in, d_out, -2, 5, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    verify(h_in, h_out, -2, 5, n, "async");
    CHECK(cudaStreamDestroy(s));
}

/* Mapped registration: zero-copy where supported, else CUDA's not-supported error. */
static void mapped_or_fallback(int *d_out, int n)
{
    size_t bytes = n * sizeof(int);
    int *h = (int *)malloc(bytes), *h_out = (int *)malloc(bytes), *d_h = NULL, can_map = 0;

    CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
    fill(h, n, 29);
    cudaError_t e = cudaHostRegister(h, bytes, cudaHostRegisterMapped);
    if (e == cudaSuccess) {
        EXPECT(can_map, "mapped registration succeeded on a device that cannot map");
        CHECK(cudaHostGetDevicePointer((void **)&d_h, h, 0));
        affine<<<(n + 255) / 256, 256>>>(d_h, d_out, 5, -3, n);
        CHECK(cudaGetLastError());
        CHECK(cudaHostUnregister(h));
    } else {
        EXPECT(e == cudaErrorNotSupported, "mapped registration: %s", cudaGetErrorName(e));
        (void)cudaGetLastError();
        /* Not registered, so no device pointer either. */
        e = cudaHostGetDevicePointer((void **)&d_h, h, 0);
        EXPECT(e != cudaSuccess, "a device pointer for memory that is not mapped");
        (void)cudaGetLastError();
        int *d_in;
        CHECK(cudaMalloc((void **)&d_in, bytes));
        CHECK(cudaMemcpy(d_in, h, bytes, cudaMemcpyHostToDevice));
        affine<<<(n + 255) / 256, 256>>>(d_in, d_out, 5, -3, n);
        CHECK(cudaGetLastError());
        CHECK(cudaFree(d_in));
    }
    CHECK(cudaMemcpy(h_out, d_out, bytes, cudaMemcpyDeviceToHost));
    verify(h, h_out, 5, -3, n, e == cudaSuccess ? "mapped" : "fallback");
    free(h);
    free(h_out);
}

int main(void)
{
    const int n = 3 << 20; /* 12 MiB: more than one staging slot */
    size_t bytes = n * sizeof(int);
    int *h_in = (int *)malloc(bytes), *h_out = (int *)malloc(bytes), *d_in, *d_out;

    CHECK(cudaHostRegister(h_in, bytes, cudaHostRegisterDefault));
    CHECK(cudaHostRegister(h_out, bytes, cudaHostRegisterPortable));
    cudaError_t e = cudaHostRegister(h_in + 16, 4096, cudaHostRegisterDefault);
    EXPECT(e == cudaErrorHostMemoryAlreadyRegistered, "registering twice: %s",
           cudaGetErrorName(e));
    (void)cudaGetLastError();
    CHECK(cudaMalloc((void **)&d_in, bytes));
    CHECK(cudaMalloc((void **)&d_out, bytes));

    copy_rounds(h_in, h_out, d_in, d_out, n);

    CHECK(cudaHostUnregister(h_in));
    CHECK(cudaHostUnregister(h_out));
    e = cudaHostUnregister(h_in);
    EXPECT(e == cudaErrorHostMemoryNotRegistered, "unregistering twice: %s",
           cudaGetErrorName(e));
    (void)cudaGetLastError();

    mapped_or_fallback(d_out, 1 << 16);

    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    free(h_in);
    free(h_out);
    compat_pass("host_register");
    return 0;
}
