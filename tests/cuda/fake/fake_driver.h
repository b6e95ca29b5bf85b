/* A fake CUDA driver (libcuda.so.1 for tests, tests/cuda/fake/): the part of the Driver API
 * the cuda backend calls, on the CPU, so that the backend's threads, queues, parameter
 * blocks, slices, errors and timing run without a GPU.
 *
 * - One device, described as an H100 (fake_h100_attribute). Device memory is host memory.
 * - Modules are parsed with the PTX library: syntax errors fail the load with a JIT-style
 *   log; parameter layouts (cuFuncGetParamInfo) are the PTX's. An ELF image is a cubin,
 *   read with kernelet/cubin.h (its layouts, its variables); its kernels run by name too.
 * - Work runs when it is submitted, in submission order; each stream has a virtual clock:
 *   a launch takes FAKE_LAUNCH_NS plus FAKE_BLOCK_NS per block, events take the stream's
 *   time, cuStreamWaitEvent moves a stream's clock forward. So timings are exact.
 * - Kernels do nothing except these entries (and their "__kslice" variants, whose four
 *   extra parameters are read from the block the backend built):
 *     count_blocks*(.u64 counts, ...) counts[linear block id] += 1 (u32) for every block
 *     fault(...)                     a device fault: from the next wait (event, stream or
 *                                    context synchronisation) on, every call fails with
 *                                    CUDA_ERROR_ILLEGAL_ADDRESS until cuDevicePrimaryCtxReset
 *     stall(.u32 ms)                 a kernel that runs ms of real time: an event recorded
 *                                    after it on its stream is waited for that long
 *                                    (cuEventSynchronize), so that watchdogs can be tested
 * - Module-scope .global and .const variables (not .extern) the text still declares (the
 *   backend moves a domain's .global ones into its window first) get zeroed host memory of their
 *   size (element size from the type's bit count, times .vN and the array dimensions) for
 *   each load; cuModuleGetGlobal gives it. Kernels do not touch them.
 * - A launch whose packed parameter block is not exactly the kernel's size is refused with
 *   CUDA_ERROR_INVALID_VALUE, as the real driver does.
 * - Virtual memory management (fake_vmm.c): granularity 2 MiB; cuMemAddressReserve keeps
 *   host address space (aligned as asked) without access, cuMemCreate makes a memfd full
 *   of 0xa5 bytes (last user's data), cuMemMap puts it at the address, cuMemSetAccess
 *   opens it; copies and memsets then reach it like cuMemAlloc's memory.
 * - Tensor maps (fake_tensor_map.c): encoded as 64-bit words at the FAKE_TMAP_* indices
 *   (address; kind << 16 | rank << 8 | data type; the global dimensions); a misaligned
 *   address, a rank outside 1..5 or a box side outside 1..256 is CUDA_ERROR_INVALID_VALUE.
 */
#ifndef KERNELET_TESTS_FAKE_DRIVER_H
#define KERNELET_TESTS_FAKE_DRIVER_H

#include <stdint.h>

#include <cuda.h>

#define FAKE_LAUNCH_NS 1000.0
#define FAKE_BLOCK_NS 10.0
#define FAKE_DEVICE_NAME "NVIDIA H100 80GB HBM3"
enum { FAKE_TMAP_ADDRESS = 0, FAKE_TMAP_SHAPE = 1, FAKE_TMAP_DIMS = 2 };

/* The value an H100 SXM reports for attr; 0, or 1 when the fake has no such attribute. */
int fake_h100_attribute(CUdevice_attribute attr, int *value);

typedef struct fake_stats {
    unsigned module_loads;      /* successful cuModuleLoadData(Ex) */
    unsigned launches;          /* successful cuLaunchKernel */
    unsigned ctx_resets;        /* cuDevicePrimaryCtxReset */
    unsigned live_allocations;
    unsigned last_grid[3];      /* of the last successful launch */
    size_t last_param_bytes;
    unsigned event_records;     /* cuEventRecord calls */
    unsigned event_queries;     /* cuEventQuery calls */
    unsigned event_syncs;       /* cuEventSynchronize calls */
    unsigned host_registered;   /* host ranges registered now (cuMemHostRegister) */
    unsigned last_cluster[3];   /* of the last cuLaunchKernelEx */
    unsigned last_cooperative;
    unsigned last_register_flags;
    size_t stack_bytes;         /* CU_LIMIT_STACK_SIZE (the driver's 1024 until set) */
} fake_stats;

/* Exported by the fake library for the tests that link it. */
/* What the backend's probe of where stacks start reads (0: the H100's 0xfffdc0). */
void fake_driver_set_stack_top(uint64_t sp);
void fake_driver_stats(fake_stats *out);
/* The next n cuEventQuery calls answer CUDA_ERROR_NOT_READY (work still running, as far as
 * a poller can tell); a cuEventSynchronize ends that. */
void fake_driver_events_busy(unsigned n);

/* A copy (free()) of the text of the last PTX module loaded, NULL when none: what the
 * backend gave the JIT after its own rewrites. */
char *fake_driver_last_ptx(void);

typedef struct fake_vmm_stats {
    unsigned reservations;      /* address ranges reserved and not freed */
    unsigned handles;           /* physical allocations not released */
    unsigned mappings;          /* mappings not unmapped */
} fake_vmm_stats;

void fake_vmm_get_stats(fake_vmm_stats *out);
/* on: cuMemSetAccess takes one mapping at a time (its range exactly one cuMemMap's), as a
 * stricter driver might; off (the default): any mapped range. */
void fake_vmm_one_access_per_map(int on);
/* Every cuMemMap takes us microseconds more (0: none), as a real one takes time. */
void fake_vmm_map_delay(unsigned us);


#endif
