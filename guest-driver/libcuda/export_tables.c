/*
 * cuGetExportTable: the undocumented tables the CUDA runtime asks the driver for, by UUID.
 * What each slot does is public knowledge from other reimplementations (ZLUDA, scuda) and
 * from logging the real driver (tests/gpu/libcuda/interposer); docs/PROTOCOL.md lists it.
 * Slots whose purpose is unknown hold functions that log their table and slot when
 * KERNELET_DEBUG is set and return CUDA_ERROR_NOT_SUPPORTED, so a call never jumps to NULL.
 *
 * A table whose first slot is a size holds its length in bytes there.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "integrity.h"
#include "libcuda_internal.h"

#define SLOT_STUB(table, i)                                                                 \
    static CUresult table##_slot##i(void) { return kcu_unsupported(#table "[" #i "]"); }

/* ---- CUDART_INTERFACE {6bd5fb6c-5bf4-e74a-8987-d93912fd9df9} ----------------------------- */

/* A module from the host stub's fatbin wrapper {magic, version, fatbin, ...}. */
static CUresult load_wrapper(CUmodule *module, const void *wrapper)
{
    if (!module || !wrapper)
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadData(module, wrapper);
}

static CUresult cudart_get_module(CUmodule *module, const void *wrapper)
{
    return load_wrapper(module, wrapper);
}

static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev)
{
    struct kcu_ctx *x;
    CUresult r = kcu_initialized();

    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = kcu_primary_ctx(dev, &x)) == CUDA_SUCCESS)
        *pctx = (CUcontext)x;
    return r;
}

static CUresult cudart_get_module_ext1(CUmodule *module, const void *wrapper, void *a3,
                                       void *a4, unsigned a5)
{
    if (a3 || a4 || a5)
        kcu_log("CUDART_INTERFACE[6]: extra arguments %p %p %u ignored", a3, a4, a5);
    return load_wrapper(module, wrapper);
}

static CUresult cudart_slot7(size_t arg)
{
    (void)arg;
    return CUDA_SUCCESS;
}

static CUresult cudart_get_module_ext2(const void *fatbin, CUmodule *module, void *a3, void *a4,
                                       unsigned a5)
{
    if (a3 || a4 || a5)
        kcu_log("CUDART_INTERFACE[8]: extra arguments %p %p %u ignored", a3, a4, a5);
    if (!module || !fatbin)
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadData(module, fatbin);
}

SLOT_STUB(CUDART_INTERFACE, 3)
SLOT_STUB(CUDART_INTERFACE, 4)
SLOT_STUB(CUDART_INTERFACE, 5)
SLOT_STUB(CUDART_INTERFACE, 9)

static const void *const cudart_table[10] = {
    (void *)(sizeof(void *) * 10),
    (void *)cudart_get_module,
    (void *)cudart_primary_ctx,
    (void *)CUDART_INTERFACE_slot3,
    (void *)CUDART_INTERFACE_slot4,
    (void *)CUDART_INTERFACE_slot5,
    (void *)cudart_get_module_ext1,
    (void *)cudart_slot7,
    (void *)cudart_get_module_ext2,
    (void *)CUDART_INTERFACE_slot9,
};

/* ---- TOOLS_TLS {42d85a81-23f6-cb47-8298-f6e78a3aecdc} ------------------------------------- */

/* The calling thread's current context into *out (cuBLASLt asks before each kernel lookup;
 * with the real driver: only the first 8 bytes of *out written, result 0). */
static CUresult tools_tls_current_ctx(CUcontext *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (CUcontext)kcu_ctx_current();
    return CUDA_SUCCESS;
}

SLOT_STUB(TOOLS_TLS, 1)
SLOT_STUB(TOOLS_TLS, 3)

static const void *const tools_tls_table[4] = {
    (void *)(sizeof(void *) * 4),
    (void *)TOOLS_TLS_slot1,
    (void *)tools_tls_current_ctx,
    (void *)TOOLS_TLS_slot3,
};

