/* Recursion: a function on a cycle of the call graph has one set of register slots, .local
 * variables and call-frame bytes like any other (emu_compile.c), so a call of it first saves
 * what the caller's invocation of it holds, per lane, on that thread's save stack, and its
 * return restores it. The return values are moved aside (the return buffer) before the
 * restore; the instruction after the call copies them from there. */
#include "emu_internal.h"

#include <string.h>

uint8_t *emu_lane_pframe(const emu_warp *w, unsigned lane)
{
    return w->blk->pframe + (size_t)(w->thread0 + lane) * w->code->pframe_bytes;
}

uint8_t *emu_lane_local(const emu_warp *w, unsigned lane)
{
    return w->blk->local + (size_t)(w->thread0 + lane) * w->code->local_bytes;
}

uint8_t *emu_lane_retbuf(const emu_warp *w, unsigned lane)
{
    return w->blk->retbuf + (size_t)(w->thread0 + lane) * w->code->retbuf_bytes;
}

/* Copies the invocation state of f between lane l and buf (save: to buf). */
static void transfer(emu_warp *w, const emu_frame *f, unsigned l, uint8_t *buf, bool save)
{
    for (uint32_t s = f->slot_begin; s < f->slot_end; s++, buf += 8) {
        uint64_t *r = &EMU_REG(w, s)[l];
        if (save)
            memcpy(buf, r, 8);
        else
            memcpy(r, buf, 8);
    }
    const uint32_t local0 = (uint32_t)emu_local_base(w->code);   /* the lane buffer's start */
    struct {
        uint8_t *base;
        uint32_t begin, end;
    } areas[3] = {
        {emu_lane_local(w, l), f->local_begin - local0, f->local_end - local0},
        {emu_lane_pframe(w, l), f->formal_begin, f->formal_end},
        {emu_lane_pframe(w, l), f->body_begin, f->body_end},
    };
    for (unsigned a = 0; a < 3; a++) {
        uint32_t n = areas[a].end - areas[a].begin;
        if (save)
            memcpy(buf, areas[a].base + areas[a].begin, n);
        else
            memcpy(areas[a].base + areas[a].begin, buf, n);
        buf += n;
    }
}

bool emu_frame_save(emu_warp *w, const emu_frame *f, unsigned lane)
{
    const emu_code *c = w->code;
    uint32_t t = w->thread0 + lane, need = emu_frame_bytes(f);
    uint32_t *sp = &w->blk->save_sp[t];
    if (need > c->save_bytes - *sp)
        return false;
    transfer(w, f, lane, w->blk->save + (size_t)t * c->save_bytes + *sp, true);
    *sp += need;
    return true;
}

void emu_frame_restore(emu_warp *w, const emu_frame *f, unsigned lane)
{
    const emu_code *c = w->code;
    uint32_t t = w->thread0 + lane, need = emu_frame_bytes(f);
    uint32_t *sp = &w->blk->save_sp[t];
    /* the results first: the restore overwrites the frame they are in */
    memcpy(emu_lane_retbuf(w, lane), emu_lane_pframe(w, lane) + f->formal_begin,
           f->formal_end - f->formal_begin);
    *sp -= need;
    transfer(w, f, lane, w->blk->save + (size_t)t * c->save_bytes + *sp, false);
}
