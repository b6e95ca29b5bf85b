/* The guest libcuda, linked directly, against a kerneletd server in this process (sim
 * backend: copies really move bytes, kernels are only timed). Entry-point resolution and
 * export tables first (before cuInit, as cudart does), then the Driver API over the socket:
 * devices, contexts, memory, copies of every shape (inline, staged and pipelined, pinned,
 * 2-D), memsets, streams, events, modules and launches, errors. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/server_harness.h"
#include "integrity.h"

static struct harness *H;

#define CU(call) g_assert_cmpint((call), ==, CUDA_SUCCESS)

static void *sym(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    g_assert_nonnull(p);
    return p;
}

/* ---- before cuInit ------------------------------------------------------------------------ */

static void test_proc_address(void)
{
    CUdriverProcAddressQueryResult st;
    void *fn = NULL;

    /* Newest ABI at or before the version asked for, in the variant asked for. */
    CU(cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &st));
    g_assert_true(fn == sym("cuMemAlloc_v2"));
    g_assert_cmpint(st, ==, CU_GET_PROC_ADDRESS_SUCCESS);
    CU(cuGetProcAddress("cuMemAlloc", &fn, 3000, 0, &st));
    g_assert_true(fn == sym("cuMemAlloc")); /* the 32-bit ABI of CUDA 2.0 */
    CU(cuGetProcAddress("cuMemcpyHtoD", &fn, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    g_assert_true(fn == sym("cuMemcpyHtoD_v2_ptds"));
    CU(cuGetProcAddress("cuMemcpyHtoD", &fn, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st));
    g_assert_true(fn == sym("cuMemcpyHtoD_v2"));
    CU(cuGetProcAddress("cuLaunchKernel", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    g_assert_true(fn == sym("cuLaunchKernel_ptsz"));
    /* A function without stream has no per-thread variant: the plain one. */
    CU(cuGetProcAddress("cuInit", &fn, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    g_assert_true(fn == sym("cuInit"));
    /* Unknown names and versions before a function existed. */
    g_assert_cmpint(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &st), ==, CUDA_ERROR_NOT_FOUND);
    g_assert_cmpint(st, ==, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    g_assert_null(fn);
    g_assert_cmpint(cuGetProcAddress("cuLaunchKernelEx", &fn, 11000, 0, &st), ==, CUDA_ERROR_NOT_FOUND);
    g_assert_cmpint(st, ==, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* Entry points the library does not implement resolve to a stub that says so. */
    CU(cuGetProcAddress("cuGraphicsUnregisterResource", &fn, 13000, 0, &st));
    g_assert_nonnull(fn);
    g_assert_cmpint(((CUresult(*)(CUgraphicsResource))fn)(NULL), ==, CUDA_ERROR_NOT_SUPPORTED);
    /* cuGetProcAddress finds itself. */
    CU(cuGetProcAddress("cuGetProcAddress", &fn, 13000, 0, &st));
    g_assert_true(fn == sym("cuGetProcAddress_v2"));
}

/* Every exported driver symbol listed by the generator exists in the library. */
static void test_every_entry_exported(void)
{
    gchar *text = NULL;
    gchar **names;
    unsigned n = 0;

    g_assert_true(g_file_get_contents(g_getenv("KCU_ENTRY_NAMES"), &text, NULL, NULL));
    names = g_strsplit(text, "\n", -1);
    for (gchar **p = names; *p; p++) {
        if (!**p)
            continue;
        if (!dlsym(RTLD_DEFAULT, *p))
            g_error("%s is not exported", *p);
        n++;
    }
    g_assert_cmpuint(n, >, 600);
    g_strfreev(names);
    g_free(text);
}

static const CUuuid cudart_uuid = {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, (char)0xf4, (char)0xe7, 0x4a,
                                    (char)0x89, (char)0x87, (char)0xd9, 0x39, 0x12, (char)0xfd,
                                    (char)0x9d, (char)0xf9}};
static const CUuuid integrity_uuid = {{(char)0xd4, 0x08, 0x20, 0x55, (char)0xbd, (char)0xe6, 0x70,
                                       0x4b, (char)0x8d, 0x34, (char)0xba, 0x12, 0x3c, 0x66,
                                       (char)0xe1, (char)0xf2}};

static void test_export_tables(void)
{
    const void *t = NULL;
    const CUuuid unknown = {{(char)0xf8, (char)0xcf, (char)0xf9, 0x51, 0x21, 0x46, (char)0x8b, 0x4e,
                             (char)0xb9, (char)0xe2, (char)0xfb, 0x46, (char)0x9e, 0x7c, 0x0d,
                             (char)0xd9}};

    CU(cuGetExportTable(&t, &cudart_uuid));
    g_assert_cmpuint(((const uintptr_t *)t)[0], ==, 10 * sizeof(void *)); /* size of the table */
    for (int i = 1; i < 10; i++)
        g_assert_nonnull(((void *const *)t)[i]); /* no slot is NULL */
    CU(cuGetExportTable(&t, &integrity_uuid));
    g_assert_cmpuint(((const uintptr_t *)t)[0], ==, 3 * sizeof(void *));
    g_assert_cmpint(cuGetExportTable(&t, &unknown), ==, CUDA_ERROR_NOT_FOUND);
    g_assert_cmpint(cuGetExportTable(NULL, &cudart_uuid), ==, CUDA_ERROR_INVALID_VALUE);
}

static void test_error_names(void)
{
    const char *s = NULL;

    CU(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
    g_assert_cmpstr(s, ==, "CUDA_ERROR_INVALID_VALUE");
    CU(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
    g_assert_cmpstr(s, ==, "CUDA_ERROR_ILLEGAL_ADDRESS");
    CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    g_assert_cmpstr(s, ==, "out of memory");
    CU(cuGetErrorString(CUDA_SUCCESS, &s));
    g_assert_cmpstr(s, ==, "no error");
    g_assert_cmpint(cuGetErrorName((CUresult)12345, &s), ==, CUDA_ERROR_INVALID_VALUE);
}

static void test_not_initialized(void)
{
    int n = -1;
    CUdeviceptr p;

    g_assert_cmpint(cuDeviceGetCount(&n), ==, CUDA_ERROR_NOT_INITIALIZED);
    g_assert_cmpint(cuMemAlloc(&p, 16), ==, CUDA_ERROR_NOT_INITIALIZED);
    int v = 0;
    CU(cuDriverGetVersion(&v));
    g_assert_cmpint(v, ==, CUDA_VERSION);
}

/* The integrity answer is HMAC-MD2 over what the library reports (computed here from
 * kcu_md2 independently of kcu_integrity_hash's own composition). */
static void test_integrity_hash(void)
{
    static const uint8_t key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                    0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
    struct kcu_integrity_device dev = {.uuid = {1, 2, 3}, .pci_domain = 0, .pci_bus = 0x41,
                                       .pci_device = 0};
    struct kcu_integrity_input in = {
        .runtime_version = 13002, .unix_seconds = 1795527795, .driver_version = 13000,
        .pid = 4242, .tid = 0xf79c1000, .cudart_table = (void *)0x7ffff6958240,
        .integrity_table = (void *)0x7ffff6958220, .fn_address = (void *)0x7ffff2aaf4a0,
        .n_devices = 1, .devices = &dev,
    };
    uint8_t inner_msg[16 + 48 + 28], outer_msg[32], inner[16], outer[16];
    uint32_t w[4] = {13000, 13002, 4242, 0xf79c1000};
    uint64_t q[4] = {0x7ffff6958240, 0x7ffff6958220, 0x7ffff2aaf4a0, 1795527795};
    uint64_t got[2];

    for (int i = 0; i < 16; i++) {
        inner_msg[i] = key[i] ^ 0x36;
        outer_msg[i] = key[i] ^ 0x5c;
    }
    memcpy(inner_msg + 16, w, sizeof(w));
    memcpy(inner_msg + 32, q, sizeof(q));
    memcpy(inner_msg + 64, &dev, sizeof(dev));
    kcu_md2(inner_msg, sizeof(inner_msg), inner);
    memcpy(outer_msg + 16, inner, 16);
    kcu_md2(outer_msg, sizeof(outer_msg), outer);
    kcu_integrity_hash(&in, got);
    g_assert_cmpmem(got, 16, outer, 16);
    /* Runtime versions ending in 0 and 1 get fixed answers. */
    in.runtime_version = 13000;
    kcu_integrity_hash(&in, got);
    g_assert_cmpuint(got[0], ==, 0x3341181c03cb675cull);
    g_assert_cmpuint(got[1], ==, 0x8ed383aa1f4cd1e8ull);
    /* MD2 itself (RFC 1319 test suite). */
    kcu_md2("abc", 3, inner);
    g_assert_cmpmem(inner, 16, "\xda\x85\x3b\x0d\x3f\x88\xd9\x9b\x30\x28\x3a\x69\xe6\xde\xd6\xbb", 16);
}

/* ---- with the daemon -------------------------------------------------------------------- */

static CUcontext ctx;

static void test_init_and_device(void)
{
    int n = 0, major = 0, warp = 0;
    char name[128];
    size_t mem = 0;
    CUdevice d;
    CUuuid u;

    CU(cuInit(0));
    CU(cuDeviceGetCount(&n));
    g_assert_cmpint(n, ==, 1);
    CU(cuDeviceGet(&d, 0));
    g_assert_cmpint(cuDeviceGet(&d, 1), ==, CUDA_ERROR_INVALID_DEVICE);
    CU(cuDeviceGetName(name, sizeof(name), d));
    g_assert_cmpuint(strlen(name), >, 0);
    CU(cuDeviceTotalMem(&mem, d));
    g_assert_cmpuint(mem, >, 0);
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
    g_assert_cmpint(major, >=, 7);
    CU(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d));
    g_assert_cmpint(warp, ==, 32);
    CU(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d));
    g_assert_cmpint(warp, ==, 1024);
    CU(cuDeviceGetUuid(&u, d));
    /* Without a current context, context calls fail as CUDA's do. */
    CUdeviceptr p;
    g_assert_cmpint(cuMemAlloc(&p, 16), ==, CUDA_ERROR_INVALID_CONTEXT);
    CU(cuDevicePrimaryCtxRetain(&ctx, d));
    CU(cuCtxSetCurrent(ctx));
    unsigned flags;
    int active = 0;
    CU(cuDevicePrimaryCtxGetState(d, &flags, &active));
    g_assert_cmpint(active, ==, 1);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 2654435761u + seed) >> 7);
}

/* Sizes that take the inline path, one staging slot, and many slots in flight. */
static void test_copies(void)
{
    const size_t sizes[] = {4, 1000, 16 << 10, (16 << 10) + 1, 3 << 20, (41 << 20) + 12345};
    for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
        size_t n = sizes[k];
        uint8_t *a = g_malloc(n), *b = g_malloc0(n);
        CUdeviceptr d, e;
        fill(a, n, (unsigned)k);
        CU(cuMemAlloc(&d, n));
        CU(cuMemAlloc(&e, n));
        CU(cuMemcpyHtoD(d, a, n));
        CU(cuMemcpyDtoD(e, d, n));
        CU(cuMemcpyDtoH(b, e, n));
        g_assert_cmpmem(a, n, b, n);
        /* Unified copies classify the pointers. */
        memset(b, 0, n);
        CU(cuMemcpy((CUdeviceptr)(uintptr_t)b, d, n));
        g_assert_cmpmem(a, n, b, n);
        CU(cuMemFree(d));
        CU(cuMemFree(e));
        g_free(a);
        g_free(b);
    }
}

static void test_copy_errors(void)
{
    CUdeviceptr d;
    uint8_t buf[64];

    CU(cuMemAlloc(&d, 64));
    g_assert_cmpint(cuMemcpyHtoD(d + 32, buf, 64), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuMemcpyDtoH(buf, (CUdeviceptr)0x10, 16), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuMemFree(d + 8), ==, CUDA_ERROR_INVALID_VALUE);
    CU(cuMemFree(d));
    g_assert_cmpint(cuMemFree(d), ==, CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr base = 0;
    size_t size = 0;
    CU(cuMemAlloc(&d, 1000));
    CU(cuMemGetAddressRange(&base, &size, d + 500));
    g_assert_cmpuint(base, ==, d);
    g_assert_cmpuint(size, ==, 1000);
    CU(cuMemFree(d));
}

static void test_pinned(void)
{
    size_t n = 5 << 20;
    uint8_t *h, *back;
    CUdeviceptr d;
    CUstream s;
    unsigned flags = 0;

    CU(cuMemHostAlloc((void **)&h, n, CU_MEMHOSTALLOC_PORTABLE));
    CU(cuMemAllocHost((void **)&back, n));
    CU(cuMemHostGetFlags(&flags, h));
    g_assert_cmpuint(flags, ==, CU_MEMHOSTALLOC_PORTABLE);
    fill(h, n, 9);
    CU(cuMemAlloc(&d, n));
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuMemcpyHtoDAsync(d, h, n, s));
    CU(cuMemcpyDtoHAsync(back, d, n, s));
    CU(cuStreamSynchronize(s));
    g_assert_cmpmem(h, n, back, n);
    unsigned int memtype = 0;
    CU(cuPointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h));
    g_assert_cmpuint(memtype, ==, CU_MEMORYTYPE_HOST);
    CU(cuPointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    g_assert_cmpuint(memtype, ==, CU_MEMORYTYPE_DEVICE);
    CU(cuStreamDestroy(s));
    CU(cuMemFree(d));
    CU(cuMemFreeHost(h));
    CU(cuMemFreeHost(back));
    g_assert_cmpint(cuMemFreeHost(h), ==, CUDA_ERROR_INVALID_VALUE);
}

static void test_2d_and_memset(void)
{
    enum { W = 100, H = 37, PITCH_H = 128 };
    uint8_t host[H][PITCH_H], back[H][W];
    CUdeviceptr d;
    size_t pitch;
    CUDA_MEMCPY2D c = {0};

    fill(&host[0][0], sizeof(host), 5);
    CU(cuMemAllocPitch(&d, &pitch, W, H, 4));
    g_assert_cmpuint(pitch, >=, W);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.srcPitch = PITCH_H;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = pitch;
    c.WidthInBytes = W;
    c.Height = H;
    CU(cuMemcpy2D(&c));
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = d;
    c.srcPitch = pitch;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = back;
    c.dstPitch = W;
    c.WidthInBytes = W;
    c.Height = H;
    CU(cuMemcpy2D(&c));
    for (int r = 0; r < H; r++)
        g_assert_cmpmem(back[r], W, host[r], W);

    /* Memsets of every element size (the 16- and 32-bit ones with mixed bytes). */
    uint32_t words[64];
    CUdeviceptr m;
    CU(cuMemAlloc(&m, sizeof(words)));
    CU(cuMemsetD32(m, 0x01020304u, 64));
    CU(cuMemsetD16(m + 8, 0xbeef, 2));
    CU(cuMemsetD8(m + 200, 0x7f, 4));
    CU(cuMemcpyDtoH(words, m, sizeof(words)));
    g_assert_cmphex(words[0], ==, 0x01020304u);
    g_assert_cmphex(words[2], ==, 0xbeefbeefu);
    g_assert_cmphex(words[3], ==, 0x01020304u);
    g_assert_cmphex(words[50], ==, 0x7f7f7f7fu);
    g_assert_cmpint(cuMemsetD32(m + 2, 0, 1), ==, CUDA_ERROR_INVALID_VALUE); /* misaligned */
    CU(cuMemFree(m));
    CU(cuMemFree(d));
}

/* cuBLAS asks at cublasCreate: clusters of more than one block are never resident here
 * (they are not launched); "clusters" of one block are blocks. */
static void check_cluster_occupancy(CUfunction f)
{
    CUlaunchAttribute cluster = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                 .value.clusterDim = {2, 1, 1}};
    CUlaunchConfig cfg = {.gridDimX = 8, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
                          .blockDimY = 1, .blockDimZ = 1};
    int n = -1, blocks = -1, sms = 0, size = 0;

    CU(cuOccupancyMaxActiveClusters(&n, f, &cfg));
    CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 128, 0));
    CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    g_assert_cmpint(blocks, >, 0);
    g_assert_cmpint(n, ==, blocks * sms);
    cfg.attrs = &cluster;
    cfg.numAttrs = 1;
    CU(cuOccupancyMaxActiveClusters(&n, f, &cfg));
    g_assert_cmpint(n, ==, 0);
    CU(cuOccupancyMaxPotentialClusterSize(&size, f, &cfg));
    g_assert_cmpint(size, ==, 1);
    g_assert_cmpint(cuOccupancyMaxActiveClusters(NULL, f, &cfg), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuOccupancyMaxActiveClusters(&n, (CUfunction)&n, &cfg), ==,
                    CUDA_ERROR_INVALID_HANDLE);
}