/* Slots whose use is unknown: each logs its table and index when called (KERNELET_DEBUG)
 * and answers CUDA_ERROR_NOT_SUPPORTED. */
#define STUBS8(t, a, b, c, d, e, f, g, h)                                                   \
    SLOT_STUB(t, a) SLOT_STUB(t, b) SLOT_STUB(t, c) SLOT_STUB(t, d)                          \
    SLOT_STUB(t, e) SLOT_STUB(t, f) SLOT_STUB(t, g) SLOT_STUB(t, h)

/* ---- TOOLS_CONTEXT {21318c60-9714-3248-8ca6-41ff7324c8f2}: 64 slots --------------------- *
 * cuBLASLt calls slot 4 with a context and a pointer: the real driver writes the
 * context's unique id there (what cuCtxGetId gives) and returns 0. */
static CUresult tools_context_id(CUcontext ctx, unsigned long long *id)
{
    return cuCtxGetId(ctx, id);
}

STUBS8(TOOLS_CONTEXT, 1, 2, 3, 5, 6, 7, 8, 9)
STUBS8(TOOLS_CONTEXT, 10, 11, 12, 13, 14, 15, 16, 17)
STUBS8(TOOLS_CONTEXT, 18, 19, 20, 21, 22, 23, 24, 25)
STUBS8(TOOLS_CONTEXT, 26, 27, 28, 29, 30, 31, 32, 33)
STUBS8(TOOLS_CONTEXT, 34, 35, 36, 37, 38, 39, 40, 41)
STUBS8(TOOLS_CONTEXT, 42, 43, 44, 45, 46, 47, 48, 49)
STUBS8(TOOLS_CONTEXT, 50, 51, 52, 53, 54, 55, 56, 57)
SLOT_STUB(TOOLS_CONTEXT, 58)
SLOT_STUB(TOOLS_CONTEXT, 59)
SLOT_STUB(TOOLS_CONTEXT, 60)
SLOT_STUB(TOOLS_CONTEXT, 61)
SLOT_STUB(TOOLS_CONTEXT, 62)
SLOT_STUB(TOOLS_CONTEXT, 63)

#define C(i) (void *)TOOLS_CONTEXT_slot##i
static const void *const tools_context_table[64] = {
    (void *)(sizeof(void *) * 64), C(1), C(2), C(3), (void *)tools_context_id, C(5), C(6),
    C(7), C(8), C(9), C(10), C(11), C(12), C(13), C(14), C(15), C(16), C(17), C(18), C(19),
    C(20), C(21), C(22), C(23), C(24), C(25), C(26), C(27), C(28), C(29), C(30), C(31), C(32),
    C(33), C(34), C(35), C(36), C(37), C(38), C(39), C(40), C(41), C(42), C(43), C(44), C(45),
    C(46), C(47), C(48), C(49), C(50), C(51), C(52), C(53), C(54), C(55), C(56), C(57), C(58),
    C(59), C(60), C(61), C(62), C(63),
};
#undef C

/* ---- CUBLAS_HOOKS {69a28e9f-2449-8b47-b030-c5da330ea4e9}: 34 slots ----------------------- *
 * Asked for by cuBLAS at cublasCreate, which fails (CUBLAS_STATUS_NOT_INITIALIZED) without
 * it. What the real driver does, as the interposer saw it for one matmul
 * (tests/gpu/frameworks/diagnose.sh, KSHIM_TRACE): slot 19 writes a new object's address
 * to its first argument and returns 0; slot 21, given that object, returns a non-NULL
 * address and stores it in the object's first word; slots 24 and 25 take callbacks and
 * small numbers and return 0. Their purpose is not known: these answers only keep cuBLAS
 * going, nothing is ever called back. */
static uint64_t cublas_hooks_block[128];

