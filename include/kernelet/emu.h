/* PTX emulator: an emulated CUDA device on the CPU (library kernelet-emu, host-sched/emu/).
 *
 * A kemu_device owns device memory (64-bit device addresses, every kernel access
 * bounds-checked), loaded modules (PTX text, parsed by kernelet-ptx and compiled once into
 * a pre-decoded form) and a pool of worker threads that run thread blocks in parallel.
 * Launches are synchronous: kemu_launch returns when the grid has finished, with the
 * kernel's first fault as the error. Everything is thread-safe: several threads may
 * allocate, copy and launch on one device at the same time (launches share the pool).
 *
 * Faults a GPU reports as sticky context errors (illegal address, misaligned address,
 * trap, unknown instruction) end only the launch here: the device stays usable, and the
 * caller decides what a tenant's fault means. kemu_cuda_result maps codes to CUresult.
 *
 * docs/EMULATOR.md describes the execution model, the supported instructions and the
 * accuracy of the approximate math instructions. The library never prints and never
 * aborts; functions return 0 or a negative KEMU_E* code and describe the failure in a
 * kemu_error (which may be NULL when the caller does not want it).
 */
#ifndef KERNELET_EMU_H
#define KERNELET_EMU_H

#include <kernelet/ptx.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a thread's local memory ends: the stack pointer of an H100 kernel without locals
 * (tests/gpu/ptx/stack_probe.c), whose frames lie below it. A kernel's .local variables
 * lie in [KEMU_LOCAL_TOP - local bytes, KEMU_LOCAL_TOP), as its frame does on the GPU;
 * the fencing pass is given this as the local top that it confines local accesses to. */
#define KEMU_LOCAL_TOP (KPTX_STACK_TOP - 0x240)

/* Bytes of each thread's call stack: the invocations of recursive functions are saved
 * there, and stacksave reads KEMU_LOCAL_TOP less the kernel's local variables and what
 * is saved, as on a GPU whose stack grows down from there. */
#define KEMU_STACK_BYTES (32u << 10)

/* Error codes (negative); 0 is success. */
enum {
    KEMU_OK = 0,
    KEMU_EINVAL = -1,        /* bad argument: NULL, zero size, unknown pointer, bad geometry */
    KEMU_ENOMEM = -2,        /* host allocation failed, or the device memory limit is reached */
    KEMU_EPTX = -3,          /* the PTX text does not parse (message has line and column) */
    KEMU_EUNSUPPORTED = -4,  /* an instruction or feature the emulator does not implement */
    KEMU_ENOTFOUND = -5,     /* no function or global variable of that name */
    KEMU_EADDRESS = -6,      /* a kernel accessed memory outside every allocation */
    KEMU_EMISALIGNED = -7,   /* a kernel access was not aligned to its size */
    KEMU_ETRAP = -8,         /* the kernel executed trap or brkpt */
    KEMU_ERESOURCES = -9,    /* launch too big: shared or local memory, or more than 1 GiB
                                of emulator state (registers, local memory) per block */
    KEMU_EDEADLOCK = -10,    /* threads wait at a barrier or warp-synchronous instruction
                                that the other threads never reach */
    KEMU_ELIMIT = -11,       /* the launch's instruction budget ran out (kemu_launch_config) */
    KEMU_ECANCELLED = -12,   /* the launch's cancel flag was set */
    KEMU_EPARAM = -13,       /* parameter block of the wrong size */
};

typedef struct kemu_error {
    int code;
    char message[384];
} kemu_error;

/* Static description of an error code. */
const char *kemu_strerror(int code);

/* The CUresult a CUDA driver returns for the same failure (CUDA_SUCCESS = 0,
 * CUDA_ERROR_ILLEGAL_ADDRESS = 700, ...), as a plain integer. */
int kemu_cuda_result(int code);

typedef uint64_t kemu_devptr;
typedef struct kemu_device kemu_device;
typedef struct kemu_module kemu_module;
typedef struct kemu_function kemu_function;

/* ---- Device ------------------------------------------------------------------------- */