/* Export-table slots the CUDA libraries call with a context current (cuBLASLt, seen with
 * the real driver): TOOLS_TLS[2] gives the current context, TOOLS_CONTEXT[4] its id. */
static void check_context_tables(void)
{
    static const CUuuid tls = {{0x42, (char)0xd8, 0x5a, (char)0x81, 0x23, (char)0xf6,
                                (char)0xcb, 0x47, (char)0x82, (char)0x98, (char)0xf6,
                                (char)0xe7, (char)0x8a, 0x3a, (char)0xec, (char)0xdc}};
    static const CUuuid tools_ctx = {{0x21, 0x31, (char)0x8c, 0x60, (char)0x97, 0x14, 0x32,
                                      0x48, (char)0x8c, (char)0xa6, 0x41, (char)0xff, 0x73,
                                      0x24, (char)0xc8, (char)0xf2}};
    const void *const *t = NULL;
    CUcontext cur = NULL, got = NULL;
    unsigned long long id = 0, want = 0;

    CU(cuCtxGetCurrent(&cur));
    g_assert_nonnull(cur);
    CU(cuGetExportTable((const void **)&t, &tls));
    CU(((CUresult(*)(CUcontext *))t[2])(&got));
    g_assert_true(got == cur);
    CU(cuGetExportTable((const void **)&t, &tools_ctx));
    g_assert_cmpuint((uintptr_t)t[0], ==, 64 * sizeof(void *));
    CU(((CUresult(*)(CUcontext, unsigned long long *))t[4])(cur, &id));
    CU(cuCtxGetId(cur, &want));
    g_assert_cmpuint(id, ==, want);
}

