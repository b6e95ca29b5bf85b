/* The sim's device memory: a bump allocator over a 64-bit address space, optionally
 * backed by host memory so that copies and memsets really move bytes. */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define ALIGN 256u
#define BASE_ADDR 0x100000000ull

sim_alloc *sim_find_alloc(ksim *s, uint64_t addr, uint64_t bytes)
{
    return krange_find(&s->allocs, addr, bytes);
}

int sim_domain_window(void *state, uint32_t domain, kbackend_window *out, kbackend_error *err)
{
    if (!domain)
        return kbackend_fail(err, KBACKEND_EINVAL, "domain 0 has no window");
    return kbackend_windows_get(((ksim *)state)->windows, domain, out, err);
}

void sim_domain_release(void *state, uint32_t domain)
{
    kbackend_windows_release(((ksim *)state)->windows, domain);
}

/* Where an allocation of span bytes (its gap after included) goes: domain 0 bumps a
 * pointer below the windows; the others take the first fit in their window, with a gap
 * before it too (the first fit starts right at the end of the allocation before). */
static int place(ksim *s, uint32_t domain, uint64_t span, uint64_t *addr, kbackend_error *err)
{
    kbackend_window w;
    if (!domain) {
        *addr = s->next_addr ? s->next_addr : BASE_ADDR;
        if (span > SIM_WINDOW_SPAN_BASE - *addr)
            return kbackend_fail(err, KBACKEND_EDEVMEM, "device addresses used up");
        s->next_addr = *addr + span;
        return 0;
    }
    int rc = kbackend_windows_get(s->windows, domain, &w, err);
    if (!rc && krange_first_fit(&s->allocs, w.base, w.base + w.size, span + ALIGN, ALIGN, addr))
        rc = kbackend_fail(err, KBACKEND_EDEVMEM, "the address window of domain %u is full",
                           domain);
    *addr += ALIGN;
    return rc;
}

int sim_mem_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                  kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    if (!out || !bytes)
        return kbackend_fail(err, KBACKEND_EINVAL, "allocation of 0 bytes");
    if (bytes > s->cfg.mem_bytes || s->stats.mem_in_use > s->cfg.mem_bytes - bytes)
        return kbackend_fail(err, KBACKEND_EDEVMEM, "out of device memory (%llu bytes asked, %llu "
                          "of %llu in use)", (unsigned long long)bytes,
                          (unsigned long long)s->stats.mem_in_use,
                          (unsigned long long)s->cfg.mem_bytes);
    unsigned char *data = NULL;
    if (s->cfg.back_memory && !(data = calloc(1, bytes)))
        return kbackend_fail(err, KBACKEND_ENOMEM, "no host memory to back %llu bytes",
                          (unsigned long long)bytes);
    uint64_t addr = 0, span = (bytes + ALIGN - 1) / ALIGN * ALIGN + ALIGN; /* a gap catches
                                                                              overruns */
    int rc = place(s, domain, span, &addr, err);
    if (rc) {
        free(data);
        return rc;
    }
    sim_alloc *a = krange_insert(&s->allocs, addr, bytes);
    if (!a) {
        free(data);
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    }
    a->data = data;
    s->stats.mem_in_use += bytes;
    *out = addr;
    return 0;
}

int sim_mem_free(void *state, kbackend_devptr ptr, kbackend_error *err)
{
    ksim *s = state;
    sim_alloc *a = sim_find_alloc(s, ptr, 1);
    if (!a || a->r.base != ptr)
        return kbackend_fail(err, KBACKEND_EINVAL, "0x%llx is not an allocation",
                          (unsigned long long)ptr);
    s->stats.mem_in_use -= a->r.size;
    free(a->data);
    krange_remove(&s->allocs, a);
    return 0;
}

void sim_mem_release_all(ksim *s)
{
    for (size_t i = 0; i < krange_count(&s->allocs); i++)
        free(((sim_alloc *)krange_at(&s->allocs, i))->data);
    krange_table_clear(&s->allocs);
}

/* Data of [addr, addr + bytes), or NULL when unbacked or freed since submission. */
static unsigned char *bytes_at(ksim *s, uint64_t addr, uint64_t bytes)
{
    sim_alloc *a = sim_find_alloc(s, addr, bytes);
    return a && a->data ? a->data + (addr - a->r.base) : NULL;
}

void sim_copy_apply(ksim *s, job *j)
{
    unsigned char *dst, *src;
    switch (j->ckind) {
    case COPY_H2D:
        if ((dst = bytes_at(s, j->dst, j->bytes)))
            memcpy(dst, j->chost, j->bytes);
        break;
    case COPY_D2H:
        if ((src = bytes_at(s, j->src, j->bytes)))
            memcpy(j->host, src, j->bytes);
        else
            memset(j->host, 0, j->bytes);
        break;
    case COPY_D2D:
        if ((dst = bytes_at(s, j->dst, j->bytes)) && (src = bytes_at(s, j->src, j->bytes)))
            memmove(dst, src, j->bytes);
        break;
    case COPY_SET:
        if ((dst = bytes_at(s, j->dst, j->bytes)))
            memset(dst, j->value, j->bytes);
        break;
    }
    s->stats.copies++;
    s->stats.bytes_copied += j->bytes;
}
