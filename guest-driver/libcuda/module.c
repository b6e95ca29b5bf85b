/* Modules, libraries, functions and kernels.
 *
 * An image (fatbin, the host stub's fatbin wrapper, PTX text or an ELF cubin) is sent to
 * the daemon whole, which picks the entry to run (include/kernelet/fatbin.h). Functions come
 * back with their parameter layout, which cuLaunchKernel needs to marshal kernelParams.
 * CUDA 12+ separates libraries and kernels from modules and functions; here a library holds
 * one module and a kernel is a function (cuLaunchKernel accepts either). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/fatbin.h"
#include "le_bytes.h"
#include "libcuda_internal.h"

/* ---- image size ----------------------------------------------------------------------- */

/* An ELF file ends with its section headers (or its last section). */
static size_t elf_size(const uint8_t *p)
{
    uint64_t shoff = kcu_le64(p + 0x28), phoff = kcu_le64(p + 0x20);
    uint16_t shentsize = kcu_le16(p + 0x3a), shnum = kcu_le16(p + 0x3c);
    uint16_t phentsize = kcu_le16(p + 0x36), phnum = kcu_le16(p + 0x38);
    uint64_t end = 0x40;

    if (p[4] != 2) /* 64-bit ELF only */
        return 0;
    if (shoff + (uint64_t)shentsize * shnum > end)
        end = shoff + (uint64_t)shentsize * shnum;
    if (phoff + (uint64_t)phentsize * phnum > end)
        end = phoff + (uint64_t)phentsize * phnum;
    for (unsigned i = 0; i < shnum && shentsize >= 0x40; i++) {
        const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
        if (kcu_le32(sh + 4) != 8 /* SHT_NOBITS */ && kcu_le64(sh + 0x18) + kcu_le64(sh + 0x20) > end)
            end = kcu_le64(sh + 0x18) + kcu_le64(sh + 0x20);
    }
    return end > KERNELET_MAX_IMAGE ? 0 : (size_t)end;
}

