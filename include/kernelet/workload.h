/* Benchmark kernels as the host harness sees them (library kernelet-workloads, bench/).
 *
 * Each of the paper's eight kernels (PC, SAD, SPMV, ST, MM, MRIQ, BS, TEA) is described by a
 * kw_kernel: where its PTX is, how to make a seeded input instance, its launch geometry and
 * how to verify an output against the CPU reference. The harness (kernelet-bench), the
 * emulator tests and the slicer tests use this to run the kernels through any executor
 * backend without knowing anything kernel-specific. The standalone CUDA programs in
 * bench/programs/ use the same kernel sources and CPU references.
 *
 * Buffers are plain host memory owned by the instance; the caller allocates device memory
 * of the same sizes, copies buffers marked copy_in, builds the parameter block from args
 * (replacing KW_ARG_BUFFER by the device address of that buffer), launches, copies back the
 * buffers marked copy_out into the instance's host buffers, then calls verify.
 */
#ifndef KERNELET_WORKLOAD_H
#define KERNELET_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KW_MAX_BUFFERS 8
#define KW_MAX_ARGS 16

/* Error codes (negative) returned by the functions below; 0 is success. */
enum {
    KW_OK = 0,
    KW_ENOMEM = -1,    /* host allocation failed */
    KW_EINVAL = -2,    /* bad argument (unknown size class, NULL pointer) */
    KW_EVERIFY = -3,   /* output does not match the CPU reference */
};

typedef enum {
    KW_SIZE_SMALL,     /* finishes in seconds on the CPU emulator */
    KW_SIZE_DEFAULT,   /* fills an H100 (132 SMs) with several waves of blocks */
} kw_size;

typedef enum {
    KW_ARG_BUFFER,     /* device address (u64) of buffers[value.buffer] */
    KW_ARG_U32,
    KW_ARG_U64,
    KW_ARG_F32,
    KW_ARG_F64,
} kw_arg_kind;

typedef struct {
    kw_arg_kind kind;
    union {
        unsigned buffer;
        uint32_t u32;
        uint64_t u64;
        float f32;
        double f64;
    } value;
} kw_arg;

typedef struct {
    void *host;        /* host copy: inputs before launch, outputs after copy-back */
    size_t size;       /* bytes */
    int copy_in;       /* copy host -> device before the launch */
    int copy_out;      /* copy device -> host after the launch, before verify */
} kw_buffer;

struct kw_kernel;

/* One launchable instance of a benchmark kernel with its inputs. */
typedef struct {
    const struct kw_kernel *kernel;
    kw_buffer buffers[KW_MAX_BUFFERS];
    unsigned n_buffers;
    kw_arg args[KW_MAX_ARGS];  /* in the order of the PTX entry's parameters */
    unsigned n_args;
    unsigned grid[3];
    unsigned block[3];
    unsigned dynamic_shared_bytes;
    void *priv;                /* kernel-specific state (reference output, sizes) */
} kw_instance;

typedef struct kw_kernel {
    const char *name;          /* short lower-case name: "pc", "sad", ..., "tea" */
    const char *title;         /* "Tiny Encryption Algorithm" */
    const char *entry;         /* PTX .entry name (extern "C", unmangled) */
    const char *ptx_file;      /* file name of its PTX in the build's bench folder */
    /* Fills inst with seeded inputs of the given size class. */
    int (*create)(kw_instance *inst, kw_size size, uint64_t seed);
    /* Checks the copied-back outputs against the CPU reference; on mismatch returns
     * KW_EVERIFY and writes a one-line reason into why. */
    int (*verify)(kw_instance *inst, char *why, size_t why_len);
    /* Frees everything create allocated. */
    void (*destroy)(kw_instance *inst);
} kw_kernel;

/* All benchmark kernels, in the paper's table order; *n receives the count. */
const kw_kernel *const *kw_kernels(size_t *n);

/* The kernel with that short name, or NULL. */
const kw_kernel *kw_find(const char *name);

/* Total number of thread blocks of an instance's launch (product of grid). */
uint64_t kw_total_blocks(const kw_instance *inst);

/* Reads a whole file (a kernel's PTX, say) into a NUL-terminated malloc'd buffer; *len
 * (may be NULL) gets its size. NULL when it cannot be read. */
char *kw_read_file(const char *path, size_t *len);

/* Packs the instance's arguments, buffers as dev[i] (the device address of buffers[i]),
 * each at its natural alignment: the parameter block of CU_LAUNCH_PARAM_BUFFER_POINTER.
 * out: room for 8 x KW_MAX_ARGS bytes. Returns its size, up to the end of the last
 * argument (what the entry takes; no padding after it). */
size_t kw_pack_args(const kw_instance *inst, const uint64_t dev[], unsigned char *out);

#ifdef __cplusplus
}
#endif

#endif
