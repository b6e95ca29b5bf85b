/* Address translation for kernel memory accesses, with bounds and alignment checks.
 *
 * Global and const addresses are device addresses, looked up in the launch's snapshot of
 * the allocation table (a per-warp cache makes repeated hits cheap). Shared, local and
 * param addresses are offsets into the block's or thread's own storage (local ones below
 * KEMU_LOCAL_TOP, where the thread's buffer ends). Generic addresses are classified by the
 * windows of emu_internal.h, as cvta makes them.
 */
#include "emu_internal.h"

int emu_fault_set(emu_warp *w, int code, unsigned lane, uint64_t addr, unsigned bytes,
                  const char *what)
{
    w->fault.code = code;
    w->fault.lane = lane;
    w->fault.addr = addr;
    w->fault.bytes = bytes;
    w->fault.what = what;
    return code;
}

static bool misaligned(emu_warp *w, uint64_t addr, unsigned bytes, unsigned lane,
                       const char *what)
{
    if ((addr & (bytes - 1)) == 0)
        return false;
    emu_fault_set(w, KEMU_EMISALIGNED, lane, addr, bytes, what);
    return true;
}

uint8_t *emu_global_slow(emu_warp *w, uint64_t addr, unsigned bytes, unsigned lane)
{
    if (misaligned(w, addr, bytes, lane, "global"))
        return NULL;
    const emu_alloc *a = emu_memmap_find(w->blk->L->map, addr, bytes);
    if (!a) {
        emu_fault_set(w, KEMU_EADDRESS, lane, addr, bytes, "global");
        return NULL;
    }
    w->cache = a;
    return a->host + (addr - a->base);
}

/* [off, off + bytes) inside a region of size bytes_total at base, else a fault. */
static uint8_t *in_region(emu_warp *w, uint8_t *base, uint64_t size, uint64_t off,
                          unsigned bytes, unsigned lane, uint64_t addr, const char *what)
{
    if (misaligned(w, addr, bytes, lane, what))
        return NULL;
    if (off >= size || bytes > size - off) {
        emu_fault_set(w, KEMU_EADDRESS, lane, addr, bytes, what);
        return NULL;
    }
    return base + off;
}

static uint8_t *shared_ptr(emu_warp *w, uint64_t off, unsigned bytes, unsigned lane,
                           uint64_t addr)
{
    emu_block *blk = w->blk;
    return in_region(w, blk->shared, blk->shared_bytes, off, bytes, lane, addr, "shared");
}

/* Local addresses are top-anchored: the thread's buffer holds [emu_local_base, KEMU_LOCAL_TOP)
 * (an address below the base wraps to a huge offset and faults as one above the top). */
static uint8_t *local_ptr(emu_warp *w, uint64_t local, unsigned bytes, unsigned lane,
                          uint64_t addr)
{
    uint32_t size = w->code->local_bytes;
    uint8_t *base = w->blk->local + (size_t)(w->thread0 + lane) * size;
    return in_region(w, base, size, local - emu_local_base(w->code), bytes, lane, addr,
                     "local");
}

static uint8_t *param_ptr(emu_warp *w, uint64_t addr, unsigned bytes, unsigned lane,
                          bool write)
{
    const emu_launch *L = w->blk->L;
    if (addr >= EMU_PFRAME_BASE) {
        uint32_t size = w->code->pframe_bytes;
        uint8_t *base = w->blk->pframe + (size_t)(w->thread0 + lane) * size;
        return in_region(w, base, size, addr - EMU_PFRAME_BASE, bytes, lane, addr, "param");
    }
    if (write) {   /* kernel parameters are read-only */
        emu_fault_set(w, KEMU_EADDRESS, lane, addr, bytes, "kernel parameter (read-only)");
        return NULL;
    }
    return in_region(w, (uint8_t *)L->params, L->param_bytes, addr, bytes, lane, addr,
                     "param");
}

uint8_t *emu_space_ptr(emu_warp *w, unsigned space, uint64_t addr, unsigned bytes,
                       unsigned lane, bool write)
{
    switch (space) {
    case EMU_SPACE_GLOBAL:
    case EMU_SPACE_CONST:
        return emu_global_ptr(w, addr, bytes, lane);
    case EMU_SPACE_SHARED:
        return shared_ptr(w, addr, bytes, lane, addr);
    case EMU_SPACE_LOCAL:
        return local_ptr(w, addr, bytes, lane, addr);
    case EMU_SPACE_PARAM:
        return param_ptr(w, addr, bytes, lane, write);
    default:
        break;
    }
    /* Generic: the windows first, everything else is global. */
    uint64_t window = addr & ~(EMU_WINDOW_BYTES - 1);
    if (window == EMU_SHARED_WINDOW)
        return shared_ptr(w, addr - EMU_SHARED_WINDOW, bytes, lane, addr);
    if (window == EMU_LOCAL_WINDOW)
        return local_ptr(w, addr - EMU_LOCAL_WINDOW, bytes, lane, addr);
    if (window == EMU_PARAM_WINDOW)
        return param_ptr(w, addr - EMU_PARAM_WINDOW, bytes, lane, write);
    return emu_global_ptr(w, addr, bytes, lane);
}