static CUresult cublas_hooks_new(void **out)
{
    if (!out || !(*out = calloc(1, 256)))
        return out ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static void *cublas_hooks_get(void **obj)
{
    if (obj)
        *obj = cublas_hooks_block;
    return cublas_hooks_block;
}

static CUresult cublas_hooks_accept(void)
{
    return CUDA_SUCCESS;
}

STUBS8(CUBLAS_HOOKS, 1, 2, 3, 4, 5, 6, 7, 8)
STUBS8(CUBLAS_HOOKS, 9, 10, 11, 12, 13, 14, 15, 16)
STUBS8(CUBLAS_HOOKS, 17, 18, 20, 22, 23, 26, 27, 28)
SLOT_STUB(CUBLAS_HOOKS, 29)
SLOT_STUB(CUBLAS_HOOKS, 30)
SLOT_STUB(CUBLAS_HOOKS, 31)
SLOT_STUB(CUBLAS_HOOKS, 32)
SLOT_STUB(CUBLAS_HOOKS, 33)

#define H(i) (void *)CUBLAS_HOOKS_slot##i
static const void *const cublas_hooks_table[34] = {
    (void *)(sizeof(void *) * 34), H(1), H(2), H(3), H(4), H(5), H(6), H(7), H(8), H(9), H(10),
    H(11), H(12), H(13), H(14), H(15), H(16), H(17), H(18), (void *)cublas_hooks_new, H(20),
    (void *)cublas_hooks_get, H(22), H(23), (void *)cublas_hooks_accept,
    (void *)cublas_hooks_accept, H(26), H(27), H(28), H(29), H(30), H(31), H(32), H(33),
};
#undef H

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS {a094798c-2e74-2e74-93f2-0800200c0a66} ------------------ */

/* Two buffers the runtime writes its tool callbacks into; no tool reads them here. */
static uint32_t hooks_buffer1[1024];
static uint32_t hooks_buffer2[14];

static void hooks_get_buffer1(void **ptr, size_t *size)
{
    *ptr = hooks_buffer1;
    *size = sizeof(hooks_buffer1);
}

static void hooks_get_buffer2(void **ptr, size_t *size)
{
    *ptr = hooks_buffer2;
    *size = sizeof(hooks_buffer2);
}

SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 1)
SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 3)
SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 4)
SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 5)

static const void *const hooks_table[7] = {
    (void *)(sizeof(void *) * 7),
    (void *)TOOLS_RUNTIME_CALLBACK_HOOKS_slot1,
    (void *)hooks_get_buffer1,
    (void *)TOOLS_RUNTIME_CALLBACK_HOOKS_slot3,
    (void *)TOOLS_RUNTIME_CALLBACK_HOOKS_slot4,
    (void *)TOOLS_RUNTIME_CALLBACK_HOOKS_slot5,
    (void *)hooks_get_buffer2,
};

/* ---- CONTEXT_LOCAL_STORAGE {c693336e-1121-df11-a8c3-68f355d89593} (no size slot) --------- */

typedef void (*cls_dtor)(CUcontext ctx, void *key, void *value);

struct kcu_cls_entry {
    void *key;
    void *value;
    cls_dtor dtor;
    struct kcu_cls_entry *next;
};

static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;

/* The context a CLS call means: the one given, else the current one. */
static struct kcu_ctx *cls_ctx(CUcontext ctx)
{
    return ctx ? kcu_ctx_from(ctx) : kcu_ctx_current();
}

static CUresult cls_put(CUcontext ctx, void *key, void *value, cls_dtor dtor)
{
    struct kcu_ctx *x = cls_ctx(ctx);
    struct kcu_cls_entry *e;

    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&cls_lock);
    for (e = x->cls; e; e = e->next)
        if (e->key == key)
            break;
    if (!e && (e = calloc(1, sizeof(*e)))) {
        e->key = key;
        e->next = x->cls;
        x->cls = e;
    }
    if (e) {
        e->value = value;
        e->dtor = dtor;
    }
    pthread_mutex_unlock(&cls_lock);
    return e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult cls_delete(void *a, void *b)
{
    /* (context, key), or (key, ...) for the current context. */
    struct kcu_ctx *x = kcu_ctx_from((CUcontext)a);
    void *key = x ? b : a;
    CUresult r = CUDA_ERROR_INVALID_VALUE;

    if (!x)
        x = kcu_ctx_current();
    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&cls_lock);
    for (struct kcu_cls_entry **pe = &x->cls; *pe; pe = &(*pe)->next)
        if ((*pe)->key == key) {
            struct kcu_cls_entry *e = *pe;
            *pe = e->next;
            free(e);
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&cls_lock);
    return r;
}

