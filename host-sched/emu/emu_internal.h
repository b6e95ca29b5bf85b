/* Internal structures of the PTX emulator (see docs/EMULATOR.md for the design).
 *
 * A module's entries are compiled ("linked") one by one into an emu_code: a flat array of
 * emu_insn holding the entry's body followed by the bodies of every .func it can call,
 * with registers resolved to slots of one per-warp register file, labels to instruction
 * indices, immediates and special registers to slots that are filled once per warp, and
 * a handler chosen per opcode and type. Nothing at run time looks at a string.
 *
 * Register file: slot s of lane l is regs[s * 32 + l], 64 bits. A value of a narrower type
 * lives in the low bits; readers truncate to their instruction type. Predicates are 0/1.
 */
#ifndef KERNELET_EMU_INTERNAL_H
#define KERNELET_EMU_INTERNAL_H

#include <kernelet/emu.h>
#include <kernelet/ptx.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the emulator stores device memory in host byte order and needs a little-endian host"
#endif

#define EMU_WARP 32u
#define EMU_FULL_MASK 0xffffffffu
#define EMU_MAX_BLOCK_THREADS 1024u
#define EMU_NO_SLOT UINT32_MAX
#define EMU_NO_PC UINT32_MAX
#define EMU_BARRIERS 16u
#define EMU_MAX_RECURSION 1024u          /* calls deep, with recursion */
#define EMU_SAVE_STACK_BYTES KEMU_STACK_BYTES /* per thread, for recursive invocations */

/* Generic-address windows (each 4 GiB) and the device's global range. */
#define EMU_SHARED_WINDOW 0x0000100000000000ull
#define EMU_LOCAL_WINDOW 0x0000200000000000ull
#define EMU_PARAM_WINDOW 0x0000300000000000ull
#define EMU_FUNC_WINDOW 0x0000400000000000ull   /* function addresses: opaque handles */
#define EMU_WINDOW_BYTES 0x100000000ull
#define EMU_GLOBAL_BASE 0x0000700000000000ull
#define EMU_GLOBAL_SPAN 0x0000100000000000ull   /* 2^44 bytes of addresses */
/* Param-space addresses: the kernel's parameter block at [0, param_bytes), per-thread call
 * frames (.param variables of call sequences and .func parameters) from here on. */
#define EMU_PFRAME_BASE 0x01000000u

#define EMU_LIKELY(x) __builtin_expect(!!(x), 1)
#define EMU_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- Types --------------------------------------------------------------------------- */

typedef enum emu_type {
    EMU_T_NONE = 0,
    EMU_T_B8, EMU_T_B16, EMU_T_B32, EMU_T_B64, EMU_T_B128,
    EMU_T_U8, EMU_T_U16, EMU_T_U32, EMU_T_U64,
    EMU_T_S8, EMU_T_S16, EMU_T_S32, EMU_T_S64,
    EMU_T_F16, EMU_T_F16X2, EMU_T_BF16, EMU_T_BF16X2, EMU_T_F32, EMU_T_F64,
    EMU_T_PRED,
    EMU_T_COUNT
} emu_type;

/* The type named by a modifier (".u32"), or EMU_T_NONE. */
emu_type emu_type_parse(const char *mod);
unsigned emu_type_size(emu_type t);        /* bytes; .pred 1 */
bool emu_type_is_signed(emu_type t);
bool emu_type_is_float(emu_type t);        /* f16, bf16 (x2 too), f32, f64 */
const char *emu_type_name(emu_type t);
/* Bytes and alignment of a declared variable (element type, vector, array dimensions; an
 * unsized "[]" takes its size from the initialiser). */
uint64_t emu_var_bytes(const kptx_var *v);
uint32_t emu_var_align(const kptx_var *v);

/* Sign- or zero-extends the low bits of v according to t (floats and bits: zero). */
static inline uint64_t emu_extend(uint64_t v, emu_type t)
{
    switch (t) {
    case EMU_T_S8: return (uint64_t)(int64_t)(int8_t)v;
    case EMU_T_S16: return (uint64_t)(int64_t)(int16_t)v;
    case EMU_T_S32: return (uint64_t)(int64_t)(int32_t)v;
    case EMU_T_U8: case EMU_T_B8: return v & 0xffu;
    case EMU_T_U16: case EMU_T_B16: case EMU_T_F16: case EMU_T_BF16: return v & 0xffffu;
    case EMU_T_U32: case EMU_T_B32: case EMU_T_F32: case EMU_T_F16X2: case EMU_T_BF16X2:
        return v & 0xffffffffu;
    case EMU_T_PRED: return v & 1u;
    default: return v;
    }
}