static void test_module_and_launch(void)
{
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    CUevent a, b;
    unsigned n = 1024, v = 3;
    size_t off, size;
    float ms = -1;

    CU(cuModuleLoadData(&mod, harness_ptx));
    CU(cuModuleGetFunction(&f, mod, "k_add"));
    g_assert_cmpint(cuModuleGetFunction(&f, mod, "missing"), ==, CUDA_ERROR_NOT_FOUND);
    CU(cuModuleGetFunction(&f, mod, "k_add"));
    CU(cuFuncGetParamInfo(f, 2, &off, &size));
    g_assert_cmpuint(off, ==, 12);
    g_assert_cmpuint(size, ==, 4);
    g_assert_cmpint(cuFuncGetParamInfo(f, 3, &off, &size), ==, CUDA_ERROR_INVALID_VALUE);
    check_cluster_occupancy(f);
    check_context_tables();
    CU(cuMemAlloc(&d, 4096));
    void *params[] = {&d, &n, &v};
    CU(cuEventCreate(&a, 0));
    CU(cuEventCreate(&b, 0));
    CU(cuEventRecord(a, NULL));
    for (int i = 0; i < 200; i++)
        CU(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CU(cuEventRecord(b, NULL));
    CU(cuEventSynchronize(b));
    CU(cuEventElapsedTime(&ms, a, b));
    g_assert_cmpfloat(ms, >, 0);
    /* Launch checks that CUDA does at the call. */
    g_assert_cmpint(cuLaunchKernel(f, 1, 1, 1, 4096, 1, 1, 0, NULL, params, NULL), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 1 << 30, NULL, params, NULL), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuLaunchKernel((CUfunction)&n, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), ==, CUDA_ERROR_INVALID_HANDLE);
    /* The extra buffer form. */
    struct {
        uint64_t p;
        uint32_t n, v;
    } packed = {d, n, v};
    size_t psize = sizeof(packed);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize,
                     CU_LAUNCH_PARAM_END};
    CU(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    CU(cuCtxSynchronize());
    CU(cuEventDestroy(a));
    CU(cuEventDestroy(b));
    CU(cuMemFree(d));
    CU(cuModuleUnload(mod));
    /* A library is a module, a kernel a function. */
    CUlibrary lib;
    CUkernel k;
    CU(cuLibraryLoadData(&lib, harness_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CU(cuLibraryGetKernel(&k, lib, "k_add"));
    CU(cuKernelGetFunction(&f, k));
    g_assert_true((void *)f == (void *)k);
    CU(cuLibraryUnload(lib));
}

/* A library is loaded at its first use, from a copy of its code (cudart loads every
 * fatbin of a framework at start): PTX that does not parse loads as a library and fails
 * at cuLibraryGetKernel; with CUDA_MODULE_LOADING=EAGER, as with the driver, at once. The
 * caller's buffer may change after cuLibraryLoadData. */
static void test_library_lazy(void)
{
    static const char bad[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                              ".visible .entry broken(\n";
    CUlibrary lib;
    CUkernel k;
    CUmodule mod;
    g_unsetenv("CUDA_MODULE_LOADING");
    CU(cuLibraryLoadData(&lib, bad, NULL, NULL, 0, NULL, NULL, 0));
    g_assert_cmpint(cuLibraryGetKernel(&k, lib, "broken"), ==, CUDA_ERROR_INVALID_PTX);
    g_assert_cmpint(cuLibraryGetModule(&mod, lib), ==, CUDA_ERROR_INVALID_PTX);
    CU(cuLibraryUnload(lib));
    g_setenv("CUDA_MODULE_LOADING", "EAGER", TRUE);
    g_assert_cmpint(cuLibraryLoadData(&lib, bad, NULL, NULL, 0, NULL, NULL, 0), ==,
                    CUDA_ERROR_INVALID_PTX);
    g_unsetenv("CUDA_MODULE_LOADING");
    char *copy = g_strdup(harness_ptx);
    CU(cuLibraryLoadData(&lib, copy, NULL, NULL, 0, NULL, NULL, 0));
    memset(copy, 'x', strlen(copy));    /* ours now: the library keeps its own */
    g_free(copy);
    CU(cuLibraryGetKernel(&k, lib, "k_add"));
    CU(cuLibraryGetModule(&mod, lib));
    CU(cuLibraryUnload(lib));
}

/* The bytes of fixture name (KCU_FX_<name>, tests/fatbin/), or NULL without a toolchain. */
static gchar *fixture(const char *name)
{
    gchar *key = g_strdup_printf("KCU_FX_%s", name), *data = NULL;
    const char *path = g_getenv(key);
    g_free(key);
    if (path)
        g_assert_true(g_file_get_contents(path, &data, NULL, NULL));
    return data;
}

/* A launch of a SASS-only kernel on this backend (the sim runs PTX only) is refused with
 * CUDA_ERROR_NO_BINARY_FOR_GPU, at the call or at the next synchronisation. */
static void expect_no_binary(CUfunction f, void **params)
{
    CUresult r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    g_assert_cmpint(r, ==, CUDA_ERROR_NO_BINARY_FOR_GPU);
}

/* SASS-only modules (issue 14): a cubin for the device's sm_90 loads through every entry
 * point, its functions carry the layout of its .nv.info records, its launches are refused
 * here; a fatbin with only an sm_90 cubin loads the same way, one with PTX too still loads
 * (PTX preferred), and SASS for another architecture is refused at load with
 * CUDA_ERROR_NO_BINARY_FOR_GPU (as a library it loads, and its kernels are refused). A fatbin whose PTX cannot be loaded falls back to its cubin. */
static void test_sass_only(void)
{
    gchar *c90 = fixture("cubin90"), *c80 = fixture("cubin80"), *f90 = fixture("sass90"),
          *f80 = fixture("sass80"), *multi = fixture("multi"), *bad = fixture("ptx_bad");
    CUmodule mod;
    CUfunction f;
    CUlibrary lib;
    CUkernel k;
    unsigned count = 0;
    size_t off, size;
    int v;

    if (!c90) {
        g_test_skip("no CUDA toolchain: no cubins");
        return;
    }
    CU(cuModuleLoadData(&mod, c90));
    CU(cuModuleGetFunctionCount(&count, mod));
    g_assert_cmpuint(count, ==, 6);
    CU(cuModuleGetFunction(&f, mod, "mixed"));
    CU(cuFuncGetParamInfo(f, 2, &off, &size));      /* struct twelve: 12 bytes at 16 */
    g_assert_cmpuint(off, ==, 16);
    g_assert_cmpuint(size, ==, 12);
    g_assert_cmpint(cuFuncGetParamInfo(f, 5, &off, &size), ==, CUDA_ERROR_INVALID_VALUE);
    CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f));
    g_assert_cmpint(v, ==, 90);
    CU(cuModuleGetFunction(&f, mod, "bounded"));
    CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    g_assert_cmpint(v, ==, 128);
    CUdeviceptr d;
    CU(cuMemAlloc(&d, 64));
    void *params[] = {&d};
    expect_no_binary(f, params);
    expect_no_binary(f, params);    /* again: the refusal is logged once, answered always */
    CU(cuMemFree(d));
    CUdeviceptr g;
    g_assert_cmpint(cuModuleGetGlobal(&g, &size, mod, "counter"), ==, CUDA_ERROR_NOT_SUPPORTED);
    CU(cuModuleUnload(mod));

    CU(cuModuleLoadDataEx(&mod, c90, 0, NULL, NULL));
    CU(cuModuleUnload(mod));
    CU(cuLibraryLoadData(&lib, c90, NULL, NULL, 0, NULL, NULL, 0));
    CU(cuLibraryGetKernel(&k, lib, "scale"));
    CU(cuLibraryUnload(lib));
    CU(cuModuleLoadFatBinary(&mod, f90));
    CU(cuModuleGetFunction(&f, mod, "vec_add"));
    CU(cuModuleUnload(mod));
    CU(cuLibraryLoadData(&lib, f90, NULL, NULL, 0, NULL, NULL, 0));
    CU(cuLibraryUnload(lib));
    /* As cudart registers it: the host stub's wrapper {magic, version 1, fatbin, 0}. */
    struct {
        uint32_t magic, version;
        const void *fatbin, *unused;
    } wrapper = {0x466243B1u, 1, f90, NULL};
    CU(cuLibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0));
    CU(cuLibraryGetKernelCount(&count, lib));
    g_assert_cmpuint(count, ==, 2);
    CU(cuLibraryUnload(lib));
    /* PTX beside the cubins: the PTX is chosen, so this backend runs the kernel. */
    CU(cuModuleLoadFatBinary(&mod, multi));
    CU(cuModuleGetFunction(&f, mod, "vec_add"));
    CUdeviceptr a, b;
    int n = 64;
    CU(cuMemAlloc(&a, 256));
    CU(cuMemAlloc(&b, 256));
    void *vec_params[] = {&a, &b, &n};
    CU(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, vec_params, NULL));
    CU(cuCtxSynchronize());
    CU(cuModuleUnload(mod));
    /* PTX that cannot be loaded beside an sm_90 cubin: the cubin is loaded instead. */
    CU(cuModuleLoadData(&mod, bad));
    CU(cuModuleGetFunction(&f, mod, "vec_add"));
    expect_no_binary(f, vec_params);
    CU(cuModuleUnload(mod));
    CU(cuMemFree(a));
    CU(cuMemFree(b));

    g_assert_cmpint(cuModuleLoadData(&mod, c80), ==, CUDA_ERROR_NO_BINARY_FOR_GPU);
    g_assert_cmpint(cuModuleLoadFatBinary(&mod, f80), ==, CUDA_ERROR_NO_BINARY_FOR_GPU);
    /* A library loads lazily, as the driver's does (cuBLAS loads one without code for the
     * GPU at cublasCreate): only its kernels fail. */
    CU(cuLibraryLoadData(&lib, f80, NULL, NULL, 0, NULL, NULL, 0));
    g_assert_cmpint(cuLibraryGetKernel(&k, lib, "vec_add"), ==, CUDA_ERROR_NO_BINARY_FOR_GPU);
    CU(cuLibraryGetKernelCount(&count, lib));
    g_assert_cmpuint(count, ==, 0);
    g_assert_cmpint(cuLibraryGetModule(&mod, lib), ==, CUDA_ERROR_NO_BINARY_FOR_GPU);
    CUdeviceptr none;
    g_assert_cmpint(cuLibraryGetGlobal(&none, &size, lib, "counter"), ==, CUDA_ERROR_NOT_FOUND);
    CU(cuLibraryUnload(lib));
    c90[18] = 0;    /* e_machine no longer EM_CUDA: not a cubin */
    g_assert_cmpint(cuModuleLoadData(&mod, c90), ==, CUDA_ERROR_INVALID_IMAGE);
    g_free(c90);
    g_free(c80);
    g_free(f90);
    g_free(f80);
    g_free(multi);
    g_free(bad);
}

