/* Modules from PTX or cubins, cached by content, and their functions (see cuda_backend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"
#include "ptx_vars.h"

#define MAX_PTX_BYTES ((size_t)256 << 20)   /* as the PTX library (kernelet/ptx.h) */
#define MAX_ENTRY_NAME 4095   /* templated C++ kernels have names of thousands of characters */
#define JIT_LOG_BYTES 16384

/* Its variables leave the table of ranges copies may reach (call with the lock held). */
static void forget_vars_locked(kcuda *kc, struct kbackend_module *m)
{
    for (size_t i = 0; i < m->n_vars; i++)
        kcuda_alloc_remove(&kc->vars, m->vars[i], NULL, NULL);
    free(m->vars);
    m->vars = NULL;
    m->n_vars = 0;
}

static void module_free(kcuda *kc, struct kbackend_module *m)
{
    free(m->vars);
    kcuda_reloc_free(kc, &m->reloc);
    struct kbackend_function *f = m->fns;
    while (f) {
        struct kbackend_function *next = f->next;
        free(f->name);
        free(f);
        f = next;
    }
    if (m->mod)
        cuModuleUnload(m->mod);     /* on a lost context it fails; the reset frees it */
    free(m);
}

/* Loads the image (NUL-terminated PTX text, JIT-compiled, or a cubin, loaded as it is);
 * the error log becomes the message. */
static int jit(kcuda *kc, const char *text, const char *what, CUmodule *mod,
               kbackend_error *err)
{
    char *log = calloc(1, JIT_LOG_BYTES);
    if (!log)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[] = {log, (void *)(uintptr_t)JIT_LOG_BYTES};
    CUresult r = cuModuleLoadDataEx(mod, text, 2, opt, val);
    int rc = 0;
    if (r != CUDA_SUCCESS) {
        char line[160];
        const char *name = "CUDA_ERROR_?";
        cuGetErrorName(r, &name);
        kcuda_jit_summary(log, JIT_LOG_BYTES, line, sizeof(line));
        if (kcuda_error_is_sticky(r))
            kcuda_mark_broken(kc, r, "module load");
        rc = kbackend_fail(err, kcuda_error_is_sticky(r) ? KBACKEND_ELOST : kcuda_error_code(r),
                        "%s failed: %s%s%s", what, name, *line ? ": " : "", line);
    }
    free(log);
    return rc;
}

static int check_text(const char *ptx, size_t len, kbackend_error *err)
{
    if (!len)
        return kbackend_fail(err, KBACKEND_EMODULE, "empty PTX");
    if (len > MAX_PTX_BYTES)
        return kbackend_fail(err, KBACKEND_EMODULE, "PTX of %zu bytes (limit %zu)", len, MAX_PTX_BYTES);
    /* a NUL inside would end the text early for the driver */
    const char *nul = memchr(ptx, '\0', len);
    if (nul)
        return kbackend_fail(err, KBACKEND_EMODULE, "PTX text holds a NUL byte at %zu",
                          (size_t)(nul - ptx));
    return 0;
}

/* m, just compiled, into the cache. Loads run beside one another (module_unlocked): when
 * another load of the same shared text was cached meanwhile, *won is that one, held once
 * more, and the caller frees m. */
static int cache_new(kcuda *kc, const char *ptx, size_t len, struct kbackend_module *m,
                     struct kbackend_module **won, kbackend_error *err)
{
    pthread_mutex_lock(&kc->lock);
    *won = m->shared ? kcuda_module_cache_acquire(kc->modules, ptx, len) : NULL;
    int rc = *won ? 0 : kcuda_module_cache_add_shared(kc->modules, ptx, len, m, m->shared, err);
    if (*won) {
        kc->stats.module_cache_hits++;
    } else if (!rc) {
        kc->stats.modules_compiled++;
        kc->stats.modules_private += !m->shared;
    }
    pthread_mutex_unlock(&kc->lock);
    return rc;
}

/* A module with variables gets a module of its own per load (module_cache.h); the
 * driver's JIT cache (~/.nv/ComputeCache, keyed by the PTX) still spares the compilation
 * of one without (a module whose variables move into the window is compiled per load:
 * their addresses are in its text). cubin: the bytes are SASS, loaded as they are (the
 * copy's NUL is then unused). */