/* ---- Instructions -------------------------------------------------------------------- */

struct emu_warp;
struct emu_insn;
typedef int (*emu_fn)(struct emu_warp *w, const struct emu_insn *in, uint32_t mask);

/* What the scheduler does with an instruction; EMU_K_OP calls the handler. */
typedef enum emu_kind {
    EMU_K_OP = 0,
    EMU_K_BRA,       /* imm = target pc */
    EMU_K_EXIT,      /* exit, or ret in the entry */
    EMU_K_RET,       /* ret in a .func: pops the lane's return pc */
    EMU_K_CALL,      /* imm = callee pc; aux = copy list (arguments) */
    EMU_K_BAR,       /* bar.sync / bar.arrive / bar.red */
    EMU_K_WSYNC,     /* warp-synchronous handler: shfl, vote, match, redux, bar.warp.sync */
    EMU_K_FAIL,      /* unsupported instruction: fails the launch when reached */
    EMU_K_TRAP,
} emu_kind;

/* Rounding modes (cvt, float arithmetic). */
enum { EMU_RND_NONE = 0, EMU_RND_RN, EMU_RND_RZ, EMU_RND_RM, EMU_RND_RP, EMU_RND_RNA,
       EMU_RND_RNI, EMU_RND_RZI, EMU_RND_RMI, EMU_RND_RPI };

/* Comparison operators (setp, set, slct). */
enum { EMU_CMP_EQ = 1, EMU_CMP_NE, EMU_CMP_LT, EMU_CMP_LE, EMU_CMP_GT, EMU_CMP_GE,
       EMU_CMP_LO, EMU_CMP_LS, EMU_CMP_HI, EMU_CMP_HS,
       EMU_CMP_EQU, EMU_CMP_NEU, EMU_CMP_LTU, EMU_CMP_LEU, EMU_CMP_GTU, EMU_CMP_GEU,
       EMU_CMP_NUM, EMU_CMP_NAN };

/* Boolean combination (setp/set .and/.or/.xor). */
enum { EMU_BOP_NONE = 0, EMU_BOP_AND, EMU_BOP_OR, EMU_BOP_XOR };

/* State spaces of memory instructions. */
enum { EMU_SPACE_GENERIC = 0, EMU_SPACE_GLOBAL, EMU_SPACE_SHARED, EMU_SPACE_LOCAL,
       EMU_SPACE_PARAM, EMU_SPACE_CONST };

/* Instruction flags. */
enum {
    EMU_F_FTZ = 1u << 0,
    EMU_F_SAT = 1u << 1,
    EMU_F_ADDR32 = 1u << 2,   /* address register is 32 bits wide */
    EMU_F_PRED_OUT = 1u << 3, /* second destination is a predicate (shfl d|p, ...) */
    EMU_F_NAN = 1u << 4,      /* min/max .NaN */
    EMU_F_CC = 1u << 5,       /* writes the carry flag */
    EMU_F_CARRY_IN = 1u << 6, /* reads the carry flag (addc, subc, madc) */
    EMU_F_IMM_MASK = 1u << 7, /* warp-sync: membermask is imm, not a slot */
    EMU_F_ENTRY = 1u << 8,    /* ret/exit belongs to the entry function */
    EMU_F_COUNT = 1u << 9,    /* bar: a thread count operand is given (src[1]) */
    EMU_F_SAVE = 1u << 10,    /* call/ret/call-return of a recursive function (frame) */
    EMU_F_INDIRECT = 1u << 11,/* call through a function pointer (src[0]) and its return */
};