static void test_streams_and_queries(void)
{
    CUstream s;
    CUevent e;
    CUdeviceptr d;
    uint8_t buf[4096];

    CU(cuStreamCreate(&s, 0));
    CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU(cuMemAlloc(&d, sizeof(buf)));
    fill(buf, sizeof(buf), 1);
    CU(cuMemcpyHtoDAsync(d, buf, sizeof(buf), s));
    CU(cuEventRecord(e, s));
    CU(cuStreamWaitEvent(NULL, e, 0));
    CU(cuStreamSynchronize(s));
    CU(cuStreamQuery(s));
    CU(cuEventQuery(e));
    float ms;
    g_assert_cmpint(cuEventElapsedTime(&ms, e, e), ==, CUDA_ERROR_INVALID_HANDLE);
    int prio = 1;
    CU(cuStreamGetPriority(s, &prio));
    g_assert_cmpint(prio, ==, 0);
    /* The per-thread default stream works like any stream. */
    CUresult (*memset_ptds)(CUdeviceptr, unsigned char, size_t) = sym("cuMemsetD8_v2_ptds");
    CU(memset_ptds(d, 0, sizeof(buf)));
    CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    CU(cuStreamDestroy(s));
    g_assert_cmpint(cuStreamSynchronize((CUstream)&prio), ==, CUDA_ERROR_INVALID_HANDLE);
    CU(cuEventDestroy(e));
    CU(cuMemFree(d));
    size_t free_b = 0, total = 0;
    CU(cuMemGetInfo(&free_b, &total));
    g_assert_cmpuint(free_b, <=, total);
}

