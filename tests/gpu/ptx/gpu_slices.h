/* Shared parts of ptx-slice-gpu: loading sliced modules, building parameter blocks from
 * the PTX parameter layout, launching whole grids and slicing plans, timing. */
#ifndef PTX_GPU_SLICES_H
#define PTX_GPU_SLICES_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/ptx.h"

/* Prints a failed CUDA call (what, for whom) and returns true when r is an error. */
bool cu_failed(CUresult r, const char *what, const char *who);

/* A PTX module loaded with its sliced variants: the whole module text, sliced by the
 * library, JIT-compiled by the driver (original and sliced entries in one module). */
typedef struct sliced_module {
    CUmodule mod;
    kptx_module *ptx;
} sliced_module;

bool sliced_module_load(const char *path, sliced_module *sm);
void sliced_module_unload(sliced_module *sm);

/* An entry and its sliced variant, with both parameter layouts. */
typedef struct kernel_pair {
    const char *name;
    CUfunction whole, sliced;
    kptx_kernel_info info, sinfo;
} kernel_pair;

bool kernel_pair_get(const sliced_module *sm, const char *name, kernel_pair *k);
void kernel_pair_clear(kernel_pair *k);

typedef struct launch_shape {
    unsigned grid[3], block[3];
    unsigned shared;    /* dynamic shared memory bytes */
} launch_shape;

uint32_t shape_blocks(const launch_shape *s);

/* params: the entry's parameter block (info.param_bytes bytes). */
bool launch_whole(const kernel_pair *k, const uint8_t *params, const launch_shape *s,
                  CUstream stream);
/* The grid as slices of sizes[0..n) blocks in linear order, each a 1-D launch of the
 * sliced entry with the slice parameters appended. */
bool launch_slices(const kernel_pair *k, const uint8_t *params, const launch_shape *s,
                   const uint32_t *sizes, unsigned n, CUstream stream);

/* Slicing plans: a random partition of total blocks (sizes log-uniform from 1 block to the
 * whole grid; at most max slices, the last one takes what is left), and slices of a fixed
 * size. Both return the number of slices. */
unsigned plan_random(uint64_t *rng, uint32_t total, uint32_t *sizes, unsigned max);
unsigned plan_uniform(uint32_t total, uint32_t size, uint32_t *sizes, unsigned max);

uint64_t rng_next(uint64_t *state);

/* Median of n values (sorts them). */
double median(double *v, unsigned n);

/* The three parts of the program; each returns the number of failures. */
int check_bench(const char *bench_dir, uint64_t seed, unsigned plans);
int check_corpus(const char *corpus_dir, uint64_t seed, unsigned plans);
int measure_overhead(const char *bench_dir, uint64_t seed, unsigned reps, const char *csv_path);

#endif