typedef struct emu_insn {
    emu_fn fn;               /* handler (EMU_K_OP, EMU_K_WSYNC) */
    uint8_t kind;            /* emu_kind */
    uint8_t type;            /* instruction type */
    uint8_t type2;           /* second type: cvt source, set/slct source */
    uint8_t rnd;             /* EMU_RND_* */
    uint8_t cmp;             /* EMU_CMP_* */
    uint8_t bop;             /* EMU_BOP_* */
    uint8_t space;           /* EMU_SPACE_* */
    uint8_t vec;             /* 1, 2 or 4 */
    uint8_t op;              /* handler-specific sub-operation */
    uint8_t n_dst, n_src;
    uint8_t guard_neg;
    uint16_t flags;          /* EMU_F_* */
    uint32_t guard;          /* predicate slot or EMU_NO_SLOT */
    uint32_t dst[4];
    uint32_t src[5];
    int64_t imm;             /* address offset, branch or call target, misc constant */
    uint32_t aux;            /* index into emu_code.copylists (calls) */
    uint32_t frame;          /* EMU_F_SAVE: index into emu_code.frames */
    uint32_t line;
    const kptx_instr *origin;/* for error messages (the module keeps the parse) */
    const char *note;        /* EMU_K_FAIL: why */
} emu_insn;

/* Special registers that are constant for a warp: slot values set at warp start. */
typedef enum emu_sreg {
    EMU_SR_TID_X, EMU_SR_TID_Y, EMU_SR_TID_Z,
    EMU_SR_NTID_X, EMU_SR_NTID_Y, EMU_SR_NTID_Z,
    EMU_SR_CTAID_X, EMU_SR_CTAID_Y, EMU_SR_CTAID_Z,
    EMU_SR_NCTAID_X, EMU_SR_NCTAID_Y, EMU_SR_NCTAID_Z,
    EMU_SR_LANEID, EMU_SR_WARPID, EMU_SR_NWARPID, EMU_SR_SMID, EMU_SR_NSMID, EMU_SR_GRIDID,
    EMU_SR_LANEMASK_EQ, EMU_SR_LANEMASK_LT, EMU_SR_LANEMASK_LE, EMU_SR_LANEMASK_GT,
    EMU_SR_LANEMASK_GE, EMU_SR_DYN_SMEM, EMU_SR_TOTAL_SMEM, EMU_SR_ZERO,
    EMU_SR_COUNT
} emu_sreg;

/* One copy of a call's argument or return value between two call-frame offsets. */
typedef struct emu_copy {
    uint32_t dst, src, bytes;
} emu_copy;

typedef struct emu_copylist {
    uint32_t first, count;   /* into emu_code.copies */
} emu_copylist;

/* What one invocation of a recursive function owns, saved per lane around each call of it:
 * its register slots, its .local variables, its call frame (formal parameters and results)
 * and the .param variables of its call sequences. */
typedef struct emu_frame {
    uint32_t slot_begin, slot_end;
    uint32_t local_begin, local_end;     /* local addresses, below KEMU_LOCAL_TOP */
    uint32_t formal_begin, formal_end;   /* call-frame offsets */
    uint32_t body_begin, body_end;       /* call-frame offsets */
} emu_frame;

/* A function as a target of calls through pointers: its handle, entry pc and where its
 * parameters and results are (emu_code.callee_vars[first ...], parameters first). */
typedef struct emu_callee {
    uint64_t handle;          /* 0 for the entry */
    uint32_t pc;
    uint32_t n_params, n_rets;
    uint32_t first;
} emu_callee;

/* Bytes one saved invocation of f takes. */
static inline uint32_t emu_frame_bytes(const emu_frame *f)
{
    return (f->slot_end - f->slot_begin) * 8u + (f->local_end - f->local_begin) +
           (f->formal_end - f->formal_begin) + (f->body_end - f->body_begin);
}