/* Threads share the connection: each copies, launches and synchronises on its own stream
 * and on its per-thread default stream while the others do, and gets its own data back. */
struct worker {
    int id;
    CUfunction f;
    bool ok;
};

static gpointer worker_main(gpointer arg)
{
    struct worker *w = arg;
    size_t n = (256 << 10) + (size_t)w->id * 4096;
    uint8_t *a = g_malloc(n), *b = g_malloc0(n);
    CUdeviceptr d;
    CUstream s;
    unsigned cnt = 64, v = 1;
    void *params[] = {&d, &cnt, &v};

    w->ok = false;
    fill(a, n, (unsigned)w->id + 100);
    if (cuCtxSetCurrent(ctx) || cuMemAlloc(&d, n) || cuStreamCreate(&s, 0))
        return NULL;
    for (int round = 0; round < 20; round++) {
        CUresult r[5] = {cuMemcpyHtoDAsync(d, a, n, s),
                         cuLaunchKernel(w->f, 1, 1, 1, 64, 1, 1, 0, s, params, NULL),
                         cuLaunchKernel(w->f, 1, 1, 1, 64, 1, 1, 0, CU_STREAM_PER_THREAD, params, NULL),
                         cuMemcpyDtoHAsync(b, d, n, s), cuStreamSynchronize(s)};
        for (int k = 0; k < 5; k++)
            if (r[k]) {
                g_printerr("worker %d round %d step %d: %d\n", w->id, round, k, (int)r[k]);
                return NULL;
            }
        if (memcmp(a, b, n) != 0) {
            g_printerr("worker %d round %d: data differ\n", w->id, round);
            return NULL;
        }
    }
    CUresult r[3] = {cuStreamDestroy(s), cuMemFree(d), cuStreamSynchronize(CU_STREAM_PER_THREAD)};
    w->ok = true;
    for (int k = 0; k < 3; k++)
        if (r[k]) {
            g_printerr("worker %d teardown step %d: %d\n", w->id, k, (int)r[k]);
            w->ok = false;
        }
    g_free(a);
    g_free(b);
    return NULL;
}

