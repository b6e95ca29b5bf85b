// model-mem-probe: measures on the GPU the memory figures the performance model uses as
// L0 (unloaded latency of a global load that misses the caches, in SM cycles) and a0 (the
// fraction of peak DRAM bandwidth a streaming kernel achieves). See docs/MODEL.md.
//
// Latency: one thread follows a random cyclic chain of pointers, one per 128-byte line,
// with loads that bypass L1 (ld.global.cg); clock64() around a run of dependent loads
// gives cycles per load. A chain of 4 MiB stays in L2; one of 1 GiB (beyond the 50 MB L2)
// goes to DRAM. Bandwidth: a grid-stride read of 2 GiB of 16-byte vectors, timed with
// CUDA events, median of 9 runs.
//
// Usage: model-mem-probe [peak_GB/s]   (default 3350, the H100 SXM). Prints key=value lines.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(call)                                                                 \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "model-mem-probe: %s: %s\n", #call, cudaGetErrorString(e_)); \
            exit(e_ == cudaErrorNoDevice || e_ == cudaErrorInsufficientDriver ? 77 : 1); \
        }                                                                           \
    } while (0)

static const size_t kLine = 128;  // bytes between chain elements

__global__ void chase(const uint64_t *chain, uint64_t start, long steps, uint64_t *out,
                      long long *cycles)
{
    uint64_t p = start;
    // warm the TLB and caches along a short prefix, then time
    for (int i = 0; i < 64; i++)
        p = __ldcg(chain + p);
    long long t0 = clock64();
    for (long i = 0; i < steps; i++)
        p = __ldcg(chain + p);
    long long t1 = clock64();
    *out = p;
    *cycles = t1 - t0;
}

__global__ void stream_read(const uint4 *in, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(in + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)  // practically never; keeps the loads alive
        *sink = acc;
}

// Cycles per dependent load over a chain spanning bytes.
static double chase_cycles(size_t bytes, long steps)
{
    size_t stride = kLine / sizeof(uint64_t);
    size_t nodes = bytes / kLine;
    std::vector<uint64_t> host(bytes / sizeof(uint64_t), 0);
    std::vector<size_t> order(nodes);
    for (size_t i = 0; i < nodes; i++)
        order[i] = i;
    std::mt19937_64 rng(12345);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < nodes; i++)
        host[order[i] * stride] = order[(i + 1) % nodes] * stride;
    uint64_t *dev, *out;
    long long *cycles;
    CHECK(cudaMalloc(&dev, bytes));
    CHECK(cudaMalloc(&out, sizeof(uint64_t)));
    CHECK(cudaMalloc(&cycles, sizeof(long long)));
    CHECK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
    std::vector<double> runs;
    for (int r = 0; r < 5; r++) {
        chase<<<1, 1>>>(dev, order[r % nodes] * stride, steps, out, cycles);
        CHECK(cudaGetLastError());
        long long c;
        CHECK(cudaMemcpy(&c, cycles, sizeof(c), cudaMemcpyDeviceToHost));
        runs.push_back((double)c / steps);
    }
    CHECK(cudaFree(dev));
    CHECK(cudaFree(out));
    CHECK(cudaFree(cycles));
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
}

static double read_bandwidth(size_t bytes, int sms)
{
    uint4 *in;
    unsigned *sink;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&sink, sizeof(unsigned)));
    CHECK(cudaMemset(in, 1, bytes));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    size_t n = bytes / sizeof(uint4);
    std::vector<double> gbs;
    for (int r = 0; r < 10; r++) {
        CHECK(cudaEventRecord(a));
        stream_read<<<sms * 8, 256>>>(in, n, sink);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaGetLastError());
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (r > 0)  // first run is warm-up
            gbs.push_back(bytes / (ms * 1e-3) / 1e9);
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(sink));
    std::sort(gbs.begin(), gbs.end());
    return gbs[gbs.size() / 2];
}

int main(int argc, char **argv)
{
    double peak = argc > 1 ? atof(argv[1]) : 3350.0;
    if (!(peak > 0)) {
        fprintf(stderr, "usage: model-mem-probe [peak_GB/s]\n");
        return 2;
    }
    int dev = 0, count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "model-mem-probe: no CUDA device\n");
        return 77;
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
    printf("device=%s\nsms=%d\nclock_mhz=%.0f\n", prop.name, prop.multiProcessorCount,
           clock_khz / 1e3);
    printf("l2_hit_latency_cycles=%.1f\n", chase_cycles((size_t)4 << 20, 200000));
    printf("dram_latency_cycles=%.1f\n", chase_cycles((size_t)1 << 30, 200000));
    double bw = read_bandwidth((size_t)2 << 30, prop.multiProcessorCount);
    printf("read_bandwidth_gbs=%.0f\npeak_bandwidth_gbs=%.0f\na0=%.3f\n", bw, peak, bw / peak);
    return 0;
}
