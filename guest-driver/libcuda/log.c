/* Debug logging, on when KERNELET_DEBUG is set to anything but "0". The library stays
 * silent otherwise: a CUDA driver does not print. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry_table.h"
#include "libcuda_internal.h"

bool kcu_debug(void)
{
    static int state = -1;

    if (state < 0) {
        const char *v = getenv("KERNELET_DEBUG");
        state = v && *v && strcmp(v, "0") != 0;
    }
    return state;
}

void kcu_log(const char *fmt, ...)
{
    va_list ap;

    if (!kcu_debug())
        return;
    va_start(ap, fmt);
    flockfile(stderr);
    fputs("[kernelet libcuda] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    funlockfile(stderr);
    va_end(ap);
}

#define MAX_NOTED 128

/* Whether name is reported for the first time (names are static strings). */
static bool first_time(const char *name)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static const char *noted[MAX_NOTED];
    static unsigned n;
    bool first = true;

    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n && first; i++)
        first = strcmp(noted[i], name) != 0;
    if (first && n < MAX_NOTED)
        noted[n++] = name;
    else
        first = false; /* known, or no room to remember it: do not repeat it */
    pthread_mutex_unlock(&lock);
    return first;
}

/* One line in kerneletd's log per unsupported entry point a program calls: the operator
 * sees why a tenant's program failed. Best effort: the answer does not matter. */
void kcu_note_daemon(const char *name)
{
    struct kernelet_note n = {.kind = KERNELET_NOTE_UNSUPPORTED};
    char text[KERNELET_MAX_NOTE];
    size_t len = 0;

    if (kcu_initialized() != CUDA_SUCCESS || !first_time(name))
        return;
    for (; name[len] && len < sizeof(text); len++)
        text[len] = (name[len] >= 0x20 && name[len] <= 0x7e) ? name[len] : '?';
    if (len == 0)
        return;
    n.text_len = (uint32_t)len;
    kcu_call(kcu.client, KERNELET_OP_TENANT_NOTE, &n, sizeof(n), text, len, NULL, 0, NULL);
}

int kcu_unsupported(const char *name)
{
    kcu_log("%s: not supported", name);
    kcu_note_daemon(name);
    return CUDA_ERROR_NOT_SUPPORTED;
}