static void test_threads(void)
{
    struct worker w[4];
    GThread *t[4];
    CUmodule mod;
    CUfunction f;

    CU(cuModuleLoadData(&mod, harness_ptx));
    CU(cuModuleGetFunction(&f, mod, "k_add"));
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.id = i, .f = f};
        t[i] = g_thread_new("worker", worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        g_thread_join(t[i]);
        g_assert_true(w[i].ok);
    }
    CU(cuCtxSynchronize());
    CU(cuModuleUnload(mod));
}

/* Host functions run in stream order in this process: while one blocks, later work of its
 * stream waits (queries say NOT_READY) and other streams go on; callbacks get the stream. */
struct latch {
    GMutex lock;
    GCond cond;
    bool open;
    int order[4];
    int n;
};

static void CUDA_CB latch_wait(void *arg)
{
    struct latch *l = arg;

    g_mutex_lock(&l->lock);
    while (!l->open)
        g_cond_wait(&l->cond, &l->lock);
    l->order[l->n++] = 1;
    g_mutex_unlock(&l->lock);
}

static CUstream cb_stream;

static void CUDA_CB note_callback(CUstream s, CUresult status, void *arg)
{
    struct latch *l = arg;

    g_mutex_lock(&l->lock);
    l->order[l->n++] = (s == cb_stream && status == CUDA_SUCCESS) ? 2 : -1;
    g_mutex_unlock(&l->lock);
}

