/* Backends of kerneletd. sim (the scheduler's model-driven GPU) is always there; emu (the
 * PTX emulator) and cuda are compiled in when their libraries are (KERNELETD_HAVE_EMU,
 * KERNELETD_HAVE_CUDA). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "backends.h"

#ifdef KERNELETD_HAVE_EMU
#include "emu_backend.h"
#endif
#ifdef KERNELETD_HAVE_CUDA
#include "cuda_module.h"
#endif

/* Reads path into *cache (made on first use); a missing file is fine when optional. */
static int load_profile_file(const char *path, int optional, ksched_profile_cache **cache,
                             char *err, size_t errlen)
{
    ksched_err e;

    if (!path || (optional && access(path, F_OK) != 0))
        return 0;
    if ((!*cache && ksched_profile_cache_new(cache, &e) != 0) ||
        ksched_profile_load_file(*cache, path, &e) != 0) {
        snprintf(err, errlen, "profiles %s: %s", path, e.msg);
        return -1;
    }
    return 0;
}

static int load_profiles(const struct kd_backend_options *o, ksched_profile_cache **out,
                         char *err, size_t errlen)
{
    *out = NULL;
    if (load_profile_file(o->profiles, 0, out, err, errlen) == 0 &&
        load_profile_file(o->profile_cache, 1, out, err, errlen) == 0)
        return 0;
    ksched_profile_cache_free(*out);
    *out = NULL;
    return -1;
}

static int open_sim(const struct kd_backend_options *o, ksched_profile_cache *profiles,
                    kbackend *out, char *err, size_t errlen)
{
    ksim_config cfg;
    ksched_err e;
    ksim *s;

    ksim_config_default(&cfg);
    if (o->window_bytes)
        cfg.window_bytes = o->window_bytes;
    if (ksim_new(&s, &cfg, &e) != 0) {
        snprintf(err, errlen, "sim: %s", e.msg);
        return -1;
    }
    if (profiles && ksim_add_kernels(s, profiles, &e) != 0) {
        snprintf(err, errlen, "sim: %s", e.msg);
        ksim_free(s);
        return -1;
    }
    ksim_backend(s, out);
    return 0;
}

#ifdef KERNELETD_HAVE_CUDA
/* The cuda backend is a module next to the daemon (KERNELETD_CUDA_MODULE overrides), so
 * that kerneletd starts on machines without NVIDIA's driver (cuda_module.h). */
static int open_cuda(const struct kd_backend_options *o, kbackend *out, char *err,
                     size_t errlen)
{
    return kbackend_cuda_module_open(out, o->calibration_dir, o->window_bytes,
                                     o->end_on_unstoppable, err, errlen);
}
#endif

#ifdef KERNELETD_HAVE_EMU
static void emu_note(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "kerneletd: emu: %s\n", msg);
}

static int open_emu(const struct kd_backend_options *o, kbackend *out, char *err,
                    size_t errlen)
{
    return kd_emu_backend_open(out, o->window_bytes, emu_note, NULL, err, errlen);
}
#endif

/* "auto": the GPU when there is one, else the emulator. Never the sim, whose kernels
 * compute nothing: a tenant must not get made-up results from a default. */
static int open_auto(const struct kd_backend_options *o, kbackend *out, char *err,
                     size_t errlen)
{
    (void)o;
#ifdef KERNELETD_HAVE_CUDA
    if (open_cuda(o, out, err, errlen) == 0)
        return 0;
#endif
#ifdef KERNELETD_HAVE_EMU
    return open_emu(o, out, err, errlen);
#else
    snprintf(err, errlen, "auto: no GPU backend could be opened and no emulator is built in");
    return -1;
#endif
}

int kd_backend_open(const struct kd_backend_options *o, kbackend *out,
                    ksched_profile_cache **profiles, char *err, size_t errlen)
{
    if (load_profiles(o, profiles, err, errlen) != 0)
        return -1;
    if (strcmp(o->name, "auto") == 0) {
        if (open_auto(o, out, err, errlen) == 0)
            return 0;
        ksched_profile_cache_free(*profiles);
        *profiles = NULL;
        return -1;
    }
    if (strcmp(o->name, "sim") == 0 && open_sim(o, *profiles, out, err, errlen) == 0)
        return 0;
#ifdef KERNELETD_HAVE_EMU
    if (strcmp(o->name, "emu") == 0)
        return open_emu(o, out, err, errlen);
#endif
#ifdef KERNELETD_HAVE_CUDA
    if (strcmp(o->name, "cuda") == 0)
        return open_cuda(o, out, err, errlen);
#endif
    if (strcmp(o->name, "sim") != 0 && strcmp(o->name, "emu") != 0 && strcmp(o->name, "cuda") != 0)
        snprintf(err, errlen, "unknown backend '%s' (auto, sim, emu, cuda)", o->name);
    else if (strcmp(o->name, "sim") != 0 && !strstr(kd_backends_available(), o->name))
        snprintf(err, errlen, "backend '%s' is not built into this kerneletd (built: %s)",
                 o->name, kd_backends_available());
    ksched_profile_cache_free(*profiles);
    *profiles = NULL;
    return -1;
}

const char *kd_backends_available(void)
{
    return "sim"
#ifdef KERNELETD_HAVE_EMU
           " emu"
#endif
#ifdef KERNELETD_HAVE_CUDA
           " cuda"
#endif
        ;
}