/* A compiled entry. */
typedef struct emu_code {
    char *name;
    emu_insn *insns;
    uint32_t n_insns;
    uint32_t n_slots;            /* all slots: registers, temporaries, constants, sregs */
    uint32_t n_regs;             /* slots [0, n_regs) are zeroed per block */
    uint32_t const_base, n_consts;
    uint64_t *const_values;
    uint32_t sreg_slot[EMU_SR_COUNT];
    uint32_t shared_static;      /* bytes; dynamic shared memory starts at dyn_offset */
    uint32_t dyn_offset;
    uint32_t local_bytes;        /* per thread: .local variables, below KEMU_LOCAL_TOP */
    uint32_t pframe_bytes;       /* per thread: call frames */
    uint32_t max_depth;          /* deepest call chain (EMU_MAX_RECURSION with recursion) */
    emu_frame *frames;           /* per linked function (recursive ones are saved) */
    uint32_t n_frames;
    uint32_t save_bytes;         /* per thread: stack of saved invocations; 0 = none */
    uint32_t retbuf_bytes;       /* per thread: results of the last recursive return */
    emu_callee *callees;         /* per linked function, when the code calls through pointers */
    uint32_t n_callees;
    emu_copy *callee_vars;       /* {offset, 0, bytes} of parameters and results */
    uint32_t param_bytes;
    uint32_t max_threads;
    emu_copylist *copylists;
    uint32_t n_copylists;
    emu_copy *copies;
    uint32_t n_copies;
    char *unsupported;           /* first unsupported instruction, or NULL */
    char **notes;                /* strings owned by the code (FAIL notes) */
    uint32_t n_notes;
} emu_code;

/* The lowest local address of c, where a thread's local buffer starts: its variables lie
 * in [this, KEMU_LOCAL_TOP), top-anchored as on the GPU. */
static inline uint64_t emu_local_base(const emu_code *c)
{
    return KEMU_LOCAL_TOP - c->local_bytes;
}

/* ---- Device memory ------------------------------------------------------------------- */

typedef struct emu_alloc {
    atomic_uint refs;            /* the live table holds one; each memory map one */
    uint64_t base;
    uint64_t bytes;
    uint8_t *host;
    bool module_var;             /* belongs to a module (not freed by kemu_mem_free) */
    bool external;               /* host memory of the caller's (kemu_host_map): not freed,
                                    not counted as device memory */
} emu_alloc;

/* An immutable snapshot of the live allocations, sorted by address. */
typedef struct emu_memmap {
    atomic_uint refs;
    size_t n;
    emu_alloc **allocs;
} emu_memmap;

typedef struct emu_memory {
    pthread_mutex_t lock;
    emu_memmap *map;             /* current snapshot, replaced on alloc/free */
    uint64_t limit, used;
    uint64_t cursor;             /* next address to try */
} emu_memory;

int emu_memory_init(emu_memory *mem, uint64_t limit);
void emu_memory_destroy(emu_memory *mem);
/* bytes inside the range in (NULL: anywhere in the device's span). */
int emu_memory_alloc(emu_memory *mem, uint64_t bytes, bool module_var, const kemu_range *in,
                     emu_alloc **out,
                     kemu_error *err);
int emu_memory_free(emu_memory *mem, uint64_t base, bool module_var, kemu_error *err);
/* Host memory of the caller's at a device address (in `in` when given); it stays the
 * caller's and must outlive every launch that may use it. */
int emu_memory_map_host(emu_memory *mem, uint8_t *host, uint64_t bytes, const kemu_range *in,
                        emu_alloc **out, kemu_error *err);
int emu_memory_unmap_host(emu_memory *mem, uint64_t base, kemu_error *err);
emu_memmap *emu_memory_snapshot(emu_memory *mem);
void emu_memmap_release(emu_memmap *map);
/* The allocation holding [addr, addr + bytes) in map, or NULL. */
emu_alloc *emu_memmap_find(const emu_memmap *map, uint64_t addr, uint64_t bytes);

/* ---- Worker pool --------------------------------------------------------------------- */

typedef struct emu_job emu_job;
struct emu_job {
    void (*work)(emu_job *job, unsigned participant);
    atomic_uint participants;    /* next participant index */
    unsigned active;             /* pool threads inside work() (under the pool lock) */
    bool closed;                 /* no new pool thread may enter */
    emu_job *next;
};

typedef struct emu_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* jobs were queued, or shutdown */
    pthread_cond_t done;         /* a pool thread left a job */
    emu_job *queue;
    bool shutdown;
    unsigned n_threads;
    pthread_t *threads;
} emu_pool;

int emu_pool_start(emu_pool *pool, unsigned n_threads, kemu_error *err);
void emu_pool_stop(emu_pool *pool);
/* Runs job->work on the calling thread and on idle pool threads; returns when every
 * participant has returned from work. */