static int load_new(kcuda *kc, uint32_t domain, const char *ptx, size_t len, int cubin,
                    struct kbackend_module **out, kbackend_error *err)
{
    char *text = malloc(len + 1), *moved = NULL;
    struct kbackend_module *m = calloc(1, sizeof(*m));
    int rc = text && m ? 0 : kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    if (!rc) {
        m->shared = cubin ? !kcuda_cubin_defines_variables(ptx, len)
                          : !kcuda_ptx_defines_variables(ptx, len);
        memcpy(text, ptx, len);
        text[len] = '\0';
        if (!cubin && !m->shared)
            rc = kcuda_reloc_text(kc, domain, ptx, len, &m->reloc, &moved, err);
    }
    if (!rc)
        rc = jit(kc, moved ? moved : text, cubin ? "cubin load" : "PTX JIT", &m->mod, err);
    free(text);
    free(moved);
    struct kbackend_module *won = NULL;
    if (!rc)
        rc = cache_new(kc, ptx, len, m, &won, err);
    if ((rc || won) && m)
        module_free(kc, m);
    if (!rc)
        *out = won ? won : m;
    return rc;
}

/* The cached module for the bytes, or a new one. */
static int load_cached(kcuda *kc, uint32_t domain, const char *ptx, size_t len, int cubin,
                       kbackend_module **out, kbackend_error *err)
{
    int rc;
    pthread_mutex_lock(&kc->lock);
    rc = kcuda_refuse_if_broken(kc, err);
    struct kbackend_module *m = rc ? NULL : kcuda_module_cache_acquire(kc->modules, ptx, len);
    if (m)
        kc->stats.module_cache_hits++;
    pthread_mutex_unlock(&kc->lock);
    if (rc || m) {
        *out = m;
        return rc;
    }
    if ((rc = kcuda_bind(kc, err)))
        return rc;
    return load_new(kc, domain, ptx, len, cubin, out, err);
}

/* With windows, the module's .global variables go into the domain's window
 * (module_reloc.c); without, the driver places them. */