CUresult kcu_image_size(const void **data, size_t *size, uint32_t *kind)
{
    const uint8_t *p = *data;
    kptx_error err;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (kcu_le32(p) == KFATBIN_WRAPPER_MAGIC) {
        /* {u32 magic, u32 version, const void *fatbin, ...} */
        const void *fb;
        memcpy(&fb, p + 8, sizeof(fb));
        if (!fb)
            return CUDA_ERROR_INVALID_IMAGE;
        *data = p = fb;
    }
    if (kcu_le32(p) == KFATBIN_MAGIC) {
        if (kfatbin_image_size(p, SIZE_MAX, size, &err) != 0) {
            kcu_log("fatbin image: %s", err.message);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        *kind = KERNELET_IMAGE_FATBIN;
        return CUDA_SUCCESS;
    }
    if (memcmp(p, "\177ELF", 4) == 0) {
        *size = elf_size(p);
        *kind = KERNELET_IMAGE_CUBIN;
        return *size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
    }
    /* PTX text, NUL-terminated. */
    *size = strnlen((const char *)p, KERNELET_MAX_IMAGE) + 1;
    *kind = KERNELET_IMAGE_PTX;
    return *size <= KERNELET_MAX_IMAGE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
}

/* ---- loading ----------------------------------------------------------------------------- */

/* Sends the image: inline when it fits a message, else through staging or a region made
 * for it. */
static CUresult send_image(const void *image, size_t size, uint32_t kind,
                           struct kernelet_module *out)
{
    struct kernelet_module_load q = {.kind = kind, .region = KERNELET_REGION_INLINE, .size = size};
    struct kcu_stage st;
    struct kcu_region reg;
    CUresult r;

    if (size <= KERNELET_MAX_PAYLOAD - sizeof(q))
        return kcu_call(kcu.client, KERNELET_OP_MODULE_LOAD, &q, sizeof(q), image, size, out,
                        sizeof(*out), NULL);
    if (size <= KCU_STAGE_SLOT_SIZE) {
        if ((r = kcu_stage_acquire(&st)) != CUDA_SUCCESS)
            return r;
        memcpy(st.ptr, image, size);
        q.region = st.region;
        q.offset = st.offset;
        r = kcu_call(kcu.client, KERNELET_OP_MODULE_LOAD, &q, sizeof(q), NULL, 0, out,
                     sizeof(*out), NULL);
        kcu_stage_release(&st);
        return r;
    }
    if ((r = kcu_region_create(kcu.client, size, &reg)) != CUDA_SUCCESS)
        return r;
    memcpy(reg.base, image, size);
    q.region = reg.id;
    r = kcu_call(kcu.client, KERNELET_OP_MODULE_LOAD, &q, sizeof(q), NULL, 0, out, sizeof(*out),
                 NULL);
    kcu_region_destroy(kcu.client, &reg);
    return r;
}

/* Modules belong to the process's tenant, not to a context: libraries (CUDA 12+) are
 * loaded without one, and modules are usable from every context here. */
/* KERNELET_DEBUG: what a refused image held (its entries' kinds and architectures), so that
 * a library's module that loads natively but not here can be told apart. */
static void log_refused_image(const void *image, size_t size, CUresult r)
{
    kfatbin *fb = NULL;
    char list[512] = "";
    size_t n = 0;

    if (!kcu_debug() || kfatbin_open(image, size, &fb, NULL) != 0) {
        kcu_log("module of %zu bytes refused (%d)", size, (int)r);
        return;
    }
    for (unsigned i = 0; i < kfatbin_count(fb) && n < sizeof(list) - 32; i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        n += (size_t)snprintf(list + n, sizeof(list) - n, " %s%u/%#llx%s",
                              e->kind == KFATBIN_PTX ? "ptx" : "elf", e->arch,
                              (unsigned long long)e->flags, e->relocatable ? "/reloc" : "");
    }
    kcu_log("module of %zu bytes refused (%d): %u fatbin(s), entries:%s", size, (int)r,
            kfatbin_image_count(fb), list);
    kfatbin_free(fb);
}

static CUresult module_load(struct kcu_module **out, const void *image)
{
    struct kernelet_module m;
    struct kcu_module *mod;
    uint32_t kind;
    size_t size;
    CUresult r;

    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ready()) != CUDA_SUCCESS)
        return r;
    if ((r = kcu_image_size(&image, &size, &kind)) != CUDA_SUCCESS)
        return r;
    if (!(mod = calloc(1, sizeof(*mod))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = send_image(image, size, kind, &m)) != CUDA_SUCCESS) {
        log_refused_image(image, size, r);
        free(mod);
        return r;
    }
    mod->magic = KCU_MAGIC_MODULE;
    mod->handle = m.module;
    mod->n_functions = m.n_functions;
    pthread_mutex_init(&mod->lock, NULL);
    if (!(m.flags & KERNELET_MODULE_NO_PRINTF))
        kcu_printf_module_loaded(mod);
    *out = mod;
    return CUDA_SUCCESS;
}

static struct kcu_module *module_from(CUmodule m)
{
    struct kcu_module *x = (struct kcu_module *)m;

    return x && x->magic == KCU_MAGIC_MODULE ? x : NULL;
}

static CUresult module_unload(struct kcu_module *mod)
{
    struct kernelet_handle h = {.handle = mod->handle};
    CUresult r;

    kcu_printf_module_unloading(mod);
    r = kcu_call(kcu.client, KERNELET_OP_MODULE_UNLOAD, &h, sizeof(h), NULL, 0, NULL, 0, NULL);

    while (mod->functions) {
        struct kcu_function *f = mod->functions;
        mod->functions = f->next;
        f->magic = 0;
        free(f->name);
        free(f->params);
        free(f);
    }
    mod->magic = 0;
    pthread_mutex_destroy(&mod->lock);
    free(mod);
    return r;
}

