/* Internals of the sim backend, shared by its files. */
#ifndef KERNELET_SCHED_SIM_INTERNAL_H
#define KERNELET_SCHED_SIM_INTERNAL_H

#include <stdint.h>

#include "kernelet/range_table.h"
#include "sim.h"

/* The truth about one kernel entry. */
typedef struct sim_kernel {
    char *entry;
    kbackend_profile p;
    int failing;
} sim_kernel;

/* A kernel with one launch shape: what the model needs. */
typedef struct sim_variant {
    unsigned kernel;        /* index into ksim.kernels */
    kmodel_kernel k;
    double block_insts;     /* warp instructions per block */
    unsigned max_blocks;    /* blocks per SM alone */
    double alone_ipc;       /* IPC alone at max_blocks */
} sim_variant;

struct kbackend_function {
    unsigned kernel;
    int sliced;
};

/* The shape of a module variable: its array dimensions (the vector width of .v2/.v4 last)
 * and the scalars they hold. */
typedef struct sim_var_shape {
    uint64_t dims[5];       /* dims[0] == 0 while an [] array's size is not known */
    unsigned n_dims;
    unsigned scalar;        /* bytes of one scalar: 1, 2, 4, 8 or 16 */
    int is_float;           /* .f32 or .f64 (every other type holds integer bits) */
} sim_var_shape;

/* A module-scope variable (.global or .const) and where the sim placed it. */
typedef struct sim_var {
    char *name;
    uint64_t bytes;
    uint64_t addr;          /* a sim allocation while the module is loaded */
    sim_var_shape shape;
    size_t init_pos;        /* where its initialiser starts in the text (after '='), */
    unsigned init_line;     /* on which line; */
    int has_init;           /* whether it has one */
} sim_var;

/* What the sim reads of a module's text (sim_scan.c). */
typedef struct sim_scan {
    char **entries;         /* names of the .entry directives */
    unsigned n_entries;
    size_t cap_entries;
    sim_var *vars;          /* module variables that hold memory, in text order */
    unsigned n_vars;
    size_t cap_vars;
} sim_scan;

struct kbackend_module {
    sim_scan text;
    struct kbackend_function *fns;     /* one per entry */
};

typedef enum { JOB_LAUNCH, JOB_COPY, JOB_PROFILE } job_kind;
typedef enum { COPY_H2D, COPY_D2H, COPY_D2D, COPY_SET } copy_kind;

typedef struct cohort {
    uint64_t n;             /* blocks that started together */
    double end;             /* the launch's progress at which they finish */
} cohort;

typedef struct job {
    job_kind kind;
    uint64_t seq;
    kbackend_done_fn done;
    void *user;
    struct job *next;       /* lane, engine or profile queue */
    double submit_ns, start_ns;
    int status;
    /* launch */
    unsigned variant, cap, lane;
    uint64_t first, count, tag;
    double ready_ns;        /* earliest start (set once it heads its lane) */
    double slice_start_ns;  /* a slice's last launch (wave_launches): when its first wave
                               started, or -1 */
    uint64_t unstarted, resident;
    double progress;        /* work per resident block done since activation, in blocks */
    double rate;            /* progress per ns */
    cohort *cohorts;
    size_t c_head, c_len, c_cap;
    /* copy */
    copy_kind ckind;
    uint64_t dst, src, bytes;
    void *host;
    const void *chost;
    uint8_t value;
    double end_ns;
    /* profile */
    kbackend_profile *out;
} job;

typedef struct sim_alloc {
    krange r;                   /* [addr, addr + size): first, for the range table */
    unsigned char *data;
} sim_alloc;

typedef struct rate_entry {
    uint64_t key[2];
    double ipc[KMODEL_MAX_KERNELS];
    int used;
} rate_entry;

typedef struct tag_ranges {
    uint64_t tag;
    uint64_t (*r)[2];       /* first, count */
    size_t n, cap;
} tag_ranges;

typedef struct lane {
    job *head, *tail;       /* head is the running or next launch */
} lane;

struct ksim {
    ksim_config cfg;
    int lost;               /* ksim_lose: every op refused, completions KBACKEND_ELOST */
    kmodel_ctx *model;
    double now;             /* ns */
    uint64_t seq;
    sim_kernel *kernels;
    unsigned n_kernels;
    size_t cap_kernels;
    sim_variant *variants;
    unsigned n_variants;
    size_t cap_variants;
    rate_entry *rates;
    size_t n_rates, cap_rates;   /* open addressing, cap a power of two */
    lane *lanes;
    job **active;           /* activated launches in activation order */
    unsigned n_active;
    job *engine_head[3], *engine_tail[3];
    job *profiles_head, *profiles_tail;
    uint64_t in_flight;     /* accepted jobs not yet completed */
    krange_table allocs;        /* sim_alloc */
    uint64_t next_addr;         /* bump pointer of domain 0 (below the windows) */
    kbackend_windows *windows;  /* of the other domains (first fit inside) */
    tag_ranges *tags;
    size_t n_tags, cap_tags;     /* open addressing by tag */
    ksim_stats stats;
};