void emu_pool_run(emu_pool *pool, emu_job *job);

/* ---- Device, module, function ---------------------------------------------------------- */

struct kemu_device {
    kemu_device_config cfg;
    emu_memory mem;
    emu_pool pool;
    atomic_uint_fast64_t launches;   /* %gridid */
    pthread_mutex_t modules_lock;
    struct kemu_module *modules;     /* freed with the device */
};

typedef struct emu_var {
    const char *name;
    kptx_space space;
    uint64_t addr;            /* global/const: device address; shared: offset */
    uint64_t bytes;
    uint32_t align;
    bool is_extern;           /* dynamic shared memory */
    emu_alloc *alloc;
} emu_var;

struct kemu_function {
    struct kemu_module *mod;
    const kptx_function *fn;
    kemu_param_desc *params;
    unsigned n_params;
    emu_code *code;           /* NULL when compile failed: see error */
    kemu_error error;
};

struct kemu_module {
    kemu_device *dev;
    kemu_range range;           /* where its variables live; {0, 0}: anywhere */
    kptx_module *ptx;
    emu_var *vars;
    unsigned n_vars;
    uint32_t shared_bytes;    /* module-scope .shared variables */
    struct kemu_function *fns;
    unsigned n_fns;
    struct kemu_module *next, *prev;
};

/* Module variable by name (module scope), or NULL. */
const emu_var *emu_module_var(const struct kemu_module *mod, const char *name);

/* The address a function's name stands for (an opaque handle: indirect calls are not
 * supported), or 0 when the module has no function of that name. */
uint64_t emu_function_handle(const kptx_module *m, const char *name);

/* Compiles entry fn of mod. Decoding failures of single instructions become EMU_K_FAIL
 * instructions; structural failures (unknown callee, recursion) fail the compile. */
int emu_compile(const struct kemu_module *mod, const kptx_function *fn, emu_code **out,
                kemu_error *err);
void emu_code_free(emu_code *code);

/* ---- Execution ----------------------------------------------------------------------- */

typedef struct emu_launch emu_launch;
typedef struct emu_block emu_block;

/* A fault recorded by a handler: the lane and what it touched. */
typedef struct emu_fault {
    int code;
    unsigned lane;
    uint64_t addr;
    unsigned bytes;
    const char *what;         /* static text: "shared", "global", ... */
} emu_fault;

typedef struct emu_warp {
    uint64_t *regs;                 /* n_slots * 32 */
    emu_block *blk;
    const emu_code *code;
    uint32_t lane_pc[EMU_WARP];
    uint32_t valid;                 /* lanes that are threads of the block */
    uint32_t run;                   /* lanes that can run */
    uint32_t exited;
    uint32_t barrier;               /* lanes waiting at a barrier */
    uint8_t bar_id[EMU_WARP];
    uint32_t syncwait;              /* lanes waiting for a warp-synchronous instruction */
    uint32_t group_pc, group_mask, stop_pc;  /* the lanes executing now, lock-step */
    uint32_t thread0;               /* linear thread index of lane 0 in the block */
    uint32_t warp_id;
    uint64_t executed;              /* warp instructions, for the budget and %clock */
    uint64_t thread_insns;
    uint32_t backjumps;             /* backward branches since the last reschedule */
    uint8_t carry[EMU_WARP];
    uint16_t depth[EMU_WARP];
    uint32_t returned[EMU_WARP];    /* frame of the function each lane returned from last */
    uint32_t *ret_stack;            /* [lane][max_depth] */
    const emu_alloc *cache;         /* last global allocation hit */
    emu_fault fault;
} emu_warp;

