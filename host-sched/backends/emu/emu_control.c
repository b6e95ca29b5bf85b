/* Per-domain control words on the emulator (emu_control.h): 8 bytes of common memory per
 * domain, the cancel word then the fault word. */
#include "emu_control.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct words {
    uint32_t domain;
    kemu_devptr at;             /* cancel word; the fault word at + 4 */
} words;

struct emu_control {
    kemu_device *dev;
    kemu_range common;
    pthread_mutex_t lock;
    words *v;
    size_t n, cap;
};

emu_control *emu_control_new(kemu_device *dev, kemu_range common)
{
    emu_control *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->dev = dev;
    c->common = common;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void emu_control_free(emu_control *c)
{
    if (!c)
        return;
    kemu_error e = {0};
    for (size_t i = 0; i < c->n; i++)
        kemu_mem_free(c->dev, c->v[i].at, &e);
    free(c->v);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static words *find_locked(emu_control *c, uint32_t domain)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].domain == domain)
            return &c->v[i];
    return NULL;
}

static int make_locked(emu_control *c, uint32_t domain, words **out, kbackend_error *err)
{
    static const uint32_t clear[2] = {0, 0};
    kemu_error e = {0};
    kemu_devptr at;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        words *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
        c->v = v;
        c->cap = cap;
    }
    if (kemu_mem_alloc_in(c->dev, &c->common, sizeof(clear), &at, &e) ||
        kemu_memcpy_htod(c->dev, at, clear, sizeof(clear), &e))
        return kbackend_fail(err, KBACKEND_EDEVMEM, "control words: %s", e.message);
    c->v[c->n] = (words){.domain = domain, .at = at};
    *out = &c->v[c->n++];
    return 0;
}

int emu_control_words(emu_control *c, uint32_t domain, uint64_t *cancel, uint64_t *fault,
                      kbackend_error *err)
{
    pthread_mutex_lock(&c->lock);
    words *w = find_locked(c, domain);
    int rc = w ? 0 : make_locked(c, domain, &w, err);
    if (!rc) {
        *cancel = w->at;
        *fault = w->at + 4;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

uint32_t emu_control_take_fault(emu_control *c, uint32_t domain)
{
    static const uint32_t clear = 0;
    uint32_t code = 0;
    kemu_error e = {0};
    pthread_mutex_lock(&c->lock);
    words *w = find_locked(c, domain);
    if (w && kemu_memcpy_dtoh(c->dev, &code, w->at + 4, sizeof(code), &e) == 0 && code)
        kemu_memcpy_htod(c->dev, w->at + 4, &clear, sizeof(clear), &e);
    pthread_mutex_unlock(&c->lock);
    return code;
}

void emu_control_release(emu_control *c, uint32_t domain)
{
    pthread_mutex_lock(&c->lock);
    words *w = find_locked(c, domain);
    kemu_error e = {0};
    if (w) {
        kemu_mem_free(c->dev, w->at, &e);
        *w = c->v[--c->n];
    }
    pthread_mutex_unlock(&c->lock);
}