/* Reads a whole file (cuModuleLoad, cuLibraryLoadFromFile), NUL-terminated. */
static CUresult read_file(const char *path, void **data)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    long n;
    char *buf = NULL;

    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && (uint64_t)n <= KERNELET_MAX_IMAGE &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        fclose(f);
        *data = buf;
        return CUDA_SUCCESS;
    }
    free(buf);
    fclose(f);
    return CUDA_ERROR_INVALID_IMAGE;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    return module_load((struct kcu_module **)module, image);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    (void)numOptions;
    (void)options;
    (void)optionValues;
    return module_load((struct kcu_module **)module, image);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return module_load((struct kcu_module **)module, fatCubin);
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    void *data;
    CUresult r = read_file(fname, &data);

    if (r != CUDA_SUCCESS)
        return r;
    r = module_load((struct kcu_module **)module, data);
    free(data);
    return r;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    struct kcu_module *mod = module_from(hmod);
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    return mod ? module_unload(mod) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_EAGER_LOADING;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
    struct kcu_module *m = module_from(mod);

    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    *count = m->n_functions;
    return CUDA_SUCCESS;
}

/* ---- functions ----------------------------------------------------------------------------- */

struct kcu_function *kcu_function_from(CUfunction f)
{
    struct kcu_function *x = (struct kcu_function *)f;

    return x && x->magic == KCU_MAGIC_FUNC ? x : NULL;
}

static CUresult function_fetch(struct kcu_module *mod, const char *name, struct kcu_function **out)
{
    struct kernelet_name_req q = {.module = mod->handle};
    static __thread uint8_t answer[sizeof(struct kernelet_function) +
                                   KERNELET_MAX_PARAMS * sizeof(struct kernelet_param)];
    struct kernelet_function fi;
    struct kcu_function *f;
    size_t len = 0, nlen = strlen(name);
    CUresult r;

    if (nlen == 0 || nlen > KERNELET_MAX_SYMBOL)
        return CUDA_ERROR_NOT_FOUND;
    q.name_len = (uint32_t)nlen;
    r = kcu_call(kcu.client, KERNELET_OP_FUNCTION_GET, &q, sizeof(q), name, nlen, answer,
                 sizeof(answer), &len);
    if (r != CUDA_SUCCESS) {
        kcu_log("function %.200s: %d", name, (int)r);
        return r;
    }
    memcpy(&fi, answer, sizeof(fi));
    if (!(f = calloc(1, sizeof(*f))) || !(f->name = strdup(name)) ||
        !(f->params = calloc(fi.n_params ? fi.n_params : 1, sizeof(*f->params)))) {
        if (f)
            free(f->name);
        free(f);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(f->params, answer + sizeof(fi), fi.n_params * sizeof(*f->params));
    f->magic = KCU_MAGIC_FUNC;
    f->handle = fi.function;
    f->module = mod;
    f->n_params = fi.n_params;
    f->param_bytes = fi.param_bytes;
    memcpy(f->attrs, fi.attrs, sizeof(f->attrs));
    *out = f;
    return CUDA_SUCCESS;
}

/* The function named name of mod, fetched once and kept with the module. */
static CUresult function_get(struct kcu_module *mod, const char *name, struct kcu_function **out)
{
    struct kcu_function *f;
    CUresult r = CUDA_SUCCESS;

    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mod->lock);
    for (f = mod->functions; f; f = f->next)
        if (strcmp(f->name, name) == 0)
            break;
    if (!f && (r = function_fetch(mod, name, &f)) == CUDA_SUCCESS) {
        f->next = mod->functions;
        mod->functions = f;
    }
    pthread_mutex_unlock(&mod->lock);
    if (r == CUDA_SUCCESS)
        *out = f;
    return r;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    struct kcu_module *mod = module_from(hmod);
    CUresult r = kcu_ready();

    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (!mod)
        return CUDA_ERROR_INVALID_HANDLE;
    return function_get(mod, name, (struct kcu_function **)hfunc);
}