/* sim_rates.c */
int sim_variant_of(ksim *s, unsigned kernel, const unsigned block[3], unsigned smem,
                   unsigned *out, kbackend_error *err);
int sim_rates(ksim *s, unsigned n, const unsigned variants[], const unsigned counts[],
              double ipc[], kbackend_error *err);
int sim_fits(ksim *s, unsigned n, const unsigned variants[], const unsigned counts[]);
void sim_rates_reset(ksim *s);
int sim_kernel_refresh(ksim *s, unsigned kernel, kbackend_error *err);

/* sim_scan.c: the entries and module variables of PTX text; KBACKEND_EMODULE with the line
 * for text it cannot read, or with neither entries nor variables */
int sim_scan_ptx(const char *ptx, size_t len, sim_scan *out, kbackend_error *err);
void sim_scan_free(sim_scan *sc);
/* Writes the initial value of sc->vars[i] into dst (its bytes, zeroed by the caller), from
 * the text sim_scan_ptx read; a variable's address in an initialiser is taken from the
 * vars' addr fields. */
int sim_scan_init(const char *ptx, size_t len, const sim_scan *sc, unsigned i,
                  unsigned char *dst, kbackend_error *err);

/* sim_module.c: modules, functions, module variables */
int sim_kernel_index(const ksim *s, const char *entry, size_t len);
int sim_module_load(void *state, uint32_t domain, const char *ptx, size_t len,
                    kbackend_module **out,
                    kbackend_error *err);
int sim_module_unload(void *state, kbackend_module *m, kbackend_error *err);
int sim_function_get(void *state, kbackend_module *m, const char *entry, kbackend_function **out,
                     kbackend_func_info *info, kbackend_error *err);
int sim_global_get(void *state, kbackend_module *m, const char *name, kbackend_devptr *addr,
                   uint64_t *bytes, kbackend_error *err);

/* sim_memory.c */
sim_alloc *sim_find_alloc(ksim *s, uint64_t addr, uint64_t bytes);
/* Domains other than 0 allocate in their windows, in [SIM_WINDOW_SPAN_BASE, + SPAN). */
#define SIM_WINDOW_SPAN_BASE (1ull << 46)
#define SIM_WINDOW_SPAN (1ull << 46)
int sim_mem_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                  kbackend_error *err);
int sim_domain_window(void *state, uint32_t domain, kbackend_window *out, kbackend_error *err);
void sim_domain_release(void *state, uint32_t domain);
int sim_mem_free(void *state, kbackend_devptr ptr, kbackend_error *err);
void sim_mem_release_all(ksim *s);
void sim_copy_apply(ksim *s, job *j);

/* sim_copy.c */
int sim_copy_h2d(void *state, kbackend_devptr dst, const void *src, uint64_t bytes,
                 kbackend_done_fn done, void *user, kbackend_error *err);
int sim_copy_d2h(void *state, void *dst, kbackend_devptr src, uint64_t bytes,
                 kbackend_done_fn done, void *user, kbackend_error *err);
int sim_copy_d2d(void *state, kbackend_devptr dst, kbackend_devptr src, uint64_t bytes,
                 kbackend_done_fn done, void *user, kbackend_error *err);
int sim_memset_d8(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                  kbackend_done_fn done, void *user, kbackend_error *err);
void sim_engine_start(ksim *s, unsigned engine);

/* sim_engine.c */
int sim_launch(void *state, const kbackend_slice *sl, kbackend_done_fn done, void *user,
               kbackend_error *err);
int sim_progress(void *state, uint64_t until_ns, kbackend_error *err);
job *sim_job_new(ksim *s, job_kind kind, kbackend_done_fn done, void *user);
void sim_job_free(job *j);
void sim_queue_push(job **head, job **tail, job *j);

/* sim_coverage.c */
int sim_coverage_add(ksim *s, uint64_t tag, uint64_t first, uint64_t count);
void sim_coverage_free(ksim *s);

/* sim_backend.c: the refusal of every op after ksim_lose. */
int sim_lost(kbackend_error *err);

#endif