static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
    struct kcu_ctx *x = cls_ctx(ctx);
    CUresult r = CUDA_ERROR_INVALID_VALUE;

    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (!x)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&cls_lock);
    for (struct kcu_cls_entry *e = x->cls; e; e = e->next)
        if (e->key == key) {
            *value = e->value;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&cls_lock);
    return r;
}

void kcu_cls_destroy_all(struct kcu_ctx *x)
{
    struct kcu_cls_entry *list;

    pthread_mutex_lock(&cls_lock);
    list = x->cls;
    x->cls = NULL;
    pthread_mutex_unlock(&cls_lock);
    while (list) {
        struct kcu_cls_entry *e = list;
        list = e->next;
        if (e->dtor)
            e->dtor((CUcontext)x, e->key, e->value);
        free(e);
    }
}

SLOT_STUB(CONTEXT_LOCAL_STORAGE, 3)

static const void *const cls_table[4] = {
    (void *)cls_put,
    (void *)cls_delete,
    (void *)cls_get,
    (void *)CONTEXT_LOCAL_STORAGE_slot3,
};

/* ---- INTEGRITY_CHECK {d4082055-bde6-704b-8d34-ba123c66e1f2} ------------------------------- */

static CUresult integrity_check(uint32_t version, uint64_t seconds, uint64_t *result);

SLOT_STUB(INTEGRITY_CHECK, 2)

static const void *const integrity_table[3] = {
    (void *)(sizeof(void *) * 3),
    (void *)integrity_check,
    (void *)INTEGRITY_CHECK_slot2,
};

CUresult kcu_integrity_answer(uint32_t version, uint64_t seconds, uint64_t out[2])
{
    struct kcu_integrity_device devs[KCU_MAX_DEVICES];
    struct kcu_integrity_input in = {
        .runtime_version = version,
        .unix_seconds = seconds,
        .driver_version = KCU_DRIVER_VERSION,
        .pid = (uint32_t)getpid(),
        .tid = (uint32_t)(uintptr_t)pthread_self(),
        .cudart_table = cudart_table,
        .integrity_table = integrity_table,
        .fn_address = integrity_table[1],
        .devices = devs,
    };
    int n = kcu_initialized() == CUDA_SUCCESS ? kcu.n_devices : 0;

    for (int i = 0; i < n; i++) {
        const struct kernelet_device *p = &kcu.dev[i].props;
        memcpy(devs[i].uuid, p->uuid, 16);
        devs[i].pci_domain = p->attrs[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID];
        devs[i].pci_bus = p->attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID];
        devs[i].pci_device = p->attrs[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID];
    }
    in.n_devices = (unsigned)n;
    kcu_integrity_hash(&in, out);
    return CUDA_SUCCESS;
}

static CUresult integrity_check(uint32_t version, uint64_t seconds, uint64_t *result)
{
    if (!result)
        return CUDA_ERROR_INVALID_VALUE;
    return kcu_integrity_answer(version, seconds, result);
}

/* ---- CONTEXT_CHECKS {263e8860-7cd2-6143-92f6-bbd5006dfa7e} -------------------------------- */

static CUresult context_check(CUcontext ctx, uint32_t *result1, const void **result2)
{
    (void)ctx;
    (void)result2;
    if (result1)
        *result1 = 0;
    return CUDA_SUCCESS;
}

static uint32_t context_check3(void)
{
    return 0;
}

SLOT_STUB(CONTEXT_CHECKS, 1)

