/* The emu backend of kerneletd: the executor interface (include/kernelet/executor.h) over
 * the PTX emulator (include/kernelet/emu.h, library kernelet-emu in host-sched/emu/). The emulator's copies and launches are
 * synchronous; the executor's must not wait, so submissions go to a worker thread that
 * runs them in order and reports each through its done callback. (Launches of different
 * lanes may run concurrently on a GPU; one worker in order satisfies every ordering the
 * scheduler relies on, and the emulator spreads each launch's blocks over its own pool.)
 *
 * The device it reports is Hopper-shaped (compute capability 9.0, 132 SMs), so that the
 * scheduler's model and the fatbin entry selection see what the GPU machine has. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "emu_backend.h"
#include "emu_control.h"
#include "emu_watchdog.h"
#include "kernelet/emu.h"
#include "kernelet/ptx.h"

enum job_kind { JOB_H2D, JOB_D2H, JOB_D2D, JOB_MEMSET, JOB_LAUNCH };

struct job {
    struct job *next;
    enum job_kind kind;
    kbackend_devptr dst_dev, src_dev;
    void *dst_host;
    const void *src_host;
    uint64_t bytes;
    uint8_t value;
    kbackend_slice slice;          /* params point at the copy below */
    void *params;
    char tenant[64];               /* the slice's tenant, for the operator's log */
    kbackend_done_fn done;
    void *user;
};

struct emu_backend {
    kemu_device *dev;
    pthread_t worker;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_cond_t idle;           /* signalled when the queue empties and no job runs */
    struct job *head, *tail;
    bool busy;                     /* the worker is running a job */
    int stop;
    volatile int cancel;           /* cancel_all: every job fails from now on */
    volatile int stop_launch;      /* the running launch's stop flag (the emulator polls
                                      it): set by cancel_all or the watchdog */
    struct emu_watchdog *watchdog; /* the tenants' kernel time limits */
    kd_emu_note_fn note;           /* tells the operator of a fenced kernel's fault */
    void *note_user;
    kbackend_windows *windows;     /* the upper half of the emulator's addresses, one
                                      window per domain; domain 0 has the lower half */
    emu_control *control;          /* the domains' control words, in the lower half */
    struct host_mapping *hosts;    /* host_register's ranges (under lock) */
    size_t n_hosts;
    struct emu_reservation *reservations;   /* vmm_reserve's (under lock) */
    size_t n_reservations;
};

/* Virtual memory management (executor.h, vmm_*). The emulator gives each reservation its
 * own memory (anonymous, reserved lazily by the kernel: pages cost only once touched) at
 * an aligned address of domain 0's half; physical handles are sizes, and a mapping only
 * checks that it lies inside a reservation. So the bytes of a handle are those of where
 * it is mapped: a handle mapped twice is not shared memory here, and unmapped parts of a
 * reservation read as zeros instead of faulting (the GPU's behaviour is the cuda
 * backend's). */
struct emu_reservation {
    kemu_devptr va, mapped_at;      /* the aligned start; where the emulator mapped it */
    uint64_t bytes, span;
    void *mem;
};