static void test_host_functions(void)
{
    struct latch l = {.open = false};
    CUstream s, other;
    CUevent e;
    CUdeviceptr d;
    uint8_t buf[4096], back[4096];

    g_mutex_init(&l.lock);
    g_cond_init(&l.cond);
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU(cuMemAlloc(&d, sizeof(buf)));
    g_assert_cmpint(cuLaunchHostFunc(s, NULL, NULL), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuStreamAddCallback(s, note_callback, &l, 1), ==, CUDA_ERROR_INVALID_VALUE);
    cb_stream = s;
    fill(buf, sizeof(buf), 5);
    CU(cuLaunchHostFunc(s, latch_wait, &l));
    CU(cuMemcpyHtoDAsync(d, buf, sizeof(buf), s));
    CU(cuEventRecord(e, s));
    CU(cuStreamAddCallback(s, note_callback, &l, 0));
    /* The host function blocks: its stream's later work is not done, other streams go on. */
    g_assert_cmpint(cuStreamQuery(s), ==, CUDA_ERROR_NOT_READY);
    g_assert_cmpint(cuEventQuery(e), ==, CUDA_ERROR_NOT_READY);
    CU(cuMemsetD8Async(d, 0, 16, other));
    CU(cuStreamSynchronize(other));
    g_mutex_lock(&l.lock);
    l.open = true;
    g_cond_broadcast(&l.cond);
    g_mutex_unlock(&l.lock);
    CU(cuStreamSynchronize(s));
    g_assert_cmpint(l.n, ==, 2);
    g_assert_cmpint(l.order[0], ==, 1);
    g_assert_cmpint(l.order[1], ==, 2);
    CU(cuEventQuery(e));
    CU(cuMemcpyDtoH(back, d, sizeof(back)));
    g_assert_cmpmem(back + 16, sizeof(back) - 16, buf + 16, sizeof(buf) - 16);
    CU(cuStreamDestroy(s));
    CU(cuStreamDestroy(other));
    CU(cuEventDestroy(e));
    CU(cuMemFree(d));
    g_mutex_clear(&l.lock);
    g_cond_clear(&l.cond);
}

