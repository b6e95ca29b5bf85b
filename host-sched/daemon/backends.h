/* The executor backends kerneletd can run on (--backend). */
#ifndef KERNELETD_BACKENDS_H
#define KERNELETD_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>

#include "ksched.h"

struct kd_backend_options {
    const char *name;           /* "auto" (cuda, else emu), "sim", "emu", "cuda" */
    const char *profiles;       /* profile file (sim: the kernels' truth; all: cache) or NULL */
    const char *profile_cache;  /* learned profiles: loaded when the file exists, or NULL */
    const char *calibration_dir; /* cuda: GPU calibrations; NULL = the built-in ones */
    uint64_t window_bytes;      /* address window of each tenant (kbackend_windows) */
    bool end_on_unstoppable;    /* cuda: a kernel past its time limit that cannot be
                                   cancelled (unfenced) ends the process, and so its
                                   context and the kernel: an isolated worker's choice */
};

/* Opens the backend; *profiles (may stay NULL) gets the profiles read for it: the
 * --profiles file, then the --profile-cache file if it exists (a first start has none).
 * 0, or -1 with a message in err. */
int kd_backend_open(const struct kd_backend_options *o, kbackend *out,
                    ksched_profile_cache **profiles, char *err, size_t errlen);

/* The backends this kerneletd was built with, "sim emu ..." */
const char *kd_backends_available(void);

#endif