CUresult kcu_module_global(struct kcu_module *mod, const char *name, CUdeviceptr *dptr,
                           size_t *bytes)
{
    struct kernelet_name_req q = {.module = mod->handle};
    struct kernelet_global g;
    size_t nlen = name ? strlen(name) : 0;
    CUresult r;

    if (nlen == 0 || nlen > KERNELET_MAX_SYMBOL)
        return CUDA_ERROR_NOT_FOUND;
    q.name_len = (uint32_t)nlen;
    r = kcu_call(kcu.client, KERNELET_OP_GLOBAL_GET, &q, sizeof(q), name, nlen, &g, sizeof(g),
                 NULL);
    if (r != CUDA_SUCCESS) {
        kcu_log("module variable %.200s: %d", name, (int)r);
        return r;
    }
    kcu_device_range_add(g.dptr, g.size, true);
    if (dptr)
        *dptr = g.dptr;
    if (bytes)
        *bytes = g.size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                      const char *name)
{
    struct kcu_module *mod = module_from(hmod);
    CUresult r = kcu_ready();

    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (!mod)
        return CUDA_ERROR_INVALID_HANDLE;
    return kcu_module_global(mod, name, dptr, bytes);
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    struct kcu_function *f = kcu_function_from(hfunc);

    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((unsigned)attrib >= KERNELET_FUNC_ATTRS)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = f->attrs[attrib];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    struct kcu_function *f = kcu_function_from(hfunc);
    struct kcu_ctx *ctx = kcu_ctx_current();

    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
        int optin = kcu_attr(ctx ? ctx->device : 0,
                             CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        if (value < 0 || value + f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] > optin) {
            kcu_log("%s: %d bytes of dynamic shared memory refused (%d static, opt-in limit %d)",
                    f->name, value, f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES], optin);
            return CUDA_ERROR_INVALID_VALUE;
        }
        break;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    default:
        if ((unsigned)attrib >= KERNELET_FUNC_ATTRS) {
            kcu_log("%s: function attribute %d unknown", f->name, (int)attrib);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    f->attrs[attrib] = value;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    (void)config;
    return kcu_function_from(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    struct kcu_function *f = kcu_function_from(hfunc);

    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                    size_t *paramSize)
{
    struct kcu_function *f = kcu_function_from(func);

    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (paramIndex >= f->n_params)
        return CUDA_ERROR_INVALID_VALUE;
    if (paramOffset)
        *paramOffset = f->params[paramIndex].offset;
    if (paramSize)
        *paramSize = f->params[paramIndex].size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    struct kcu_function *f = kcu_function_from(hfunc);

    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *hmod = (CUmodule)f->module;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
    if (!state)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kcu_function_from(function))
        return CUDA_ERROR_INVALID_HANDLE;
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncLoad(CUfunction function)
{
    return kcu_function_from(function) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- libraries and kernels ---------------------------------------------------------------- */

static struct kcu_library *library_from(CUlibrary l)
{
    struct kcu_library *x = (struct kcu_library *)l;

    return x && x->magic == KCU_MAGIC_LIB ? x : NULL;
}

/* Whether libraries are loaded at once (CUDA_MODULE_LOADING=EAGER, as the driver does with
 * it) rather than at their first use. */
static bool eager_libraries(void)
{
    const char *v = getenv("CUDA_MODULE_LOADING");
    return v && !strcmp(v, "EAGER");
}

/* Loads lib's module once (under its lock); its result, which every later use returns. A
 * library without code for this GPU loads (cuBLAS loads its sm_75-only fatbin on an H100
 * at cublasCreate) and only its kernels fail, with CUDA_ERROR_NO_BINARY_FOR_GPU. */
static CUresult library_module(struct kcu_library *lib)
{
    pthread_mutex_lock(&lib->lock);
    if (!lib->loaded) {
        CUresult r = module_load(&lib->module, lib->image);
        if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) {
            lib->module = NULL;
            r = CUDA_SUCCESS;
        }
        /* a transient failure (the daemon away) is tried again at the next use */
        lib->loaded = r != CUDA_ERROR_NOT_INITIALIZED && r != CUDA_ERROR_OUT_OF_MEMORY;
        lib->load_result = r;
        if (lib->loaded) {
            free(lib->image);
            lib->image = NULL;
        }
    }
    CUresult r = lib->load_result;
    pthread_mutex_unlock(&lib->lock);
    return r;
}

static void library_free(struct kcu_library *lib)
{
    lib->magic = 0;
    pthread_mutex_destroy(&lib->lock);
    free(lib->image);
    free(lib);
}

static CUresult library_load(CUlibrary *library, const void *code)
{
    struct kcu_library *lib;
    const void *image = code;
    uint32_t kind;
    size_t size;
    CUresult r;

    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ready()) != CUDA_SUCCESS)
        return r;
    if ((r = kcu_image_size(&image, &size, &kind)) != CUDA_SUCCESS)
        return r;
    if (!(lib = calloc(1, sizeof(*lib))) || !(lib->image = malloc(size))) {
        free(lib);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(lib->image, image, size);    /* the caller may free its code once we return */
    pthread_mutex_init(&lib->lock, NULL);
    lib->magic = KCU_MAGIC_LIB;
    if (eager_libraries() && (r = library_module(lib)) != CUDA_SUCCESS) {
        library_free(lib);
        return r;
    }
    *library = (CUlibrary)lib;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    return library_load(library, code);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions)
{
    void *data;
    CUresult r = read_file(fileName, &data);

    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (r != CUDA_SUCCESS)
        return r;
    r = library_load(library, data);
    free(data);
    return r;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    struct kcu_library *lib = library_from(library);
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    if (!lib)
        return CUDA_ERROR_INVALID_HANDLE;
    r = lib->module ? module_unload(lib->module) : CUDA_SUCCESS;
    library_free(lib);
    return r;
}

