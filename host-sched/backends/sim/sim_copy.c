/* The sim's copy engines: to device, to host, on device (copies and fills), each a FIFO
 * taking latency + bytes / bandwidth per operation. */
#include "sim_internal.h"

static unsigned engine_of(copy_kind k)
{
    return k == COPY_H2D ? 0 : k == COPY_D2H ? 1 : 2;
}

static double duration_ns(const ksim *s, const job *j)
{
    double lat = (double)s->cfg.copy_latency_ns, b = (double)j->bytes;
    switch (j->ckind) {
    case COPY_H2D: return lat + b / s->cfg.h2d_gbs;
    case COPY_D2H: return lat + b / s->cfg.d2h_gbs;
    case COPY_D2D: return lat + 2 * b / s->cfg.gpu.mem_bandwidth_gbs; /* read and write */
    case COPY_SET: return lat + b / s->cfg.gpu.mem_bandwidth_gbs;
    }
    return lat;
}

void sim_engine_start(ksim *s, unsigned engine)
{
    job *j = s->engine_head[engine];
    if (!j)
        return;
    j->start_ns = s->now;
    j->end_ns = s->now + duration_ns(s, j);
}

static int submit(ksim *s, job *j, kbackend_error *err)
{
    (void)err;
    unsigned e = engine_of(j->ckind);
    int idle = !s->engine_head[e];
    sim_queue_push(&s->engine_head[e], &s->engine_tail[e], j);
    if (idle)
        sim_engine_start(s, e);
    s->in_flight++;
    return 0;
}

static int check_range(ksim *s, uint64_t addr, uint64_t bytes, const char *what,
                       kbackend_error *err)
{
    if (!bytes)
        return kbackend_fail(err, KBACKEND_EINVAL, "%s of 0 bytes", what);
    if (!sim_find_alloc(s, addr, bytes))
        return kbackend_fail(err, KBACKEND_EINVAL, "%s: [0x%llx, +%llu) is not inside one allocation",
                          what, (unsigned long long)addr, (unsigned long long)bytes);
    return 0;
}

static int copy_job(ksim *s, copy_kind k, uint64_t bytes, kbackend_done_fn done, void *user,
                    job **out, kbackend_error *err)
{
    if (!done)
        return kbackend_fail(err, KBACKEND_EINVAL, "no completion callback");
    job *j = sim_job_new(s, JOB_COPY, done, user);
    if (!j)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    j->ckind = k;
    j->bytes = bytes;
    *out = j;
    return 0;
}

int sim_copy_h2d(void *state, kbackend_devptr dst, const void *src, uint64_t bytes,
                 kbackend_done_fn done, void *user, kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    int rc = check_range(s, dst, bytes, "copy to device", err);
    if (rc)
        return rc;
    if (!src)
        return kbackend_fail(err, KBACKEND_EINVAL, "copy to device from NULL");
    job *j = NULL;
    if ((rc = copy_job(s, COPY_H2D, bytes, done, user, &j, err)))
        return rc;
    j->dst = dst;
    j->chost = src;
    return submit(s, j, err);
}

int sim_copy_d2h(void *state, void *dst, kbackend_devptr src, uint64_t bytes,
                 kbackend_done_fn done, void *user, kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    int rc = check_range(s, src, bytes, "copy to host", err);
    if (rc)
        return rc;
    if (!dst)
        return kbackend_fail(err, KBACKEND_EINVAL, "copy to host into NULL");
    job *j = NULL;
    if ((rc = copy_job(s, COPY_D2H, bytes, done, user, &j, err)))
        return rc;
    j->src = src;
    j->host = dst;
    return submit(s, j, err);
}

int sim_copy_d2d(void *state, kbackend_devptr dst, kbackend_devptr src, uint64_t bytes,
                 kbackend_done_fn done, void *user, kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    int rc = check_range(s, dst, bytes, "device copy (destination)", err);
    if (!rc)
        rc = check_range(s, src, bytes, "device copy (source)", err);
    if (rc)
        return rc;
    job *j = NULL;
    if ((rc = copy_job(s, COPY_D2D, bytes, done, user, &j, err)))
        return rc;
    j->dst = dst;
    j->src = src;
    return submit(s, j, err);
}

int sim_memset_d8(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                  kbackend_done_fn done, void *user, kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    int rc = check_range(s, dst, bytes, "memset", err);
    if (rc)
        return rc;
    job *j = NULL;
    if ((rc = copy_job(s, COPY_SET, bytes, done, user, &j, err)))
        return rc;
    j->dst = dst;
    j->value = value;
    return submit(s, j, err);
}
