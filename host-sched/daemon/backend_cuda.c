/* kerneletd's cuda backend, as a module kerneletd loads only for --backend cuda
 * (kerneletd-cuda.so): it links NVIDIA's driver (libcuda.so.1), which the daemon itself
 * must not need on machines without a GPU. The backend is in host-sched/backends/cuda/. */
#include <stdio.h>

#include "cuda_backend.h"

int kd_cuda_backend_open(kbackend *out, const char *calibration_dir, uint64_t window_bytes,
                         char *err, size_t errlen);

/* The backend's notes to the operator (a launch past its tenant's time limit). */
static void log_note(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "kerneletd: cuda: %s\n", msg);
}

__attribute__((visibility("default"))) int kd_cuda_backend_open(kbackend *out,
                                                                const char *calibration_dir,
                                                                uint64_t window_bytes,
                                                                char *err, size_t errlen)
{
    kcuda_config cfg;
    kbackend_error e;
    kcuda *kc;

    kcuda_config_default(&cfg);
    cfg.calibration_dir = calibration_dir;
    cfg.note = log_note;
    if (window_bytes)
        cfg.window_bytes = window_bytes;
    if (kcuda_new(&kc, &cfg, &e) != 0) {
        snprintf(err, errlen, "cuda: %s", e.msg);
        return -1;
    }
    kcuda_backend(kc, out);
    return 0;
}