struct emu_block {
    emu_launch *L;
    emu_warp *warps;
    unsigned n_warps;
    unsigned n_threads;
    unsigned live;                  /* threads that have not exited */
    uint32_t ctaid[3];
    uint8_t *shared;
    uint32_t shared_bytes;
    uint8_t *local;                 /* n_threads * local_bytes */
    uint8_t *pframe;                /* n_threads * pframe_bytes */
    uint32_t bar_arrived[EMU_BARRIERS];
    uint32_t bar_expected[EMU_BARRIERS];   /* 0 = all live threads */
    uint32_t bar_red[EMU_BARRIERS];        /* bar.red accumulators */
    const emu_insn *bar_insn[EMU_BARRIERS];
    uint64_t *regfile;              /* all warps' registers */
    uint32_t *ret_stacks;
    uint8_t *save;                  /* n_threads * code->save_bytes */
    uint32_t *save_sp;              /* per thread: bytes used in its save stack */
    uint8_t *retbuf;                /* n_threads * code->retbuf_bytes */
    unsigned participant;           /* %smid */
};

struct emu_launch {
    kemu_device *dev;
    const kemu_function *fn;
    const emu_code *code;
    emu_memmap *map;
    const uint8_t *params;
    uint32_t param_bytes;
    uint32_t grid[3], block[3];
    uint64_t total_blocks;
    uint32_t dyn_shared;
    uint32_t shared_total;
    uint64_t gridid;
    uint64_t budget;
    const volatile int *cancel;
    unsigned workers;
    atomic_uint_fast64_t next_block;
    atomic_int stop;                /* a participant failed: others stop claiming */
    atomic_uint_fast64_t thread_insns, warp_insns;
    pthread_mutex_t err_lock;
    int err_code;
    kemu_error err;
};

/* Runs one block (ctaid = linear block id) with the participant's block context. */
int emu_block_run(emu_block *blk, uint64_t linear_block);
/* Allocates a block context for the launch; NULL on allocation failure. */
emu_block *emu_block_new(emu_launch *L, unsigned participant);
void emu_block_free(emu_block *blk);

/* A lane's call frames, local memory and return buffer. */
uint8_t *emu_lane_pframe(const emu_warp *w, unsigned lane);
uint8_t *emu_lane_local(const emu_warp *w, unsigned lane);
uint8_t *emu_lane_retbuf(const emu_warp *w, unsigned lane);
/* Saves lane's invocation of recursive function f (false: the save stack is full) and
 * restores it, the results moved to the return buffer first (emu_frames.c). */
bool emu_frame_save(emu_warp *w, const emu_frame *f, unsigned lane);
void emu_frame_restore(emu_warp *w, const emu_frame *f, unsigned lane);

/* Records a handler fault on lane; returns code for the handler to return. */
int emu_fault_set(emu_warp *w, int code, unsigned lane, uint64_t addr, unsigned bytes,
                  const char *what);

/* Formats the launch error for a fault of warp w at instruction in. */
void emu_launch_fail(emu_launch *L, const emu_warp *w, const emu_insn *in, int code,
                     const char *detail);

/* Text of an instruction for messages: "ld.global.u32" into buf. */
void emu_insn_text(const emu_insn *in, char *buf, size_t len);

/* ---- Memory access from handlers ------------------------------------------------------ */

uint8_t *emu_global_slow(emu_warp *w, uint64_t addr, unsigned bytes, unsigned lane);

/* Host pointer for a global access of bytes at addr by lane, or NULL after a fault. */
static inline uint8_t *emu_global_ptr(emu_warp *w, uint64_t addr, unsigned bytes,
                                      unsigned lane)
{
    const emu_alloc *a = w->cache;
    if (EMU_LIKELY(a != NULL)) {
        uint64_t off = addr - a->base;
        if (EMU_LIKELY(addr >= a->base && off < a->bytes && bytes <= a->bytes - off &&
                       (addr & (bytes - 1)) == 0))
            return a->host + off;
    }
    return emu_global_slow(w, addr, bytes, lane);
}

/* Host pointer for any state space (generic addresses are classified), or NULL. */
uint8_t *emu_space_ptr(emu_warp *w, unsigned space, uint64_t addr, unsigned bytes,
                       unsigned lane, bool write);

/* ---- Helpers for handlers ------------------------------------------------------------- */

#define EMU_REG(w, slot) ((w)->regs + (size_t)(slot) * EMU_WARP)