/* A kernel is the function of the library's module. */
CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    struct kcu_library *lib = library_from(library);
    CUresult r;

    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (lib && (r = library_module(lib)) != CUDA_SUCCESS)
        return r;
    if (lib && !lib->module)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    return cuModuleGetFunction((CUfunction *)pKernel, lib ? (CUmodule)lib->module : NULL, name);
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    struct kcu_library *lib = library_from(library);

    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!lib)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = library_module(lib);
    if (r != CUDA_SUCCESS)
        return r;
    if (!lib->module)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    *pMod = (CUmodule)lib->module;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    struct kcu_library *l = library_from(lib);
    CUresult r;

    if (l && count && (r = library_module(l)) != CUDA_SUCCESS)
        return r;
    if (l && !l->module && count) {
        *count = 0;
        return CUDA_SUCCESS;
    }
    return cuModuleGetFunctionCount(count, l ? (CUmodule)l->module : NULL);
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                    const char *name)
{
    struct kcu_library *lib = library_from(library);
    CUresult r = kcu_ready();

    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (!lib)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = library_module(lib)) != CUDA_SUCCESS)
        return r;
    if (!lib->module)
        return CUDA_ERROR_NOT_FOUND;
    return kcu_module_global(lib->module, name, dptr, bytes);
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kcu_function_from((CUfunction)kernel))
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)kernel;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    (void)pLib;
    (void)kernel;
    return kcu_unsupported("cuKernelGetLibrary");
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev)
{
    (void)dev;
    return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                      CUdevice dev)
{
    (void)dev;
    return cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    (void)dev;
    return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
    return cuFuncGetName(name, (CUfunction)hfunc);
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                                      size_t *paramSize)
{
    return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset, paramSize);
}
