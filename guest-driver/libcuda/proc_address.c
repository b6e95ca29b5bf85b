/* cuGetProcAddress and cuGetProcAddress_v2: the way cudart finds every driver function.
 *
 * A request names a base function ("cuMemcpyHtoD"), the CUDA version the caller was built
 * for, and whether it wants the per-thread-default-stream variant. The answer is the newest
 * ABI of that function introduced at or before the version, in the variant asked for when
 * the function has one. Every function of the CUDA headers resolves to something callable
 * (unimplemented ones to a stub returning CUDA_ERROR_NOT_SUPPORTED); names the headers do
 * not know get CUDA_ERROR_NOT_FOUND. Works before cuInit. */
#include <string.h>

#include "entry_table.h"
#include "libcuda_internal.h"

/* cuda.h maps cuGetProcAddress to its _v2; both symbols are defined here. */
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags);

/* Index of the first entry named name, or kcu_n_entries. */
static unsigned first_named(const char *name)
{
    unsigned lo = 0, hi = kcu_n_entries;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (strcmp(kcu_entries[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    const struct kcu_entry *best = NULL, *best_plain = NULL;
    bool any = false;
    int want = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? KCU_PER_THREAD
                                                                       : KCU_PLAIN;

    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    for (unsigned i = first_named(symbol);
         i < kcu_n_entries && strcmp(kcu_entries[i].name, symbol) == 0; i++) {
        const struct kcu_entry *e = &kcu_entries[i];
        any = true;
        if (e->version > version)
            continue;
        if (e->variant == KCU_PLAIN && (!best_plain || e->version > best_plain->version))
            best_plain = e;
        if (e->variant == want && (!best || e->version > best->version))
            best = e;
    }
    if (!best)
        best = best_plain; /* no per-thread variant: the function has no stream */
    if (!best) {
        if (status)
            *status = any ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        kcu_log("cuGetProcAddress(%s, %d, %llu): %s", symbol, version,
                (unsigned long long)flags, any ? "version not sufficient" : "not found");
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = (void *)best->fn;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags)
{
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