int kcuda_module_load_ptx(void *state, uint32_t domain, const char *ptx, size_t len,
                          kbackend_module **out, kbackend_error *err)
{
    if (!ptx || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if (len && ptx[len - 1] == '\0')  /* the same text with or without its terminator */
        len--;
    int rc = check_text(ptx, len, err);
    return rc ? rc : load_cached(state, domain, ptx, len, 0, out, err);
}

/* A cubin shares the cache with PTX texts: an ELF image never equals a PTX text (the PTX
 * path refuses NUL bytes, and every ELF header holds some). */
int kcuda_module_load_cubin(void *state, const void *image, size_t len, kbackend_module **out,
                            kbackend_error *err)
{
    if (!image || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if (len < 4 || len > MAX_PTX_BYTES || memcmp(image, "\177ELF", 4) != 0)
        return kbackend_fail(err, KBACKEND_EMODULE, "not a cubin, or larger than %zu bytes",
                             MAX_PTX_BYTES);
    return load_cached(state, 0, image, len, 1, out, err);
}

int kcuda_module_unload(void *state, kbackend_module *m, kbackend_error *err)
{
    kcuda *kc = state;
    if (!m)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL module");
    pthread_mutex_lock(&kc->lock);
    int left = kcuda_module_cache_release(kc->modules, m, err);
    if (left == 0)
        forget_vars_locked(kc, m);
    pthread_mutex_unlock(&kc->lock);
    if (left < 0)
        return left;
    if (left == 0) {
        kcuda_bind(kc, NULL);
        module_free(kc, m);
    }
    return 0;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* Number of parameters of f: the first index cuFuncGetParamInfo (CUDA 12.4+) refuses with
 * CUDA_ERROR_INVALID_VALUE; -1 when it fails otherwise (the driver cannot say). */
static long count_params(CUfunction f)
{
    size_t off, size;
    for (size_t n = 0; n <= KCUDA_MAX_PARAM_BYTES; n++) {
        CUresult r = cuFuncGetParamInfo(f, n, &off, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            return (long)n;
        if (r != CUDA_SUCCESS)
            return -1;
    }
    return -1;
}

/* The parameter layout the driver reports for f. */
static int param_layout(CUfunction f, int sliced, kcuda_param_layout *out, kbackend_error *err)
{
    long n = count_params(f);
    if (n < 0) {
        kcuda_param_layout_unknown(sliced, out);
        return 0;
    }
    size_t *off = calloc((size_t)n + 1, sizeof(*off)), *size = calloc((size_t)n + 1, sizeof(*size));
    int rc = off && size ? 0 : kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    for (long i = 0; !rc && i < n; i++)
        if (cuFuncGetParamInfo(f, (size_t)i, &off[i], &size[i]) != CUDA_SUCCESS)
            rc = kbackend_fail(err, KBACKEND_EDEVICE, "cuFuncGetParamInfo failed on parameter %ld", i);
    if (!rc)
        rc = kcuda_param_layout_from(off, size, (size_t)n, sliced, out, err);
    free(off);
    free(size);
    return rc;
}

static int attributes(struct kbackend_function *fn, kbackend_error *err)
{
    int regs = 0, smem = 0, threads = 0, dyn = 0;
    CUresult r = cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn->f);
    if (r == CUDA_SUCCESS)
        r = cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn->f);
    if (r == CUDA_SUCCESS)
        r = cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn->f);
    if (r == CUDA_SUCCESS)
        r = cuFuncGetAttribute(&dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn->f);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail(err, r, "cuFuncGetAttribute");
    fn->info = (kbackend_func_info){.regs_per_thread = (unsigned)regs,
                                 .static_smem = (unsigned)smem,
                                 .max_threads_per_block = (unsigned)threads};
    fn->dyn_smem_limit = (unsigned)dyn;
    return 0;
}

/* Kernels whose shared-memory carveouts differ cannot share an SM until it drains; one
 * carveout for every function lets any two co-reside (KERNELET_CUDA_CARVEOUT, a percent
 * of the SM's shared memory; unset: the driver's choice per kernel). */
static void set_carveout(const kcuda *kc, CUfunction f)
{
    if (kc->cfg.carveout >= 0)
        cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                           kc->cfg.carveout);
}

static int function_new(kcuda *kc, struct kbackend_module *m, const char *entry,
                        struct kbackend_function **out, kbackend_error *err)
{
    struct kbackend_function *fn = calloc(1, sizeof(*fn));
    if (!fn || !(fn->name = strdup(entry))) {
        free(fn);
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    }
    fn->module = m;
    fn->sliced = has_suffix(entry, KBACKEND_SLICE_SUFFIX);
    CUresult r = cuModuleGetFunction(&fn->f, m->mod, entry);
    int rc = r == CUDA_ERROR_NOT_FOUND
                 ? kbackend_fail(err, KBACKEND_ENOTFOUND, "no entry '%s' in the module", entry)
             : r != CUDA_SUCCESS ? kcuda_cu_fail(err, r, "cuModuleGetFunction") : 0;
    if (!rc)
        set_carveout(kc, fn->f);
    if (!rc)
        rc = attributes(fn, err);
    kbackend_error le = {0};
    if (!rc && (rc = param_layout(fn->f, fn->sliced, &fn->layout, &le)))
        kbackend_fail(err, rc, "entry '%.80s': %.160s", entry, le.msg);
    if (rc) {
        free(fn->name);
        free(fn);
        return rc;
    }
    fn->next = m->fns;
    m->fns = fn;
    *out = fn;
    return 0;
}

/* The function handle of entry in m, made on first use. */
static int get_function(kcuda *kc, struct kbackend_module *m, const char *entry,
                        struct kbackend_function **out, kbackend_error *err)
{
    for (struct kbackend_function *f = m->fns; f; f = f->next)
        if (!strcmp(f->name, entry)) {
            *out = f;
            return 0;
        }
    int rc = kcuda_bind(kc, err);
    return rc ? rc : function_new(kc, m, entry, out, err);
}

/* A look-up of name (what: "entry", "variable") in m: m loaded, name of a usable length,
 * the context not lost. */
