/* Shared parts of backend-check, the GPU check of the cuda executor backend
 * (host-sched/backends/cuda/cuda_backend.h): completions, benchmark workloads through the backend's
 * ops, sliced PTX from the PTX library. */
#ifndef KERNELET_TESTS_GPU_BACKEND_CHECK_H
#define KERNELET_TESTS_GPU_BACKEND_CHECK_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda_backend.h"
#include "kernelet/workload.h"

#define BC_LANES 4

/* ---- completions ---- */

typedef struct bc_waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned done, failed;
} bc_waiter;

typedef struct bc_ticket {
    bc_waiter *w;
    int status;
    char msg[256];
    uint64_t start_ns, end_ns;
} bc_ticket;

void bc_waiter_init(bc_waiter *w);
void bc_done(void *user, const kbackend_completion *c);   /* user: a bc_ticket */
void bc_wait(bc_waiter *w, unsigned n);

/* ---- checks ---- */

/* Counts failed checks; prints each one. */
extern int bc_failures;
void bc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- PTX ---- */

/* The module text with the sliced variant of every sliceable entry (kptx_slice_module);
 * malloc'd; NULL with the reason in msg. */
char *bc_sliced_ptx(const char *ptx, size_t len, size_t *out_len, char *msg, size_t msglen);

/* The benchmark kernel's PTX from dir, sliced; malloc'd; NULL with the reason in msg. */
char *bc_kernel_ptx(const kw_kernel *k, const char *dir, size_t *len, char *msg,
                    size_t msglen);

/* ---- a benchmark workload through the backend ---- */

typedef struct bc_run {
    kbackend be;
    const kw_kernel *k;
    kw_instance in;
    int have_instance;
    kbackend_devptr dev[KW_MAX_BUFFERS];
    unsigned char params[512];  /* packed with natural alignment, padded to 8 like a struct */
    size_t params_size;
    kbackend_module *mod;
    kbackend_function *fn, *sliced;
    uint64_t total;             /* blocks */
} bc_run;

/* Creates the instance, loads the kernel's PTX (sliced) from dir, allocates, copies the
 * inputs in and zeroes the outputs; 0, or non-zero with the reason in msg. */
int bc_prepare(bc_run *r, kbackend be, const kw_kernel *k, const char *dir, kw_size size,
               char *msg, size_t msglen);

/* The launch of the whole kernel (fn, grid, params) on lane 0. */
kbackend_slice bc_whole(const bc_run *r);

/* Zeroes the outputs; copies them back and verifies them (0 when they match). */
int bc_zero_outputs(bc_run *r, char *msg, size_t msglen);
int bc_verify(bc_run *r, char *msg, size_t msglen);

/* Runs blocks [first, total) as random slices of 1 to max_slice blocks over every lane and
 * waits; 0, or non-zero with the reason in msg. */
int bc_run_random_slices(bc_run *r, uint64_t first, uint64_t max_slice, unsigned seed,
                         char *msg, size_t msglen);

void bc_release(bc_run *r);

/* Runs r whole and waits; 0, or 1 with the reason in msg. */
int bc_run_whole(bc_run *r, char *msg, size_t msglen);

/* Profiles r (its sliced variant), then runs the blocks the profile did not; *p gets the
 * profile, *ms how long the profile took. 0, or 1 with the reason in msg. */
int bc_profile_and_finish(bc_run *r, kbackend_profile *p, double *ms, char *msg,
                          size_t msglen);

/* ---- the parts of the check (backend_bench.c) ---- */

/* Each benchmark kernel: whole, random slices, profile (with launches deferred behind it),
 * slice overhead measured against the profile's estimate. Rows go to out and csv. */
void bc_check_bench_kernels(kbackend be, const char *dir, FILE *csv);

/* A compute and a memory kernel side by side (trial op) at a few block ratios. */
void bc_check_trial(kbackend be, const char *dir, FILE *csv);

/* The model's split and co-run throughput of every pair of the benchmark kernels against
 * the trial op's measurement at that split (backend_pairs.c). */
void bc_check_pair_model(kbackend be, const char *dir, FILE *csv);

/* The scheduler on this backend (backend_sched.c): two tenants (tea, pc), fifo and
 * kernelet policies, profiles from the scheduler's H100 data file; outputs verified. */
void bc_check_sched(kbackend be, const char *dir, const char *profiles, FILE *csv);

#endif