typedef struct kemu_device_config {
    unsigned workers;          /* threads that run the blocks of one launch, the caller's
                                  thread included; 0 = one per online CPU, 1 = no pool */
    uint64_t memory_bytes;     /* device memory limit; 0 = 16 GiB */
    uint32_t max_shared_bytes; /* shared memory per block, static + dynamic; 0 = 227 KiB */
    uint32_t max_local_bytes;  /* local memory per thread; 0 = 512 KiB */
    uint32_t residue_word;     /* what a block's shared and local memory hold as it starts,
                                  every word: 0 = zeroed; else an emulated GPU's leftovers
                                  of earlier kernels (a GPU clears neither), for the tests
                                  of what the fencing pass scrubs */
} kemu_device_config;

/* Creates a device; cfg may be NULL for the defaults. */
int kemu_device_create(const kemu_device_config *cfg, kemu_device **out, kemu_error *err);

/* Frees the device, its memory and its modules. No call on it may be running. */
void kemu_device_destroy(kemu_device *dev);

/* Worker threads per launch (the resolved config.workers). */
unsigned kemu_device_workers(const kemu_device *dev);

/* ---- Device memory ------------------------------------------------------------------- */

/* Allocates bytes (> 0) of zeroed device memory, 256-byte aligned. Addresses are never
 * handed out twice while the range of 2^44 bytes for them lasts, so a stale pointer
 * faults instead of reaching newer memory. */
int kemu_mem_alloc(kemu_device *dev, size_t bytes, kemu_devptr *out, kemu_error *err);

/* A range of device addresses [lo, hi) that allocations must lie in (a tenant's window). */
typedef struct kemu_range {
    uint64_t lo, hi;
} kemu_range;

/* The device addresses allocations take: [*base, *base + *size), size a power of two and
 * base a multiple of it. */
void kemu_mem_span(uint64_t *base, uint64_t *size);

/* kemu_mem_alloc inside the range in (NULL: anywhere); KEMU_ENOMEM when it has no room. */
int kemu_mem_alloc_in(kemu_device *dev, const kemu_range *in, size_t bytes, kemu_devptr *out,
                      kemu_error *err);

/* Frees an allocation; ptr must be its start. Launches running now keep using it safely. */
int kemu_mem_free(kemu_device *dev, kemu_devptr ptr, kemu_error *err);

/* Makes bytes of the caller's memory at host reachable by kernels, at a device address in
 * `in` (NULL: anywhere) stored in *out; the memory stays the caller's, who must keep it
 * until kemu_host_unmap and the end of every launch that may use it. */
int kemu_host_map(kemu_device *dev, const kemu_range *in, void *host, size_t bytes,
                  kemu_devptr *out, kemu_error *err);
/* Undoes kemu_host_map; ptr is the device address it gave. */
int kemu_host_unmap(kemu_device *dev, kemu_devptr ptr, kemu_error *err);

/* The allocation holding ptr: its start and size (cuMemGetAddressRange). */
int kemu_mem_range(kemu_device *dev, kemu_devptr ptr, kemu_devptr *base, size_t *bytes,
                   kemu_error *err);

/* Bytes free under the limit and the limit itself. */
void kemu_mem_info(kemu_device *dev, uint64_t *free_bytes, uint64_t *total_bytes);

/* Copies; every device range must lie inside one allocation. */
int kemu_memcpy_htod(kemu_device *dev, kemu_devptr dst, const void *src, size_t bytes,
                     kemu_error *err);
int kemu_memcpy_dtoh(kemu_device *dev, void *dst, kemu_devptr src, size_t bytes,
                     kemu_error *err);
int kemu_memcpy_dtod(kemu_device *dev, kemu_devptr dst, kemu_devptr src, size_t bytes,
                     kemu_error *err);

/* Sets count elements of 1, 2 or 4 bytes (elem_bytes) to value (cuMemsetD8/D16/D32);
 * dst must be aligned to elem_bytes. */
int kemu_memset(kemu_device *dev, kemu_devptr dst, uint32_t value, unsigned elem_bytes,
                size_t count, kemu_error *err);

/* ---- Modules and functions ------------------------------------------------------------ */

struct kptx_module;

/* Loads PTX text (len bytes, need not be NUL-terminated): parses it, allocates and
 * initialises its .global and .const variables and compiles every .entry. Malformed PTX
 * gets KEMU_EPTX. Instructions the emulator does not know do not fail the load; a launch
 * that reaches one fails with KEMU_EUNSUPPORTED naming it (kemu_function_info tells). */
int kemu_module_load(kemu_device *dev, const char *ptx, size_t len, kemu_module **out,
                     kemu_error *err);