static int check_lookup(kcuda *kc, const struct kbackend_module *m, const char *name,
                        const char *what, kbackend_error *err)
{
    size_t n = strnlen(name, MAX_ENTRY_NAME + 1);
    if (!n || n > MAX_ENTRY_NAME)
        return kbackend_fail(err, KBACKEND_EINVAL, "%s name empty or longer than %d", what,
                          MAX_ENTRY_NAME);
    pthread_mutex_lock(&kc->lock);
    int rc = kcuda_module_cache_hash(kc->modules, m) ? kcuda_refuse_if_broken(kc, err)
                                                     : kbackend_fail(err, KBACKEND_EINVAL,
                                                                  "module not loaded");
    pthread_mutex_unlock(&kc->lock);
    return rc;
}

int kcuda_function_get(void *state, kbackend_module *m, const char *entry, kbackend_function **out,
                       kbackend_func_info *info, kbackend_error *err)
{
    kcuda *kc = state;
    if (!m || !entry || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    int rc = check_lookup(kc, m, entry, "entry", err);
    struct kbackend_function *fn = NULL;
    if (!rc)
        rc = get_function(kc, m, entry, &fn, err);
    if (rc)
        return rc;
    *out = fn;
    if (info)
        *info = fn->info;
    return 0;
}

const struct kbackend_function *kcuda_sliced_sibling(kcuda *kc, const struct kbackend_function *fn)
{
    if (fn->sliced)
        return fn;
    char name[MAX_ENTRY_NAME + sizeof(KBACKEND_SLICE_SUFFIX)];
    if ((size_t)snprintf(name, sizeof(name), "%s%s", fn->name, KBACKEND_SLICE_SUFFIX) >=
        sizeof(name))
        return NULL;
    struct kbackend_function *s = NULL;
    return get_function(kc, fn->module, name, &s, NULL) ? NULL : s;
}

void kcuda_unload_all(kcuda *kc)
{
    size_t n = kcuda_module_cache_count(kc->modules);
    for (size_t i = 0; i < n; i++)
        module_free(kc, kcuda_module_cache_at(kc->modules, i));
    kcuda_alloc_table_clear(&kc->vars);
}

/* Records the range of a variable of m for copies; a second look-up finds it there. */
static int remember_var_locked(kcuda *kc, struct kbackend_module *m, kbackend_devptr p,
                               uint64_t size, kbackend_error *err)
{
    for (size_t i = 0; i < m->n_vars; i++)
        if (m->vars[i] == p)
            return 0;
    kbackend_devptr *grown = realloc(m->vars, (m->n_vars + 1) * sizeof(*grown));
    if (!grown)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    m->vars = grown;
    int rc = kcuda_alloc_add(&kc->vars, p, size, err);
    if (!rc)
        m->vars[m->n_vars++] = p;
    return rc;
}

int kcuda_global_get(void *state, kbackend_module *m, const char *name, kbackend_devptr *addr,
                     uint64_t *bytes, kbackend_error *err)
{
    kcuda *kc = state;
    if (!m || !name)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    int rc = check_lookup(kc, m, name, "variable", err);
    if (rc || (rc = kcuda_bind(kc, err)))
        return rc;
    CUdeviceptr p = 0;
    size_t size = 0;
    /* a variable moved into the window is no longer the driver's */
    CUresult r = kcuda_reloc_find(&m->reloc, name, &p, &size)
                     ? CUDA_SUCCESS : cuModuleGetGlobal(&p, &size, m->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return kbackend_fail(err, KBACKEND_ENOTFOUND, "no variable '%s' in the module", name);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail(err, r, "cuModuleGetGlobal");
    if (m->shared)      /* the PTX check missed it: the variable would be every holder's */
        return kbackend_fail(err, KBACKEND_EMODULE, "variable '%s' in a module shared between "
                          "loads", name);
    pthread_mutex_lock(&kc->lock);
    rc = remember_var_locked(kc, m, p, size, err);
    pthread_mutex_unlock(&kc->lock);
    if (rc)
        return rc;
    if (addr)
        *addr = p;
    if (bytes)
        *bytes = size;
    return 0;
}
