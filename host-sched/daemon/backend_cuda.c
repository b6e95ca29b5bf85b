/* kerneletd's cuda backend, as a module kerneletd loads only for --backend cuda
 * (kerneletd-cuda.so): it links NVIDIA's driver (libcuda.so.1), which the daemon itself
 * must not need on machines without a GPU. The backend is in host-sched/backends/cuda/. */
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "cuda_backend.h"

int kd_cuda_backend_open(kbackend *out, const char *calibration_dir, uint64_t window_bytes,
                         bool end_on_unstoppable, char *err, size_t errlen);

/* The backend's notes to the operator (a launch past its tenant's time limit). */
static void log_note(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "kerneletd: cuda: %s\n", msg);
}

/* An isolated worker's answer to a kernel that runs past its tenant's time limit and
 * cannot be cancelled (SASS, unfenced): the worker ends, and with it its GPU context, which
 * is the one way to stop that kernel; the tenant loses its connection, nobody else loses
 * anything (the context was the tenant's alone). */
static void end_worker(void *user, const char *tenant)
{
    (void)user;
    fprintf(stderr, "kerneletd: worker %d: tenant '%s': a kernel past its time limit cannot be "
            "cancelled (not fenced); ending this worker, and the kernel with its context\n",
            (int)getpid(), tenant);
    fflush(stderr);
    _exit(3);
}

__attribute__((visibility("default"))) int kd_cuda_backend_open(kbackend *out,
                                                                const char *calibration_dir,
                                                                uint64_t window_bytes,
                                                                bool end_on_unstoppable,
                                                                char *err, size_t errlen)
{
    kcuda_config cfg;
    kbackend_error e;
    kcuda *kc;

    kcuda_config_default(&cfg);
    cfg.calibration_dir = calibration_dir;
    cfg.note = log_note;
    if (end_on_unstoppable) {   /* an isolated worker */
        cfg.unstoppable = end_worker;
        cfg.lazy_loading = 1;
    }
    if (window_bytes)
        cfg.window_bytes = window_bytes;
    if (kcuda_new(&kc, &cfg, &e) != 0) {
        snprintf(err, errlen, "cuda: %s", e.msg);
        return -1;
    }
    kcuda_backend(kc, out);
    return 0;
}
