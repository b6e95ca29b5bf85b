/* Copies and memsets as records of stream work.
 *
 * Pinned host memory lies in a region the daemon maps, so its copies name it directly
 * (zero copy). Pageable memory goes through staging slots: small host-to-device copies
 * travel inline in the batch; larger ones are cut into pieces that fit a slot, and the
 * pieces are pipelined (the library fills or empties one slot while the daemon moves
 * another). As in CUDA, a copy from pageable memory returns once the data is staged, a
 * copy to pageable memory once the data has arrived, and the *Async forms with pinned
 * memory return at once. Device ranges are checked against the allocations first. */
#include <string.h>

#include "graph_internal.h"

#define INLINE_MAX ((size_t)16 << 10)
#define DTOH_IN_FLIGHT 4

static size_t span_of(size_t width, size_t height, size_t pitch)
{
    return pitch * (height - 1) + width;
}

static struct kernelet_rec_copy record(uint32_t kind, uint32_t region, uint64_t dst,
                                       uint64_t src, size_t width, size_t height,
                                       size_t dst_pitch, size_t src_pitch, uint64_t stream,
                                       size_t tail_len)
{
    return (struct kernelet_rec_copy){
        .h = {.op = KERNELET_REC_COPY,
              .length = (uint32_t)(sizeof(struct kernelet_rec_copy) + ((tail_len + 7) & ~(size_t)7)),
              .stream = stream},
        .kind = kind, .region = region, .dst = dst, .src = src, .width = width,
        .height = height, .dst_pitch = dst_pitch, .src_pitch = src_pitch,
    };
}

/* Queues a copy record. */
static CUresult add_record(uint32_t kind, uint32_t region, uint64_t dst, uint64_t src,
                           size_t width, size_t height, size_t dst_pitch, size_t src_pitch,
                           uint64_t stream, const void *tail, size_t tail_len)
{
    struct kernelet_rec_copy rec = record(kind, region, dst, src, width, height, dst_pitch,
                                          src_pitch, stream, tail_len);

    return kcu_batch_add(kcu.client, &rec, sizeof(rec), tail, tail_len);
}

/* Sends a copy record at once; the answer comes when it has run (cb, and *token with keep). */
static CUresult submit_record(const struct kernelet_rec_copy *rec, bool keep,
                              const struct kcu_completion *cb, uint64_t *token)
{
    return kcu_batch_submit(kcu.client, rec, sizeof(*rec), NULL, 0, keep, cb, token);
}

/* Sends a copy record and waits until it has run. */
static CUresult submit_and_wait(const struct kernelet_rec_copy *rec)
{
    uint64_t token;
    CUresult r = submit_record(rec, true, NULL, &token);

    return r == CUDA_SUCCESS ? kcu_wait(kcu.client, token) : r;
}

/* A piece of a 2-D copy that fits one staging slot: rows [row, row + rows), bytes
 * [col, col + cols) of each. */
struct piece {
    size_t row, rows, col, cols;
};

/* The next piece after p (p->rows == 0 to start); false at the end. */
static bool next_piece(const struct kcu_copy *c, struct piece *p)
{
    size_t slot = KCU_STAGE_SLOT_SIZE;

    if (c->width <= slot) {
        size_t per = slot / c->width;
        size_t row = p->rows ? p->row + p->rows : 0;
        if (row >= c->height)
            return false;
        *p = (struct piece){row, c->height - row < per ? c->height - row : per, 0, c->width};
        return true;
    }
    /* Rows wider than a slot: one row at a time, in slot-sized columns. */
    size_t row = p->rows ? p->row : 0, col = p->rows ? p->col + p->cols : 0;
    if (p->rows && col >= c->width) {
        row++;
        col = 0;
    }
    if (row >= c->height)
        return false;
    *p = (struct piece){row, 1, col, c->width - col < slot ? c->width - col : slot};
    return true;
}

static void pack(void *dst, const struct kcu_copy *c, const struct piece *p)
{
    const char *src = (const char *)c->src_host + p->row * c->src_pitch + p->col;

    for (size_t i = 0; i < p->rows; i++)
        memcpy((char *)dst + i * p->cols, src + i * c->src_pitch, p->cols);
}

static void unpack(const struct kcu_copy *c, const struct piece *p, const void *src)
{
    char *dst = (char *)c->dst_host + p->row * c->dst_pitch + p->col;

    for (size_t i = 0; i < p->rows; i++)
        memcpy(dst + i * c->dst_pitch, (const char *)src + i * p->cols, p->cols);
}

/* Part `part` of `parts` of unpacking a piece (copy_threads.c): an equal share of the
 * slot's bytes, which may begin and end inside a row. */
struct unpack_job {
    const struct kcu_copy *c;
    const struct piece *p;
    const char *src;
};