/* kemu_module_load with the module's variables inside the range in (NULL: anywhere). */
int kemu_module_load_in(kemu_device *dev, const kemu_range *in, const char *ptx, size_t len,
                        kemu_module **out, kemu_error *err);

/* Same from a parsed module, e.g. one kptx_slice_module added sliced entries to. The
 * emulator keeps its own copy (printed and re-parsed): m stays the caller's. */
int kemu_module_load_parsed(kemu_device *dev, const struct kptx_module *m,
                            kemu_module **out, kemu_error *err);

/* Unloads a module and frees its variables. No launch of it may be running. */
void kemu_module_unload(kemu_module *mod);

/* Device address and size of a module-scope .global or .const variable. */
int kemu_module_get_global(kemu_module *mod, const char *name, kemu_devptr *addr,
                           size_t *bytes, kemu_error *err);

/* The .entry called name; it lives as long as its module. */
int kemu_module_get_function(kemu_module *mod, const char *name, kemu_function **out,
                             kemu_error *err);

typedef struct kemu_param_desc {
    uint32_t offset;   /* byte offset in the parameter block */
    uint32_t size;     /* bytes */
} kemu_param_desc;

typedef struct kemu_function_info {
    const char *name;
    unsigned n_params;
    const kemu_param_desc *params;   /* n_params entries, owned by the function */
    uint32_t param_bytes;            /* size of the whole parameter block */
    uint32_t static_shared_bytes;    /* .shared variables of the kernel and its module */
    uint32_t local_bytes;            /* per thread: .local variables and call frames */
    uint32_t registers;              /* register slots per thread (informational) */
    uint32_t max_threads_per_block;  /* 1024, or less from .maxntid/.reqntid */
    const char *unsupported;         /* NULL, or the first instruction or feature the
                                        emulator cannot run, with its line */
} kemu_function_info;

/* Describes a function (pointers stay valid while its module is loaded). */
void kemu_function_info_get(const kemu_function *fn, kemu_function_info *info);

/* ---- Launches ------------------------------------------------------------------------ */

typedef struct kemu_launch_stats {
    uint64_t thread_instructions;  /* instructions times the threads that executed them */
    uint64_t warp_instructions;    /* instructions issued per warp */
} kemu_launch_stats;

typedef struct kemu_launch_config {
    unsigned grid[3];                /* blocks per dimension, each >= 1 */
    unsigned block[3];               /* threads per dimension, product <= 1024 */
    uint32_t dynamic_shared_bytes;
    const void *params;              /* the parameter block, laid out as the function's
                                        kemu_param_desc say (what cuLaunchKernel builds) */
    size_t params_bytes;             /* must equal kemu_function_info.param_bytes */
    uint64_t max_warp_instructions;  /* per warp; 0 = unlimited. Exceeding: KEMU_ELIMIT */
    const volatile int *cancel;      /* when non-NULL and it becomes non-zero, the launch
                                        stops soon with KEMU_ECANCELLED */
    kemu_launch_stats *stats;        /* filled when non-NULL */
} kemu_launch_config;

/* Runs fn over the grid and returns when it has finished: 0, or the first fault
 * (KEMU_EADDRESS, KEMU_EMISALIGNED, KEMU_ETRAP, KEMU_EUNSUPPORTED, KEMU_EDEADLOCK, ...)
 * with a message naming the kernel, the instruction, its line, the block and the thread.
 * Blocks after a fault may or may not have run. */
int kemu_launch(kemu_function *fn, const kemu_launch_config *cfg, kemu_error *err);

/* Builds a parameter block from one pointer per parameter (cuLaunchKernel's
 * kernelParams) into buf of buf_bytes (>= param_bytes). */
int kemu_params_pack(const kemu_function *fn, void *const *values, void *buf,
                     size_t buf_bytes, kemu_error *err);

/* Runs the slice [first_block, first_block + count) of a kernel: sliced is the
 * "<entry>__kslice" variant made by kptx_slice_module, cfg holds the ORIGINAL grid, block,
 * dynamic shared memory and the original entry's parameter block; the emulator appends
 * the slice parameters (first block, original grid) and launches grid (count, 1, 1). */
int kemu_launch_slice(kemu_function *sliced, uint32_t first_block, uint32_t count,
                      const kemu_launch_config *cfg, kemu_error *err);

#ifdef __cplusplus
}
#endif

#endif
