/* Loading the cuda backend's module (see cuda_module.h). */
#include "cuda_module.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*open_fn)(kbackend *, const char *, uint64_t, bool, char *, size_t);

/* dlopen of path; when the file exists but does not load (NVIDIA's driver missing, say),
 * why goes to err. */
static void *load(const char *path, char *err, size_t errlen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h && access(path, F_OK) == 0)
        snprintf(err, errlen, "cuda: cannot load %s: %s", path, dlerror());
    return h;
}

/* The folder of the running program, or "" when it cannot be told. */
static void own_folder(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    out[n > 0 ? n : 0] = 0;
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = 0;
}

static void *find_module(char *path, size_t pathlen, char *err, size_t errlen)
{
    char self[PATH_MAX];
    /* the build tree last: an installed program must not take a build's module */
    const char *candidates[4] = {getenv("KERNELETD_CUDA_MODULE"), NULL,
                                 KERNELET_CUDA_MODULE_DIR, KERNELET_CUDA_MODULE_BUILD_DIR};
    own_folder(self, sizeof(self));
    candidates[1] = self[0] ? self : NULL;
    snprintf(err, errlen, "cuda: no kerneletd-cuda.so next to this program or in %s",
             KERNELET_CUDA_MODULE_DIR);
    for (int i = 0; i < 4; i++) {
        if (!candidates[i] || !*candidates[i])
            continue;
        if (i == 0)
            snprintf(path, pathlen, "%s", candidates[i]);
        else
            snprintf(path, pathlen, "%s/kerneletd-cuda.so", candidates[i]);
        void *h = load(path, err, errlen);
        if (h)
            return h;
    }
    return NULL;
}

int kbackend_cuda_module_open(kbackend *out, const char *calibration_dir,
                              uint64_t window_bytes, bool end_on_unstoppable, char *err,
                              size_t errlen)
{
    char path[PATH_MAX + 32];
    void *h = find_module(path, sizeof(path), err, errlen);
    if (!h)
        return -1;
    open_fn open;
    *(void **)&open = dlsym(h, "kd_cuda_backend_open");
    if (!open) {
        snprintf(err, errlen, "cuda: %s has no kd_cuda_backend_open", path);
        dlclose(h);
        return -1;
    }
    return open(out, calibration_dir ? calibration_dir : KERNELET_CUDA_CALIBRATION_DIR,
                window_bytes, end_on_unstoppable, err, errlen);
}