/* A range of the daemon's memory that kernels reach at dev (host_register). */
struct host_mapping {
    void *host;
    kemu_devptr dev;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int from_kemu(int code, const kemu_error *e, kbackend_error *err)
{
    int k = code == KEMU_ENOMEM ? KBACKEND_EDEVMEM
            : code == KEMU_ENOTFOUND ? KBACKEND_ENOTFOUND
            : code == KEMU_EPTX ? KBACKEND_EMODULE
            : code == KEMU_EUNSUPPORTED ? KBACKEND_EUNSUPPORTED
            : code == KEMU_EINVAL || code == KEMU_EPARAM ? KBACKEND_EINVAL
            : KBACKEND_ELAUNCH;
    return kbackend_fail(err, k, "%s", e->message[0] ? e->message : kemu_strerror(code));
}

/* ---- the worker ------------------------------------------------------------------------ */

static int run_launch(struct emu_backend *b, struct job *j, kemu_error *e)
{
    const kbackend_slice *s = &j->slice;
    kemu_launch_config cfg = {
        .grid = {s->grid[0], s->grid[1], s->grid[2]},
        .block = {s->block[0], s->block[1], s->block[2]},
        .dynamic_shared_bytes = s->smem,
        .params = j->params,
        .params_bytes = s->params_size,
        .cancel = &b->stop_launch,
    };

    if (s->sliced)
        return kemu_launch_slice((kemu_function *)s->fn, (uint32_t)s->first, (uint32_t)s->count,
                                 &cfg, e);
    return kemu_launch((kemu_function *)s->fn, &cfg, e);
}

/* A launch under its tenant's time limit; a launch that the watchdog stopped gets a
 * message that says so (the server answers it as CUDA's launch timeout). */
static int run_timed_launch(struct emu_backend *b, struct job *j, kemu_error *e)
{
    uint64_t limit = j->slice.time_limit_ns;
    int rc;

    pthread_mutex_lock(&b->lock);
    b->stop_launch = b->cancel;
    pthread_mutex_unlock(&b->lock);
    /* armed without a limit too: the operator may give one while it runs */
    emu_watchdog_arm(b->watchdog, &b->stop_launch, j->slice.domain, limit);
    rc = run_launch(b, j, e);
    if (emu_watchdog_disarm(b->watchdog, &limit) && rc == KEMU_ECANCELLED)
        snprintf(e->message, sizeof(e->message),
                 "kernel stopped: it ran past its tenant's time limit of %.3g s per launch",
                 (double)limit / 1e9);
    return rc;
}

/* A launch, and then what its fenced kernel's trap or assert left in the fault word: the
 * launch fails with a message that names it, the device goes on. */
static int run_checked_launch(struct emu_backend *b, struct job *j, kemu_error *e)
{
    int rc = run_timed_launch(b, j, e);
    uint32_t fault = j->slice.domain ? emu_control_take_fault(b->control, j->slice.domain) : 0;
    kemu_function_info info;

    if (rc || !fault)
        return rc;
    kemu_function_info_get((const kemu_function *)j->slice.fn, &info);
    snprintf(e->message, sizeof(e->message), "%s: device %s (the launch ended; the device "
             "goes on)", info.name, kptx_fault_name(fault));
    if (b->note) {
        char note[sizeof(e->message) + 96];
        snprintf(note, sizeof(note), "tenant '%s': %s", j->tenant[0] ? j->tenant : "?",
                 e->message);
        b->note(b->note_user, note);
    }
    return KEMU_ETRAP;
}

static void run(struct emu_backend *b, struct job *j)
{
    kemu_error e = {0};
    kbackend_completion c = {.msg = ""};
    int rc;

    c.start_ns = mono_ns();
    if (__atomic_load_n(&b->cancel, __ATOMIC_RELAXED)) {
        c.end_ns = c.start_ns;
        c.status = KBACKEND_ELAUNCH;
        c.msg = "cancelled: the device is shutting down";
        j->done(j->user, &c);
        return;
    }
    switch (j->kind) {
    case JOB_H2D: rc = kemu_memcpy_htod(b->dev, j->dst_dev, j->src_host, j->bytes, &e); break;
    case JOB_D2H: rc = kemu_memcpy_dtoh(b->dev, j->dst_host, j->src_dev, j->bytes, &e); break;
    case JOB_D2D: rc = kemu_memcpy_dtod(b->dev, j->dst_dev, j->src_dev, j->bytes, &e); break;
    case JOB_MEMSET: rc = kemu_memset(b->dev, j->dst_dev, j->value, 1, j->bytes, &e); break;
    default: rc = run_checked_launch(b, j, &e); break;
    }
    c.end_ns = mono_ns();
    if (rc) {
        c.status = j->kind == JOB_LAUNCH ? KBACKEND_ELAUNCH : KBACKEND_EINVAL;
        c.msg = e.message[0] ? e.message : kemu_strerror(rc);
    }
    j->done(j->user, &c);
}

static void *worker(void *arg)
{
    struct emu_backend *b = arg;

    pthread_mutex_lock(&b->lock);
    for (;;) {
        struct job *j;
        while (!b->head && !b->stop)
            pthread_cond_wait(&b->cond, &b->lock);
        if (!b->head)
            break;
        j = b->head;
        b->head = j->next;
        if (!b->head)
            b->tail = NULL;
        b->busy = true;
        pthread_mutex_unlock(&b->lock);
        run(b, j);
        free(j->params);
        free(j);
        pthread_mutex_lock(&b->lock);
        b->busy = false;
        if (!b->head)
            pthread_cond_broadcast(&b->idle);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static int submit(struct emu_backend *b, struct job *j)
{
    pthread_mutex_lock(&b->lock);
    j->next = NULL;
    if (b->tail)
        b->tail->next = j;
    else
        b->head = j;
    b->tail = j;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return 0;
}

static struct job *new_job(enum job_kind kind, kbackend_done_fn done, void *user, kbackend_error *err)
{
    struct job *j = calloc(1, sizeof(*j));

    if (!j) {
        kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
        return NULL;
    }
    j->kind = kind;
    j->done = done;
    j->user = user;
    return j;
}

/* ---- the ops ----------------------------------------------------------------------------- */

static void emu_domain_time_limit(void *state, uint32_t domain, uint64_t limit_ns)
{
    struct emu_backend *b = state;

    emu_watchdog_relimit(b->watchdog, domain, limit_ns);
}

static void emu_cancel_all(void *state)
{
    struct emu_backend *b = state;

    pthread_mutex_lock(&b->lock);
    __atomic_store_n(&b->cancel, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&b->stop_launch, 1, __ATOMIC_RELAXED);
    /* The running launch sees the flag within one time slice of its warps; queued jobs
     * then complete at once. */
    while (b->head || b->busy)
        pthread_cond_wait(&b->idle, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

static void emu_destroy(void *state)
{
    struct emu_backend *b = state;

    pthread_mutex_lock(&b->lock);
    b->stop = 1;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    pthread_join(b->worker, NULL);
    emu_watchdog_free(b->watchdog);
    emu_control_free(b->control);
    kemu_device_destroy(b->dev);
    kbackend_windows_free(b->windows);
    free(b->hosts);
    for (size_t i = 0; i < b->n_reservations; i++)
        munmap(b->reservations[i].mem, b->reservations[i].span);
    free(b->reservations);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    pthread_cond_destroy(&b->idle);
    free(b);
}

static int emu_device_info(void *state, kbackend_device_info *out, kbackend_error *err)
{
    struct emu_backend *b = state;
    uint64_t free_bytes, total;

    (void)err;
    kemu_mem_info(b->dev, &free_bytes, &total);
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "Kernelet PTX emulator");
    out->cc_major = 9;
    out->cc_minor = 0;
    out->sms = 132;
    out->max_warps_per_sm = 64;
    out->max_blocks_per_sm = 32;
    out->max_threads_per_block = 1024;
    out->regs_per_sm = 65536;
    out->max_regs_per_thread = 255;
    out->smem_per_sm = 233472;
    out->max_smem_per_block = 232448;
    out->clock_mhz = 1980;
    out->mem_bandwidth_gbs = 3350;
    out->total_mem = total;
    out->lanes = 4;
    /* the fencing pass's guard ends a runaway recursion before the emulator's stack fills,
     * as on the GPU */
    out->stack_bytes = KEMU_STACK_BYTES;
    out->local_top = KEMU_LOCAL_TOP;    /* local memory laid out as the H100's */
    return 0;
}

static uint64_t emu_now(void *state)
{
    (void)state;
    return mono_ns();
}

/* Where the memory of domain lives: its window, or for domain 0 the lower half. */
static int domain_range(struct emu_backend *b, uint32_t domain, kemu_range *out,
                        kbackend_error *err)
{
    uint64_t base, size;
    kbackend_window w;

    kemu_mem_span(&base, &size);
    if (domain == 0) {
        *out = (kemu_range){.lo = base, .hi = base + size / 2};
        return 0;
    }
    int rc = kbackend_windows_get(b->windows, domain, &w, err);
    if (!rc)
        *out = (kemu_range){.lo = w.base, .hi = w.base + w.size};
    return rc;
}

static int emu_domain_window(void *state, uint32_t domain, kbackend_window *out,
                             kbackend_error *err)
{
    struct emu_backend *b = state;

    if (!domain || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "domain 0 has no window");
    int rc = kbackend_windows_get(b->windows, domain, out, err);
    return rc ? rc : emu_control_words(b->control, domain, &out->cancel, &out->fault, err);
}

static void emu_domain_release(void *state, uint32_t domain)
{
    struct emu_backend *b = state;

    kbackend_windows_release(b->windows, domain);
    emu_control_release(b->control, domain);
}

/* Host memory at an address of domain 0's half: the emulator's addresses are not the
 * host's, so kernels reach it at *device, not at base (as without unified addressing). */
static int emu_host_register(void *state, void *base, uint64_t bytes, kbackend_devptr *device,
                             kbackend_error *err)
{
    struct emu_backend *b = state;
    kemu_error e = {0};
    kemu_range in;
    kemu_devptr d;
    int rc = domain_range(b, 0, &in, err);

    if (rc)
        return rc;
    if ((rc = kemu_host_map(b->dev, &in, base, bytes, &d, &e)))
        return from_kemu(rc, &e, err);
    pthread_mutex_lock(&b->lock);
    struct host_mapping *grown = realloc(b->hosts, (b->n_hosts + 1) * sizeof(*grown));
    if (grown) {
        b->hosts = grown;
        b->hosts[b->n_hosts++] = (struct host_mapping){.host = base, .dev = d};
    }
    pthread_mutex_unlock(&b->lock);
    if (!grown) {
        kemu_host_unmap(b->dev, d, NULL);
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    }
    if (device)
        *device = d;
    return 0;
}

static void emu_host_unregister(void *state, void *base)
{
    struct emu_backend *b = state;
    kemu_devptr d = 0;

    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->n_hosts && !d; i++)
        if (b->hosts[i].host == base) {
            d = b->hosts[i].dev;
            b->hosts[i] = b->hosts[--b->n_hosts];
        }
    pthread_mutex_unlock(&b->lock);
    if (d)
        kemu_host_unmap(b->dev, d, NULL);
}

static struct emu_reservation *reservation_at(struct emu_backend *b, kemu_devptr va,
                                              uint64_t bytes)
{
    for (size_t i = 0; i < b->n_reservations; i++) {
        struct emu_reservation *r = &b->reservations[i];
        if (va >= r->va && bytes <= r->bytes && va - r->va <= r->bytes - bytes)
            return r;
    }
    return NULL;
}

static int emu_vmm_reserve(void *state, uint64_t bytes, uint64_t align, kbackend_devptr *va,
                           kbackend_error *err)
{
    struct emu_backend *b = state;
    kemu_error e = {0};
    kemu_range in;
    uint64_t a = align > KBACKEND_VMM_GRANULE ? align : KBACKEND_VMM_GRANULE;
    uint64_t span = bytes + a;  /* room to start at a multiple of a */
    int rc = domain_range(b, 0, &in, err);

    if (rc)
        return rc;
    void *mem = mmap(NULL, span, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        return kbackend_fail(err, KBACKEND_EDEVMEM, "no memory for a reservation of %llu "
                             "bytes", (unsigned long long)bytes);
    kemu_devptr at;
    if ((rc = kemu_host_map(b->dev, &in, mem, span, &at, &e))) {
        munmap(mem, span);
        return from_kemu(rc, &e, err);
    }
    struct emu_reservation r = {.va = (at + a - 1) / a * a, .mapped_at = at, .bytes = bytes,
                                .span = span, .mem = mem};
    pthread_mutex_lock(&b->lock);
    struct emu_reservation *grown = realloc(b->reservations,
                                            (b->n_reservations + 1) * sizeof(*grown));
    if (grown) {
        b->reservations = grown;
        b->reservations[b->n_reservations++] = r;
    }
    pthread_mutex_unlock(&b->lock);
    if (!grown) {
        kemu_host_unmap(b->dev, at, NULL);
        munmap(mem, span);
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    }
    *va = r.va;
    return 0;
}

static void emu_vmm_free(void *state, kbackend_devptr va, uint64_t bytes)
{
    struct emu_backend *b = state;
    struct emu_reservation r = {0};

    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->n_reservations && !r.mem; i++)
        if (b->reservations[i].va == va && b->reservations[i].bytes == bytes) {
            r = b->reservations[i];
            b->reservations[i] = b->reservations[--b->n_reservations];
        }
    pthread_mutex_unlock(&b->lock);
    if (r.mem) {
        kemu_host_unmap(b->dev, r.mapped_at, NULL);
        munmap(r.mem, r.span);
    }
}

static int emu_vmm_create(void *state, uint64_t bytes, uint64_t *handle, kbackend_error *err)
{
    (void)state;
    if (!bytes)
        return kbackend_fail(err, KBACKEND_EINVAL, "0 bytes");
    *handle = bytes;    /* a handle is only its size here */
    return 0;
}

static void emu_vmm_release(void *state, uint64_t handle)
{
    (void)state;
    (void)handle;
}

static int emu_vmm_map(void *state, kbackend_devptr va, uint64_t bytes, uint64_t handle,
                       uint64_t offset, kbackend_error *err)
{
    struct emu_backend *b = state;

    if (offset > handle || bytes > handle - offset)
        return kbackend_fail(err, KBACKEND_EINVAL, "a mapping beyond its memory");
    pthread_mutex_lock(&b->lock);
    bool inside = reservation_at(b, va, bytes) != NULL;
    pthread_mutex_unlock(&b->lock);
    return inside ? 0 : kbackend_fail(err, KBACKEND_EINVAL, "a mapping outside every "
                                      "reservation");
}

static void emu_vmm_unmap(void *state, kbackend_devptr va, uint64_t bytes)
{
    (void)state;
    (void)va;
    (void)bytes;
}

static int emu_mem_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                         kbackend_error *err)
{
    struct emu_backend *b = state;
    kemu_error e = {0};
    kemu_range in;
    int rc = domain_range(b, domain, &in, err);

    if (rc)
        return rc;
    rc = kemu_mem_alloc_in(b->dev, &in, bytes, out, &e);
    return rc ? from_kemu(rc, &e, err) : 0;
}

static int emu_mem_free(void *state, kbackend_devptr ptr, kbackend_error *err)
{
    struct emu_backend *b = state;
    kemu_error e = {0};
    int rc = kemu_mem_free(b->dev, ptr, &e);

    return rc ? from_kemu(rc, &e, err) : 0;
}

static int emu_copy_h2d(void *state, kbackend_devptr dst, const void *src, uint64_t bytes,
                        kbackend_done_fn done, void *user, kbackend_error *err)
{
    struct job *j = new_job(JOB_H2D, done, user, err);

    if (!j)
        return KBACKEND_ENOMEM;
    j->dst_dev = dst;
    j->src_host = src;
    j->bytes = bytes;
    return submit(state, j);
}

static int emu_copy_d2h(void *state, void *dst, kbackend_devptr src, uint64_t bytes,
                        kbackend_done_fn done, void *user, kbackend_error *err)
{
    struct job *j = new_job(JOB_D2H, done, user, err);

    if (!j)
        return KBACKEND_ENOMEM;
    j->dst_host = dst;
    j->src_dev = src;
    j->bytes = bytes;
    return submit(state, j);
}

static int emu_copy_d2d(void *state, kbackend_devptr dst, kbackend_devptr src, uint64_t bytes,
                        kbackend_done_fn done, void *user, kbackend_error *err)
{
    struct job *j = new_job(JOB_D2D, done, user, err);

    if (!j)
        return KBACKEND_ENOMEM;
    j->dst_dev = dst;
    j->src_dev = src;
    j->bytes = bytes;
    return submit(state, j);
}

static int emu_memset_d8(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                         kbackend_done_fn done, void *user, kbackend_error *err)
{
    struct job *j = new_job(JOB_MEMSET, done, user, err);

    if (!j)
        return KBACKEND_ENOMEM;
    j->dst_dev = dst;
    j->value = value;
    j->bytes = bytes;
    return submit(state, j);
}

static int emu_module_load(void *state, uint32_t domain, const char *ptx, size_t len,
                           kbackend_module **out, kbackend_error *err)
{
    struct emu_backend *b = state;
    kemu_error e = {0};
    kemu_module *m;
    kemu_range in;
    int rc = domain_range(b, domain, &in, err);

    if (rc)
        return rc;
    rc = kemu_module_load_in(b->dev, &in, ptx, len, &m, &e);
    if (rc)
        return from_kemu(rc, &e, err);
    *out = (kbackend_module *)m;
    return 0;
}

static int emu_module_unload(void *state, kbackend_module *m, kbackend_error *err)
{
    (void)state;
    (void)err;
    kemu_module_unload((kemu_module *)m);
    return 0;
}

static int emu_function_get(void *state, kbackend_module *m, const char *entry, kbackend_function **out,
                            kbackend_func_info *info, kbackend_error *err)
{
    kemu_error e = {0};
    kemu_function *f;
    kemu_function_info fi;
    int rc = kemu_module_get_function((kemu_module *)m, entry, &f, &e);

    (void)state;
    if (rc)
        return from_kemu(rc, &e, err);
    if (info) {
        kemu_function_info_get(f, &fi);
        /* fi.registers counts PTX virtual registers, not what ptxas would allocate (several
         * times more for nvcc's PTX): taken as the hardware figure it made the model see
         * tea and pc at a fraction of their occupancy and price their pairing below
         * running alone (CP -0.02 instead of 0.19), so every decision was solo. 0 =
         * unknown: the scheduler takes the profile's figure. */
        *info = (kbackend_func_info){.regs_per_thread = 0,
                                  .static_smem = fi.static_shared_bytes,
                                  .max_threads_per_block = fi.max_threads_per_block};
    }
    *out = (kbackend_function *)f;
    return 0;
}

/* Each ksched_module_load is its own kemu_module_load (the adapter shares nothing between
 * loads), so every tenant's load has its own variables, as the executor requires. */
static int emu_global_get(void *state, kbackend_module *m, const char *name, kbackend_devptr *addr,
                          uint64_t *bytes, kbackend_error *err)
{
    kemu_error e = {0};
    kemu_devptr p = 0;
    size_t n = 0;
    int rc = kemu_module_get_global((kemu_module *)m, name, &p, &n, &e);

    (void)state;
    if (rc)
        return from_kemu(rc, &e, err);
    if (addr)
        *addr = p;
    if (bytes)
        *bytes = n;
    return 0;
}

static int emu_launch(void *state, const kbackend_slice *s, kbackend_done_fn done, void *user,
                      kbackend_error *err)
{
    /* the emulator runs blocks one after another on a pool: no cluster's shared memory and
     * barriers, no grid-wide synchronisation */
    if (kbackend_launch_has_attrs(s->cluster, s->cooperative))
        return kbackend_fail(err, KBACKEND_EUNSUPPORTED, "%s launches are not emulated",
                             s->cooperative ? "cooperative" : "thread-block cluster");
    struct job *j = new_job(JOB_LAUNCH, done, user, err);

    if (!j)
        return KBACKEND_ENOMEM;
    j->slice = *s;
    if (s->params_size) {
        if (!(j->params = malloc(s->params_size))) {
            free(j);
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of memory");
        }
        memcpy(j->params, s->params, s->params_size);
    }
    j->slice.params = j->params;
    snprintf(j->tenant, sizeof(j->tenant), "%s", s->tenant ? s->tenant : "");
    j->slice.tenant = NULL; /* valid only during the call: j->tenant is the copy */
    return submit(state, j);
}

static const kbackend_ops emu_ops = {
    .name = "emu",
    .destroy = emu_destroy,
    .device_info = emu_device_info,
    .now_ns = emu_now,
    .mem_alloc = emu_mem_alloc,
    .mem_free = emu_mem_free,
    .copy_h2d = emu_copy_h2d,
    .copy_d2h = emu_copy_d2h,
    .copy_d2d = emu_copy_d2d,
    .memset_d8 = emu_memset_d8,
    .module_load_ptx = emu_module_load,
    .module_unload = emu_module_unload,
    .function_get = emu_function_get,
    .launch = emu_launch,
    .global_get = emu_global_get,
    .cancel_all = emu_cancel_all,
    .domain_window = emu_domain_window,
    .domain_release = emu_domain_release,
    .host_register = emu_host_register,
    .domain_time_limit = emu_domain_time_limit,
    .host_unregister = emu_host_unregister,
    .vmm_reserve = emu_vmm_reserve,
    .vmm_free = emu_vmm_free,
    .vmm_create = emu_vmm_create,
    .vmm_release = emu_vmm_release,
    .vmm_map = emu_vmm_map,
    .vmm_unmap = emu_vmm_unmap,
};

int kd_emu_backend_open(kbackend *out, uint64_t window_bytes, kd_emu_note_fn note,
                        void *note_user, char *err, size_t errlen)
{
    struct emu_backend *b = calloc(1, sizeof(*b));
    kemu_error e = {0};
    kbackend_error be = {0};
    uint64_t base, size;

    if (!b) {
        snprintf(err, errlen, "emu: out of memory");
        return -1;
    }
    b->note = note;
    b->note_user = note_user;
    kemu_mem_span(&base, &size);
    if (kbackend_windows_new(base + size / 2, size / 2,
                             window_bytes ? window_bytes : KBACKEND_WINDOW_DEFAULT,
                             &b->windows, &be)) {
        snprintf(err, errlen, "emu: %s", be.msg);
        free(b);
        return -1;
    }
    if (emu_watchdog_new(&b->watchdog) != 0) {
        snprintf(err, errlen, "emu: cannot start the kernel time limit's thread");
        kbackend_windows_free(b->windows);
        free(b);
        return -1;
    }
    /* KERNELET_EMU_RESIDUE=WORD: blocks start with what an earlier kernel left, as on a
     * GPU (kemu_device_config.residue_word), for the tests of the fence's scrubbing */
    const char *residue = getenv("KERNELET_EMU_RESIDUE");
    kemu_device_config dcfg = {.residue_word = residue ? (uint32_t)strtoul(residue, NULL, 0) : 0};
    if (kemu_device_create(&dcfg, &b->dev, &e) != 0 ||
        !(b->control = emu_control_new(b->dev, (kemu_range){base, base + size / 2}))) {
        snprintf(err, errlen, "emu: %s", b->dev ? "out of memory" : e.message);
        kemu_device_destroy(b->dev);
        emu_watchdog_free(b->watchdog);
        kbackend_windows_free(b->windows);
        free(b);
        return -1;
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    pthread_cond_init(&b->idle, NULL);
    if (pthread_create(&b->worker, NULL, worker, b) != 0) {
        snprintf(err, errlen, "emu: cannot start the worker thread");
        emu_watchdog_free(b->watchdog);
        kemu_device_destroy(b->dev);
        kbackend_windows_free(b->windows);
        free(b);
        return -1;
    }
    out->ops = &emu_ops;
    out->state = b;
    return 0;
}