/* Registered host memory: CUDA's errors; mapped memory where the backend cannot map. */
static void test_host_register(void)
{
    static uint8_t buf[3 * 4096];
    CUdeviceptr dp = 0;
    int can_map = 1;

    CU(cuMemHostRegister(buf, sizeof(buf), 0));
    g_assert_cmpint(cuMemHostRegister(buf + 4096, 16, 0), ==, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    g_assert_cmpint(cuMemHostRegister(buf, 16, 0x80), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuMemHostUnregister(buf + 1), ==, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CU(cuMemHostUnregister(buf));
    g_assert_cmpint(cuMemHostUnregister(buf), ==, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    g_assert_cmpint(cuMemHostRegister(buf, sizeof(buf), CU_MEMHOSTREGISTER_DEVICEMAP), ==,
                    CUDA_ERROR_NOT_SUPPORTED);
    /* memory this library does not know has no device address, as in CUDA */
    g_assert_cmpint(cuMemHostGetDevicePointer(&dp, buf, 0), ==, CUDA_ERROR_INVALID_VALUE);
    CU(cuDeviceGetAttribute(&can_map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 0));
    g_assert_cmpint(can_map, ==, 0);
    /* the sim cannot map host memory: pinned memory is only copied, and asking for it
     * mapped gets CUDA's not-supported error */
    void *pinned = NULL;
    CU(cuMemHostAlloc(&pinned, 4096, 0));
    g_assert_cmpint(cuMemHostGetDevicePointer(&dp, pinned, 0), ==, CUDA_ERROR_NOT_SUPPORTED);
    CU(cuMemFreeHost(pinned));
    g_assert_cmpint(cuMemHostAlloc(&pinned, 4096, CU_MEMHOSTALLOC_DEVICEMAP), ==,
                    CUDA_ERROR_NOT_SUPPORTED);
}

/* Memory pools: accounting of the default pool, attributes, an explicit pool. */
static void test_mempools(void)
{
    CUmemoryPool pool, current, mine;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    cuuint64_t v = 0, zero = 0, big = ~0ull;
    CUdeviceptr a, b;
    CUstream s;

    CU(cuStreamCreate(&s, 0));
    CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CU(cuDeviceGetMemPool(&current, 0));
    g_assert_true(pool == current);
    CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &big));
    CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
    g_assert_cmpuint(v, ==, big);
    CU(cuMemAllocAsync(&a, 1 << 20, s));
    CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    g_assert_cmpuint(v, ==, 1 << 20);
    CU(cuMemsetD8Async(a, 1, 1 << 20, s));
    CU(cuMemFreeAsync(a, s));
    CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    g_assert_cmpuint(v, ==, 0);
    CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    g_assert_cmpuint(v, ==, 1 << 20);
    CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
    CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    g_assert_cmpuint(v, ==, 0);
    g_assert_cmpint(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero), ==,
                    CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuMemPoolDestroy(pool), ==, CUDA_ERROR_INVALID_VALUE);

    CU(cuMemPoolCreate(&mine, &props));
    CU(cuDeviceSetMemPool(0, mine));
    CU(cuMemAllocAsync(&b, 4096, s)); /* from the current pool, now mine */
    CU(cuMemPoolGetAttribute(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    g_assert_cmpuint(v, ==, 4096);
    CU(cuMemPoolDestroy(mine)); /* lives on until b is freed; the default is current again */
    CU(cuDeviceGetMemPool(&current, 0));
    g_assert_true(current == pool);
    CU(cuMemFree(b));
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    g_assert_cmpint(cuMemPoolCreate(&mine, &props), ==, CUDA_ERROR_NOT_SUPPORTED);
    CU(cuStreamSynchronize(s));
    CU(cuStreamDestroy(s));
}

/* Streams that do not capture (tests/libcuda/test_graphs.c has capture itself): the
 * queries frameworks make before allocations and launches answer so for valid streams,
 * refuse invalid ones, and the legacy stream cannot capture. */
static void test_capture_queries(void)
{
    CUstream s;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    cuuint64_t id = 7;

    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuStreamIsCapturing(s, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_NONE);
    st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CU(cuStreamIsCapturing(NULL, &st));
    g_assert_cmpint(st, ==, CU_STREAM_CAPTURE_STATUS_NONE);
    CU(cuStreamGetCaptureInfo_v3(s, &st, &id, NULL, NULL, NULL, NULL));
    g_assert_cmpint(id, ==, 0);
    g_assert_cmpint(cuStreamIsCapturing(s, NULL), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuStreamIsCapturing((CUstream)&st, &st), !=, CUDA_SUCCESS);
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU(cuThreadExchangeStreamCaptureMode(&mode));
    g_assert_cmpint(mode, ==, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CU(cuThreadExchangeStreamCaptureMode(&mode));
    g_assert_cmpint(mode, ==, CU_STREAM_CAPTURE_MODE_RELAXED);
    mode = (CUstreamCaptureMode)9;
    g_assert_cmpint(cuThreadExchangeStreamCaptureMode(&mode), ==, CUDA_ERROR_INVALID_VALUE);
    g_assert_cmpint(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), ==,
                    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU(cuStreamDestroy(s));
}

int main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    H = harness_start();
    g_setenv("KERNELET_SOCKET", harness_socket(H), TRUE);
    g_test_add_func("/libcuda/proc-address", test_proc_address);
    g_test_add_func("/libcuda/every-entry-exported", test_every_entry_exported);
    g_test_add_func("/libcuda/export-tables", test_export_tables);
    g_test_add_func("/libcuda/error-names", test_error_names);
    g_test_add_func("/libcuda/not-initialized", test_not_initialized);
    g_test_add_func("/libcuda/integrity-hash", test_integrity_hash);
    g_test_add_func("/libcuda/init-and-device", test_init_and_device);
    g_test_add_func("/libcuda/copies", test_copies);
    g_test_add_func("/libcuda/copy-errors", test_copy_errors);
    g_test_add_func("/libcuda/pinned", test_pinned);
    g_test_add_func("/libcuda/2d-and-memset", test_2d_and_memset);
    g_test_add_func("/libcuda/module-and-launch", test_module_and_launch);
    g_test_add_func("/libcuda/library-lazy", test_library_lazy);
    g_test_add_func("/libcuda/sass-only", test_sass_only);
    g_test_add_func("/libcuda/streams-and-queries", test_streams_and_queries);
    g_test_add_func("/libcuda/threads", test_threads);
    g_test_add_func("/libcuda/host-functions", test_host_functions);
    g_test_add_func("/libcuda/host-register", test_host_register);
    g_test_add_func("/libcuda/mempools", test_mempools);
    g_test_add_func("/libcuda/capture-queries", test_capture_queries);
    rc = g_test_run();
    harness_stop(H);
    return rc;
}