static const void *const context_checks_table[4] = {
    (void *)(sizeof(void *) * 4),
    (void *)CONTEXT_CHECKS_slot1,
    (void *)context_check,
    (void *)context_check3,
};

/* ---- BLASLT_KEYED {1734dc26-800d-4745-8726-c0f1e7dd8bca}: 17 slots ------------------------ *
 * Asked for by cuBLASLt before a bf16 GEMM; with NULL (CUDA_ERROR_NOT_FOUND) it crashes.
 * With the real driver, slot 4 hands out two 64-byte buffers and slot 13 fills both with
 * what looks like a keyed hash of 64 bytes the caller wrote (interposer traces): not known
 * well enough to answer. Every slot is a stub (NOT_SUPPORTED), so the caller gets an error
 * it can report instead of jumping to NULL. */
STUBS8(BLASLT_KEYED, 1, 2, 3, 4, 5, 6, 7, 8)
STUBS8(BLASLT_KEYED, 9, 10, 11, 12, 13, 14, 15, 16)

#define K(i) (void *)BLASLT_KEYED_slot##i
static const void *const blaslt_keyed_table[17] = {
    (void *)(sizeof(void *) * 17), K(1), K(2), K(3), K(4), K(5), K(6), K(7), K(8), K(9), K(10),
    K(11), K(12), K(13), K(14), K(15), K(16),
};
#undef K

/* ---- lookup ------------------------------------------------------------------------------ */

static const struct {
    uint8_t uuid[16];
    const char *name;
    const void *const *table;
} tables[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     "CUDART_INTERFACE", cudart_table},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     "TOOLS_TLS", tools_tls_table},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     "TOOLS_RUNTIME_CALLBACK_HOOKS", hooks_table},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     "CONTEXT_LOCAL_STORAGE", cls_table},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     "INTEGRITY_CHECK", integrity_table},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
     "CONTEXT_CHECKS", context_checks_table},
    {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2},
     "TOOLS_CONTEXT", tools_context_table},
    {{0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47, 0xb0, 0x30, 0xc5, 0xda, 0x33, 0x0e, 0xa4, 0xe9},
     "CUBLAS_HOOKS", cublas_hooks_table},
    {{0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca},
     "BLASLT_KEYED", blaslt_keyed_table},
};

/* cudart asks every program's driver for this table and goes on without it: not worth a
 * line in the daemon's log for every tenant. */
static const uint8_t probed_by_cudart[16] = {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e,
                                             0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9};

#define MAX_UNKNOWN_TABLES 16

/* A table we do not offer, named once in kerneletd's log (a library that cannot do without
 * one, cuFFT's, then fails with an error of its own that names nothing): the names live
 * here, as the note's dedup keeps pointers. */
static void note_unknown_table(const uint8_t u[16])
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char names[MAX_UNKNOWN_TABLES][64];
    static unsigned n;
    char name[64];
    const char *noted = NULL;

    if (memcmp(u, probed_by_cudart, 16) == 0)
        return;
    snprintf(name, sizeof(name), "cuGetExportTable(%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x)", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8],
             u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    pthread_mutex_lock(&lock);
    unsigned i = 0;
    while (i < n && strcmp(names[i], name) != 0)
        i++;
    if (i == n && n < MAX_UNKNOWN_TABLES) {
        memcpy(names[n], name, sizeof(name));
        noted = names[n++];
    }
    pthread_mutex_unlock(&lock);
    if (noted)
        kcu_unsupported(noted);
}

CUresult kcu_export_table(const void **table, const CUuuid *id)
{
    const uint8_t *u;

    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    u = (const uint8_t *)id->bytes;
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
        if (memcmp(tables[i].uuid, u, 16) == 0) {
            *table = tables[i].table;
            kcu_log("cuGetExportTable: %s", tables[i].name);
            return CUDA_SUCCESS;
        }
    kcu_log("cuGetExportTable: unknown table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
            "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8],
            u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    note_unknown_table(u);
    *table = NULL;
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    return kcu_export_table(ppExportTable, pExportTableId);
}