static void unpack_part(void *arg, unsigned part, unsigned parts)
{
    const struct unpack_job *j = arg;
    size_t total = j->p->rows * j->p->cols;
    size_t at = total / parts * part, end = part + 1 == parts ? total : total / parts * (part + 1);
    char *dst = (char *)j->c->dst_host + j->p->row * j->c->dst_pitch + j->p->col;

    while (at < end) {
        size_t row = at / j->p->cols, col = at % j->p->cols;
        size_t n = j->p->cols - col < end - at ? j->p->cols - col : end - at;
        memcpy(dst + row * j->c->dst_pitch + col, j->src + at, n);
        at += n;
    }
}

static CUresult htod_inline(const struct kcu_copy *c)
{
    char packed[INLINE_MAX];
    const void *data = c->src_host;
    struct piece all = {0, c->height, 0, c->width};

    if (c->height > 1 && c->src_pitch != c->width) {
        pack(packed, c, &all);
        data = packed;
    }
    return add_record(KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, c->dst_dev, 0, c->width,
                      c->height, c->dst_pitch, c->width, c->stream, data, c->width * c->height);
}

static CUresult htod_staged(const struct kcu_copy *c)
{
    struct piece p = {0};
    CUresult r = CUDA_SUCCESS;

    while (r == CUDA_SUCCESS && next_piece(c, &p)) {
        struct kcu_stage st;
        struct kcu_completion done;
        if ((r = kcu_stage_acquire(&st)) != CUDA_SUCCESS)
            break;
        pack(st.ptr, c, &p);
        done = kcu_stage_completion(&st);
        struct kernelet_rec_copy rec = record(KERNELET_COPY_HTOD, st.region,
                                              c->dst_dev + p.row * c->dst_pitch + p.col, st.offset,
                                              p.cols, p.rows, c->dst_pitch, p.cols, c->stream, 0);
        if ((r = submit_record(&rec, false, &done, NULL)) != CUDA_SUCCESS)
            kcu_stage_release(&st);
    }
    return r;
}

static CUresult htod(const struct kcu_copy *c)
{
    struct kcu_host_span hs;
    size_t src_span = span_of(c->width, c->height, c->src_pitch);

    kcu_host_lookup(c->src_host, src_span, &hs);
    if (hs.pinned) {
        struct kernelet_rec_copy rec = record(KERNELET_COPY_HTOD, hs.region, c->dst_dev, hs.offset,
                                              c->width, c->height, c->dst_pitch, c->src_pitch,
                                              c->stream, 0);
        return c->async ? kcu_batch_add(kcu.client, &rec, sizeof(rec), NULL, 0)
                        : submit_and_wait(&rec);
    }
    if (c->width * c->height <= INLINE_MAX)
        return htod_inline(c);
    return htod_staged(c);
}

struct dtoh_flight {
    uint64_t token;
    struct kcu_stage st;
    struct piece p;
};

static CUresult dtoh_land(const struct kcu_copy *c, struct dtoh_flight *f)
{
    CUresult r = kcu_wait(kcu.client, f->token);

    struct unpack_job job = {c, &f->p, f->st.ptr};

    /* A large piece is unpacked on several threads: one memcpy is slower than the
     * daemon's DMA into the slot (copy_threads.c). */
    if (r == CUDA_SUCCESS && !kcu_copy_split(unpack_part, &job, f->p.rows * f->p.cols))
        unpack(c, &f->p, f->st.ptr);
    kcu_stage_release(&f->st);
    return r;
}

static CUresult dtoh_staged(const struct kcu_copy *c)
{
    struct dtoh_flight fl[DTOH_IN_FLIGHT];
    unsigned head = 0, n = 0;
    struct piece p = {0};
    CUresult r = CUDA_SUCCESS, r2;

    while (r == CUDA_SUCCESS && next_piece(c, &p)) {
        struct dtoh_flight *f;
        if (n == DTOH_IN_FLIGHT) {
            r = dtoh_land(c, &fl[head]);
            head = (head + 1) % DTOH_IN_FLIGHT;
            n--;
            if (r != CUDA_SUCCESS)
                break;
        }
        f = &fl[(head + n) % DTOH_IN_FLIGHT];
        if ((r = kcu_stage_acquire(&f->st)) != CUDA_SUCCESS)
            break;
        f->p = p;
        struct kernelet_rec_copy rec = record(KERNELET_COPY_DTOH, f->st.region, f->st.offset,
                                              c->src_dev + p.row * c->src_pitch + p.col, p.cols,
                                              p.rows, p.cols, c->src_pitch, c->stream, 0);
        if ((r = submit_record(&rec, true, NULL, &f->token)) != CUDA_SUCCESS) {
            kcu_stage_release(&f->st);
            break;
        }
        n++;
    }
    /* Land (or on error, collect) whatever is in flight. */
    for (; n > 0; n--, head = (head + 1) % DTOH_IN_FLIGHT)
        if ((r2 = dtoh_land(c, &fl[head])) != CUDA_SUCCESS && r == CUDA_SUCCESS)
            r = r2;
    return r;
}