/* Runs body for every lane l in mask; the full mask takes a loop the compiler vectorises. */
#define EMU_FOR_LANES(mask, l, ...)                                                      \
    do {                                                                                 \
        if ((mask) == EMU_FULL_MASK) {                                                   \
            for (unsigned l = 0; l < EMU_WARP; l++) { __VA_ARGS__; }                     \
        } else {                                                                         \
            for (uint32_t m_ = (mask); m_; m_ &= m_ - 1) {                               \
                unsigned l = (unsigned)__builtin_ctz(m_);                                \
                __VA_ARGS__;                                                             \
            }                                                                            \
        }                                                                                \
    } while (0)

/* Per-lane sources of a warp-synchronous instruction's membermask. */
uint32_t emu_membermask(const emu_warp *w, const emu_insn *in, uint32_t mask);

/* Handler lookup tables, one file per family (emu_ops_*.c). They return NULL for a
 * combination they do not implement. */
emu_fn emu_op_int_binary(const char *op, emu_type t, uint16_t flags);
emu_fn emu_op_int_mul(const char *op, emu_type t, unsigned mode, uint16_t flags);
emu_fn emu_op_int_unary(const char *op, emu_type t);
emu_fn emu_op_bits(const char *op, emu_type t);
emu_fn emu_op_float(const char *op, emu_type t, unsigned rnd, uint16_t flags);
emu_fn emu_op_cvt(emu_type dst, emu_type src, unsigned rnd, uint16_t flags);
emu_fn emu_op_compare(const char *op, emu_type t);
emu_fn emu_op_move(const char *op, emu_type t);
emu_fn emu_op_mem(const char *op, unsigned space, emu_type t, unsigned vec, uint16_t flags);
emu_fn emu_op_atom(unsigned space, unsigned aop, emu_type t, bool returns);
emu_fn emu_op_warp(const char *op, unsigned mode, emu_type t);
emu_fn emu_op_misc(const char *op);
emu_fn emu_op_setp_fast(unsigned cmp, emu_type t);
/* Half-precision arithmetic (add, sub, mul, fma, min, max, neg, abs); *op gets the
 * sub-operation to store in emu_insn.op. */
emu_fn emu_op_half(const char *name, emu_type t, unsigned rnd, uint16_t flags, uint8_t *op);
/* Sub-operation codes stored in emu_insn.op: float opcode ("add" -> F_ADD), testp kind. */
unsigned emu_float_opcode(const char *op);
unsigned emu_testp_opcode(const char *mod);

/* Multiply modes for emu_op_int_mul. */
enum { EMU_MUL_LO = 1, EMU_MUL_HI, EMU_MUL_WIDE };
/* Atomic operations. */
enum { EMU_AOP_ADD = 1, EMU_AOP_MIN, EMU_AOP_MAX, EMU_AOP_INC, EMU_AOP_DEC, EMU_AOP_CAS,
       EMU_AOP_EXCH, EMU_AOP_AND, EMU_AOP_OR, EMU_AOP_XOR };
/* Barrier operations (emu_insn.op of EMU_K_BAR). */
enum { EMU_BAR_SYNC = 0, EMU_BAR_ARRIVE, EMU_BAR_RED_POPC, EMU_BAR_RED_AND, EMU_BAR_RED_OR };
/* Warp-synchronous modes. */
enum { EMU_WS_UP = 1, EMU_WS_DOWN, EMU_WS_BFLY, EMU_WS_IDX,
       EMU_WS_ALL, EMU_WS_ANY, EMU_WS_UNI, EMU_WS_BALLOT,
       EMU_WS_MATCH_ANY, EMU_WS_MATCH_ALL,
       EMU_WS_RED_ADD, EMU_WS_RED_MIN, EMU_WS_RED_MAX, EMU_WS_RED_AND, EMU_WS_RED_OR,
       EMU_WS_RED_XOR };

/* Makes room for item n in a growing array of elem-byte items (doubling its capacity);
 * 0 or KEMU_ENOMEM. */
int emu_grow(void **items, uint32_t *cap, uint32_t n, size_t elem);

/* Error helpers. */
int emu_error_set(kemu_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Half precision conversions (emu_half.c). rnd is EMU_RND_RN/RZ/RM/RP. */
uint16_t emu_f64_to_f16(double x, unsigned rnd);
double emu_f16_to_f64(uint16_t h);
uint16_t emu_f64_to_bf16(double x, unsigned rnd);
double emu_bf16_to_f64(uint16_t h);

#endif
