/* cuGetErrorName and cuGetErrorString for every CUresult of the CUDA headers. The names come
 * from cuda.h (generated errors table); the descriptions are the names in words. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "entry_table.h"
#include "libcuda_internal.h"

static const struct kcu_error_name *find(CUresult e)
{
    unsigned lo = 0, hi = kcu_n_error_names;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (kcu_error_names[mid].value == (int)e)
            return &kcu_error_names[mid];
        if (kcu_error_names[mid].value < (int)e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The entry of a valid code; for an invalid one (or no pStr) NULL, *pStr set to NULL. */
static const struct kcu_error_name *lookup(CUresult error, const char **pStr)
{
    const struct kcu_error_name *e = pStr ? find(error) : NULL;

    if (pStr && !e)
        *pStr = NULL;
    return e;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    const struct kcu_error_name *e = lookup(error, pStr);

    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e->name;
    return CUDA_SUCCESS;
}

/* "CUDA_ERROR_INVALID_VALUE" -> "invalid value"; built once per code, kept for the
 * process (the API returns pointers to static strings). */
static char *describe(const char *name)
{
    const char *p = strncmp(name, "CUDA_ERROR_", 11) == 0 ? name + 11 : name;
    char *s = strdup(strcmp(name, "CUDA_SUCCESS") == 0 ? "no error" : p);

    if (!s)
        return NULL;
    for (char *q = s; *q; q++)
        *q = *q == '_' ? ' ' : (char)tolower((unsigned char)*q);
    return s;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    static char *texts[1024];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    const struct kcu_error_name *e = lookup(error, pStr);

    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    unsigned i = (unsigned)(e - kcu_error_names);
    if (i < 1024 && !texts[i])
        texts[i] = describe(e->name);
    *pStr = i < 1024 && texts[i] ? texts[i] : e->name;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