static CUresult dtoh(const struct kcu_copy *c)
{
    struct kcu_host_span hs;
    size_t dst_span = span_of(c->width, c->height, c->dst_pitch);

    kcu_host_lookup(c->dst_host, dst_span, &hs);
    if (hs.pinned) {
        struct kernelet_rec_copy rec = record(KERNELET_COPY_DTOH, hs.region, hs.offset, c->src_dev,
                                              c->width, c->height, c->dst_pitch, c->src_pitch,
                                              c->stream, 0);
        return c->async ? kcu_batch_add(kcu.client, &rec, sizeof(rec), NULL, 0)
                        : submit_and_wait(&rec);
    }
    return dtoh_staged(c);
}

CUresult kcu_copy_check(const struct kcu_copy *c)
{
    CUresult r;

    if ((c->height > 1 && (c->dst_pitch < c->width || c->src_pitch < c->width)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = kcu_ready()) != CUDA_SUCCESS)
        return r;
    if (c->dst_side == KCU_DEVICE &&
        !kcu_device_range(c->dst_dev, span_of(c->width, c->height, c->dst_pitch)))
        return CUDA_ERROR_INVALID_VALUE;
    if (c->src_side == KCU_DEVICE &&
        !kcu_device_range(c->src_dev, span_of(c->width, c->height, c->src_pitch)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((c->dst_side == KCU_HOST && !c->dst_host) || (c->src_side == KCU_HOST && !c->src_host))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* While anything captures: a synchronous copy may be refused, and a copy on a capturing
 * stream becomes a node (*taken). */
static CUresult capture_copy(const struct kcu_copy *c, bool *taken)
{
    struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_MEMCPY, .u.copy = *c};
    CUresult r;

    *taken = false;
    if (!kcu_capture_any())
        return CUDA_SUCCESS;
    if (!c->async && (r = kcu_capture_check_unsafe()) != CUDA_SUCCESS)
        return r;
    return kcu_capture_take(c->stream, &op, taken);
}

CUresult kcu_copy_run(const struct kcu_copy *c)
{
    bool taken;
    CUresult r;

    if (c->width == 0 || c->height == 0)
        return CUDA_SUCCESS;
    if ((r = kcu_copy_check(c)) != CUDA_SUCCESS ||
        (r = capture_copy(c, &taken)) != CUDA_SUCCESS || taken)
        return r;
    if (c->dst_side == KCU_DEVICE && c->src_side == KCU_DEVICE)
        return add_record(KERNELET_COPY_DTOD, 0, c->dst_dev, c->src_dev, c->width, c->height,
                          c->dst_pitch, c->src_pitch, c->stream, NULL, 0);
    if (c->dst_side == KCU_DEVICE)
        return htod(c);
    if (c->src_side == KCU_DEVICE)
        return dtoh(c);
    /* Host to host: CUDA allows it (cudaMemcpyHostToHost, unified copies); the synchronous
     * form waits for the stream's work first. */
    if (!c->async && (r = kcu_call_handle(kcu.client, KERNELET_OP_STREAM_SYNC, c->stream)))
        return r;
    for (size_t i = 0; i < c->height; i++)
        memmove((char *)c->dst_host + i * c->dst_pitch,
                (const char *)c->src_host + i * c->src_pitch, c->width);
    return CUDA_SUCCESS;
}

CUresult kcu_memset_run(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem_size,
                        size_t width, size_t height, uint64_t stream)
{
    struct kernelet_rec_memset rec = {
        .h = {.op = KERNELET_REC_MEMSET, .length = sizeof(rec), .stream = stream},
        .dst = dst, .pitch = pitch, .width = width, .height = height, .value = value,
        .elem_size = elem_size,
    };
    CUresult r;

    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if ((r = kcu_ready()) != CUDA_SUCCESS)
        return r;
    if ((height > 1 && (pitch < width * elem_size || pitch % elem_size)) || dst % elem_size) {
        kcu_log("memset of 0x%llx (pitch %zu, %u-byte elements): misaligned",
                (unsigned long long)dst, pitch, elem_size);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!kcu_device_range(dst, span_of(width * elem_size, height, pitch)))
        return CUDA_ERROR_INVALID_VALUE;
    if (kcu_capture_any()) {
        struct kcu_op op = {.type = CU_GRAPH_NODE_TYPE_MEMSET,
                            .u.memset = {dst, pitch, width, height, value, elem_size}};
        bool taken;
        if ((r = kcu_capture_take(stream, &op, &taken)) != CUDA_SUCCESS || taken)
            return r;
    }
    return kcu_batch_add(kcu.client, &rec, sizeof(rec), NULL, 0);
}
