/* PTX modules: parse, inspect, print and slice (library kernelet-ptx, host-sched/ptx/).
 *
 * kptx_parse turns PTX text into a kptx_module that keeps every structure a transformation
 * or an interpreter needs: module directives, variables, .entry/.func with their parameters
 * and performance directives, and bodies as a sequence of statements (instructions with
 * guard, opcode, modifiers and typed operands; labels; declarations; other directives kept
 * verbatim, e.g. .loc and .pragma). kptx_print writes it back; what it prints assembles with
 * ptxas to the same cubin as the input (comments are dropped, layout is normalised).
 *
 * The structures are public so that other components (the slicer, the PTX emulator) can
 * walk them; treat them as read-only. Everything a module points to lives in the module's
 * arena and is freed by kptx_module_free. The library never prints and never aborts;
 * functions return 0 or a negative KPTX_E* code and describe the failure in a kptx_error
 * (which may be NULL when the caller does not want it).
 *
 * Slicing (kptx_slice_module): Kernelet runs a kernel as slices, contiguous ranges of linear
 * block ids launched as 1-D grids. The sliced variant of entry E is the entry E__kslice with
 * E's parameters followed by four .u32 parameters: the slice's first linear block id and the
 * original grid's x, y and z dimensions. Every read of %ctaid.{x,y,z} and %nctaid.{x,y,z}
 * in it sees the original grid's values, where linear id = x + nx * (y + ny * z). A slice of
 * `count` blocks is launched with grid (count, 1, 1) and the original block dimensions.
 * Grids of 2^32 or more blocks are run whole (the arithmetic is 32-bit). The variant keeps
 * the original's block size, dynamic shared memory and function attributes, and uses 24
 * bytes of static shared memory of its own when it reads %ctaid (docs/PTX.md).
 */
#ifndef KERNELET_PTX_H
#define KERNELET_PTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negative); 0 is success. Shared with the fatbin reader (fatbin.h). */
enum {
    KPTX_OK = 0,
    KPTX_EINVAL = -1,       /* bad argument (NULL pointer, unknown entry name) */
    KPTX_ESYNTAX = -2,      /* the text is not PTX this parser understands */
    KPTX_ENOMEM = -3,       /* allocation failed */
    KPTX_EUNSUPPORTED = -4, /* valid input using a feature that is not supported */
    KPTX_ENOTFOUND = -5,    /* no such entry, or no fatbin entry for the target */
    KPTX_ELIMIT = -6,       /* input larger than a documented limit */
    KPTX_ECORRUPT = -7,     /* binary input is malformed (magic, sizes, compressed data) */
    KPTX_EIO = -8,          /* a file could not be read */
};

/* Where a failure happened (line and column are 1-based, 0 when not about text). */
typedef struct kptx_error {
    int code;
    unsigned line;
    unsigned column;
    char message[256];
} kptx_error;

/* Static description of an error code. */
const char *kptx_strerror(int code);

/* ---- The module as parsed ------------------------------------------------------------ */

typedef enum kptx_operand_kind {
    KPTX_OPND_REG,      /* a declared register: name "%r1", "%fd3", "%p2" (also names without %) */
    KPTX_OPND_SREG,     /* a special register, component included: "%tid.x", "%laneid",
                           "%ctaid.y", "%envreg3", "%clock64" */
    KPTX_OPND_INT,      /* integer literal; value holds it (two's complement, 64 bits) */
    KPTX_OPND_FLOAT,    /* float literal: 0fXXXXXXXX (width 32), 0dX..X or decimal (width 64) */
    KPTX_OPND_SYMBOL,   /* variable, function or label name; value = byte offset (sym+4) */
    KPTX_OPND_ADDRESS,  /* [...]: elems[0] is the base (REG, SYMBOL or INT), value the
                           offset; tex/surface forms [t, {x, y}] have a VECTOR as elems[1] */
    KPTX_OPND_VECTOR,   /* {a, b, ...}: elems */
    KPTX_OPND_LIST,     /* (a, b, ...): call return and argument lists */
    KPTX_OPND_PAIR,     /* a|b: the two predicate destinations of setp and friends */
    KPTX_OPND_SINK,     /* _ */
} kptx_operand_kind;

typedef struct kptx_operand {
    kptx_operand_kind kind;
    bool negated;               /* '!' before a predicate operand */
    bool generic;               /* SYMBOL in an initialiser written generic(sym) */
    bool has_offset;            /* ADDRESS, SYMBOL: an offset was written, even "+0" (ptxas
                                   -G code differs between [%r+0] and [%r]) */
    unsigned width;             /* FLOAT: 32 or 64 */
    unsigned n_elems;
    const char *name;           /* REG, SREG, SYMBOL: the name as written; operands with the
                                   same name share the string */
    union {
        int64_t value;          /* INT: the value; SYMBOL, ADDRESS: byte offset */
        uint64_t bits;          /* FLOAT: IEEE-754 bits (binary32 in the low half if width 32) */
    };
    struct kptx_operand *elems; /* ADDRESS, VECTOR, LIST, PAIR */
} kptx_operand;

typedef struct kptx_instr {
    const char *guard;          /* predicate register of "@%p" / "@!%p", or NULL */
    bool guard_negated;
    const char *opcode;         /* base name: "ld", "mad", "setp", "bra", "call" */
    unsigned n_mods;
    const char **mods;          /* modifiers in source order, dot included: ".global", ".u32" */
    unsigned n_ops;
    kptx_operand *ops;          /* destination(s) first, as written */
} kptx_instr;

typedef enum kptx_space {
    KPTX_SPACE_NONE = 0,
    KPTX_SPACE_REG,
    KPTX_SPACE_SREG,
    KPTX_SPACE_CONST,
    KPTX_SPACE_GLOBAL,
    KPTX_SPACE_LOCAL,
    KPTX_SPACE_PARAM,
    KPTX_SPACE_SHARED,
    KPTX_SPACE_TEX,
} kptx_space;

/* A variable, register or parameter declaration. */
typedef struct kptx_var {
    const char *linkage;        /* ".visible", ".extern", ".weak", ".common" or NULL */
    const char *type;           /* ".b8", ".u32", ".f64", ".pred", ".texref", ... */
    const char *name;
    kptx_space space;
    unsigned align;             /* bytes, 0 when not given */
    unsigned vec;               /* 2, 4 or 8 for .v2/.v4/.v8, else 0 */
    unsigned reg_range;         /* ".reg .b32 %r<10>": 10 (registers %r0..%r9); else 0 */
    unsigned n_dims;            /* array dimensions; dims[i] == 0 for "[]" */
    /* Parameters: ".ptr" attributes of kernel pointer parameters (space NONE = generic). */
    bool is_ptr;
    /* Initialiser "= {...}" or "= v": see init below. */
    bool has_init;
    kptx_space ptr_space;
    unsigned ptr_align;
    uint64_t dims[4];
    /* ".attribute(...)" of a module variable as written, parentheses included
     * ("(.managed)"), or NULL. */
    const char *attribute;
    /* The initialiser flattened in element order: INT, FLOAT or SYMBOL (the address of a
     * variable or function plus value bytes; generic(sym) sets the operand's generic flag). */
    kptx_operand *init;
    unsigned n_init;
    /* Entry parameters only: byte offset and size in the parameter block. */
    uint32_t offset;
    uint32_t size;
} kptx_var;

/* A directive kept verbatim: name with dot (".loc", ".pragma", ".maxntid", ".section") and
 * the rest of it as written: every token, separated by a single space or by a line break
 * where the source had one, without a space before , ; : ) ] or after ( [ and none around
 * + and -; braces and their contents included for .section; the terminating ';' of
 * .pragma, .callprototype, .calltargets, .branchtargets and .alias is not included. */
typedef struct kptx_directive {
    const char *name;
    const char *text;
} kptx_directive;

typedef enum kptx_stmt_kind {
    KPTX_STMT_INSTR,
    KPTX_STMT_LABEL,
    KPTX_STMT_VAR,          /* .reg, .local, .shared, .param, .const declared in a body */
    KPTX_STMT_DIRECTIVE,    /* .loc, .pragma, ... */
    KPTX_STMT_BLOCK_BEGIN,  /* "{": a nested scope (call sequences) */
    KPTX_STMT_BLOCK_END,    /* "}" */
} kptx_stmt_kind;

typedef struct kptx_stmt {
    kptx_stmt_kind kind;
    unsigned line;          /* line in the parsed text, 0 for statements made by a transform */
    union {
        kptx_instr instr;
        const char *label;  /* without the colon */
        kptx_var var;
        kptx_directive dir;
    } u;
} kptx_stmt;

typedef struct kptx_function {
    bool is_entry;              /* .entry (kernel) or .func */
    const char *linkage;        /* ".visible", ".extern", ".weak" or NULL */
    const char *name;
    unsigned n_rets;
    kptx_var *rets;             /* .func return parameters */
    unsigned n_params;
    kptx_var *params;
    uint32_t param_bytes;       /* entries: size of the parameter block */
    unsigned n_perf;
    kptx_directive *perf;       /* .maxntid, .reqntid, .minnctapersm, .maxnreg, .noreturn, ... */
    bool has_body;              /* false for a prototype ending in ';' */
    unsigned n_stmts;
    kptx_stmt *stmts;
    unsigned line;
    /* Set by a transform whose prologue must run before any later one's (the fence's
     * scrub of shared memory, which would zero what the slicer's prologue stores): the
     * label after it, where later transforms put their prologues. NULL for parsed code. */
    const char *code_label;
} kptx_function;

typedef enum kptx_item_kind {
    KPTX_ITEM_DIRECTIVE,        /* .version, .target, .address_size, .file, .section, ... */
    KPTX_ITEM_VAR,              /* module-scope .global, .const, .shared, .tex variables */
    KPTX_ITEM_FUNCTION,
} kptx_item_kind;

typedef struct kptx_item {
    kptx_item_kind kind;
    union {
        kptx_directive dir;
        kptx_var var;
        kptx_function fn;
    } u;
} kptx_item;

typedef struct kptx_module {
    unsigned version_major, version_minor;  /* .version */
    const char *target;                     /* first .target name: "sm_75" */
    unsigned address_size;                  /* 32 or 64 */
    unsigned n_items;
    kptx_item *items;                       /* in source order */
    struct kptx_arena *arena;               /* private */
} kptx_module;

/* Largest PTX text kptx_parse accepts (bytes); larger input gets KPTX_ELIMIT. */
#define KPTX_MAX_TEXT ((size_t)256 << 20)

/* Parses len bytes of PTX text (need not be NUL-terminated). *out is NULL on failure. */
int kptx_parse(const char *text, size_t len, kptx_module **out, kptx_error *err);

/* Frees a module and everything it points to. NULL is allowed. */
void kptx_module_free(kptx_module *m);

/* Bytes of device memory the module's own .global variables take (each at its alignment,
 * .extern ones not counted; unsized arrays count 0): what loading it adds to its tenant's
 * memory. UINT64_MAX when the sum does not fit. */
uint64_t kptx_module_global_bytes(const kptx_module *m);

/* Prints a module as PTX into a malloc'd NUL-terminated buffer (*len excludes the NUL). */
int kptx_print(const kptx_module *m, char **text, size_t *len, kptx_error *err);

/* The function named name (entry or func): its definition when the module has one, else
 * its first prototype; NULL when there is none. */
const kptx_function *kptx_find_function(const kptx_module *m, const char *name);

/* ---- Kernel information ------------------------------------------------------------- */

/* Special registers a kernel reads (in its body or in a function it calls). */
enum {
    KPTX_SREG_TID = 1u << 0,
    KPTX_SREG_NTID = 1u << 1,
    KPTX_SREG_CTAID = 1u << 2,
    KPTX_SREG_NCTAID = 1u << 3,
    KPTX_SREG_LANEID = 1u << 4,
    KPTX_SREG_WARPID = 1u << 5,    /* %warpid, %nwarpid */
    KPTX_SREG_SMID = 1u << 6,      /* %smid, %nsmid */
    KPTX_SREG_GRIDID = 1u << 7,
    KPTX_SREG_CLUSTER = 1u << 8,   /* any cluster register (%clusterid, %cluster_ctaid, ...) */
    KPTX_SREG_CLOCK = 1u << 9,     /* %clock, %clock64, %globaltimer* */
    KPTX_SREG_ENVREG = 1u << 10,   /* %envreg<n> */
    KPTX_SREG_LANEMASK = 1u << 11, /* %lanemask_* */
    KPTX_SREG_SMEM = 1u << 12,     /* %dynamic_smem_size, %total_smem_size, ... */
    KPTX_SREG_OTHER = 1u << 13,    /* %pm*, %reserved_smem_offset_*, anything else */
};

typedef struct kptx_param_info {
    const char *name;
    uint32_t offset;        /* byte offset in the parameter block */
    uint32_t size;          /* bytes */
    uint32_t align;         /* bytes */
} kptx_param_info;

typedef struct kptx_kernel_info {
    const char *name;               /* points into the module */
    unsigned n_params;
    kptx_param_info *params;        /* owned by the info: kptx_kernel_info_clear */
    uint32_t param_bytes;           /* size of the whole parameter block */
    uint32_t sregs;                 /* KPTX_SREG_* bits */
    unsigned reqntid[3];            /* .reqntid, zeros when absent */
    unsigned maxntid[3];            /* .maxntid, zeros when absent */
    bool sliceable;
    char why_not[192];              /* when not sliceable: the reason, naming the feature */
} kptx_kernel_info;

/* Information about entry `name` of m. */
int kptx_kernel_info_get(const kptx_module *m, const char *name, kptx_kernel_info *info,
                         kptx_error *err);

/* Frees what kptx_kernel_info_get allocated in info. */
void kptx_kernel_info_clear(kptx_kernel_info *info);

/* ---- Slicing -------------------------------------------------------------------------- */

#define KPTX_SLICE_SUFFIX "__kslice"
#define KPTX_SLICE_EXTRA_PARAMS 4   /* first linear block id, grid x, grid y, grid z (.u32) */

/* Adds the sliced variant of every sliceable entry of m (see the top of this file).
 * Entries that cannot be sliced are left as they are; kptx_kernel_info says why.
 * *n_sliced (may be NULL) gets how many variants were added. Idempotent. */
int kptx_slice_module(kptx_module *m, unsigned *n_sliced, kptx_error *err);

/* The name of entry's sliced variant into buf: "<entry>__kslice". */
int kptx_slice_name(const char *entry, char *buf, size_t buflen);

/* ---- Fencing ------------------------------------------------------------------------ */

/* Fencing confines a kernel's global memory accesses to its tenant's address window: a
 * power-of-two sized, size-aligned range [base, base + size). Every global (and generic,
 * when isspacep.global holds) address a fenced entry uses becomes
 * (addr & mask) | base, mask = (size - 1) & ~(width - 1) for an access of width bytes
 * (its type's size times its vector count), so an aligned address inside the window is
 * unchanged and any other lands inside it, aligned: a misaligned access, which on the GPU
 * is a sticky fault that ends the shared context, never runs. Shared accesses (.shared,
 * and generic ones when isspacep.shared holds), in entries and device functions alike,
 * use min(offset & ~(width - 1), (limit - width) & ~(width - 1)) instead, limit the end of
 * the block's shared memory: an access past it or misaligned, the same sticky fault, lands
 * in the block's own shared memory (docs/PTX.md). Local accesses stay in the thread's own
 * stack frames (kptx_fence_opts.local_top), and every fenced entry zeroes its whole frame
 * (every device function, and an entry without a local top, its .local variables), every
 * fenced entry's block its shared memory, before its code runs (a GPU clears neither
 * between kernels). A fenced entry takes four more .u64 parameters
 * after its own, at the next multiple of 8: the window's base, its mask, then the addresses
 * of the tenant's cancel word and fault word (both .u32, outside every window; see
 * Control). */
#define KPTX_FENCE_EXTRA_PARAMS 4

/* Control of a fenced kernel. Its loops read the cancel word at least once every
 * KPTX_CANCEL_POLL_PERIOD iterations of a thread and end the thread when it is non-zero
 * (the backend sets it to stop a runaway kernel). Every fenced thread reads it, so it
 * belongs in device memory: in mapped host memory, one read per thread across the bus
 * made a kernel of short loops 115 times slower on the H100. A `trap`, or a call of CUDA's
 * `__assertfail`, in the entry writes KPTX_FAULT_TRAP or KPTX_FAULT_ASSERT to the fault
 * word and ends the thread instead of faulting the context; the backend reads the word
 * when the launch completes. A device function that loops, recurses, traps or asserts gets
 * the two words' addresses as two more parameters on every direct call; a recursion reads
 * the cancel word on every call of a function where a cycle of calls is entered
 * (docs/PTX.md). With a stack size given (kptx_fence_opts.stack_bytes), every function on
 * a cycle of calls checks its stack pointer as it starts and writes KPTX_FAULT_STACK and
 * ends the thread when the recursion is about to overflow the stack, which on the GPU
 * would end the context (fence_stack.c). */
#define KPTX_CANCEL_POLL_PERIOD 1024u
enum {
    KPTX_FAULT_NONE = 0,
    KPTX_FAULT_TRAP = 1,
    KPTX_FAULT_ASSERT = 2,
    KPTX_FAULT_ADDRESS = 3,
    KPTX_FAULT_STACK = 4,
    KPTX_FAULT_MISALIGNED = 5,  /* KPTX_FENCE_TRAP: an address not aligned to its access */
};

/* Where a thread's call stack starts in its local window (it grows down): PTX's
 * stacksave reads addresses below this on the H100 (tests/gpu/ptx/stack_probe.c). */
#define KPTX_STACK_TOP ((uint64_t)1 << 24)

/* What a fault code means, for messages: "trap", "assert triggered", "illegal address",
 * "stack overflow", "misaligned address" (the server answers a launch failed with
 * "misaligned" in its message CUDA_ERROR_MISALIGNED_ADDRESS, as natively). */
static inline const char *kptx_fault_name(uint32_t fault)
{
    return fault == KPTX_FAULT_ASSERT ? "assert triggered"
           : fault == KPTX_FAULT_ADDRESS ? "illegal address (outside the tenant's memory, "
                                           "or its block's shared memory)"
           : fault == KPTX_FAULT_STACK ? "stack overflow (a recursion deeper than the stack)"
           : fault == KPTX_FAULT_MISALIGNED ? "misaligned address (not aligned to its access)"
                                            : "trap";
}

/* Offset of the window base in the parameter block of a fenced entry whose own parameters
 * take param_bytes; the mask, cancel and fault addresses follow, 8 bytes apart. */
static inline uint32_t kptx_fence_param_offset(uint32_t param_bytes)
{
    return (param_bytes + 7u) & ~7u;
}

/* Flags of the fencing pass. */
enum {
    /* The module's variables will not lie in the window (the cuda backend's driver places
     * them): a kernel that uses a .global variable, or takes a variable's address, cannot
     * be fenced. */
    KPTX_FENCE_VARS_OUTSIDE = 1u << 0,
    /* With KPTX_FENCE_VARS_OUTSIDE: the backend relocates every relocatable .global
     * variable into the window at load (kptx_reloc_*, below), so kernels may use those;
     * unrelocatable .global variables and addresses of .const ones are still refused. */
    KPTX_FENCE_VARS_RELOCATED = 1u << 1,
    /* An access outside the window (or a shared one past the block's shared memory) is
     * not redirected but ends its thread with
     * KPTX_FAULT_ADDRESS in the fault word (the launch then fails as with an illegal
     * address on the GPU), and one not aligned to its width with KPTX_FAULT_MISALIGNED
     * (as with a misaligned address): programs see their out-of-bounds and misaligned
     * accesses as natively, at the cost of a compare per access. Without it they are
     * redirected into the window, to the address aligned down to the access's width. */
    KPTX_FENCE_TRAP = 1u << 2,
};

/* Whether entry `name` of m can be fenced (flags: KPTX_FENCE_*): why gets "" when it can,
 * else the reason, naming the instruction, variable or function that prevents it. */
int kptx_fence_verdict(const kptx_module *m, const char *name, unsigned flags, char *why,
                       size_t why_len, kptx_error *err);

/* Fences every entry of m that can be fenced, in place (same names, two more parameters);
 * the others are left as they are (kptx_fence_verdict says why). *n_fenced (may be NULL)
 * gets how many were fenced. Fence a module once, before kptx_slice_module (whose variants
 * then inherit the fence and put their four parameters after the window's). */
int kptx_fence_module(kptx_module *m, unsigned flags, unsigned *n_fenced, kptx_error *err);

/* How to fence: the flags (KPTX_FENCE_*) and the size of each thread's call stack in
 * bytes (the context's CU_LIMIT_STACK_SIZE), for the stack guard of recursive functions;
 * 0: no guard (a backend that bounds recursion itself). */
typedef struct kptx_fence_opts {
    unsigned flags;
    uint64_t stack_bytes;
    uint64_t stack_top;         /* where the stack starts (it grows down); 0: KPTX_STACK_TOP */
    uint64_t local_top;         /* where an entry without locals has its stack pointer (the
                                   H100: 0xfffdc0): local accesses are clamped below it and
                                   above the running function's frame, and a fenced entry
                                   zeroes its frame up to it; 0: left alone (an entry
                                   zeroes its .local variables only) */
} kptx_fence_opts;

/* kptx_fence_module with the stack guard (kptx_fence_opts). */
int kptx_fence_module_opts(kptx_module *m, const kptx_fence_opts *o, unsigned *n_fenced,
                           kptx_error *err);

/* ---- Relocating module variables --------------------------------------------------- */

/* A backend whose driver places module variables itself (outside any tenant window) moves
 * the module's .global variables into one block of the tenant's window instead: it lays
 * them out (kptx_reloc_plan_make), allocates plan.bytes in the window, writes their
 * initial values there (kptx_reloc_image), and rewrites the module so that every use of
 * a variable's name becomes its window address (kptx_reloc_apply), before compiling it.
 * A variable is relocatable when it is .global, defined here (not .extern), not
 * .managed (no .attribute), of a known size of at most KPTX_RELOC_MAX_BYTES, with an
 * initialiser of numbers only, and when no other variable's initialiser names it. */
#define KPTX_RELOC_MAX_BYTES ((uint64_t)64 << 20)

typedef struct kptx_reloc_var {
    const char *name;           /* the module's string: valid while the module lives */
    const kptx_var *var;        /* the declaration (gone after kptx_reloc_apply) */
    uint64_t offset;            /* in the block, aligned as the variable asks */
    uint64_t size;
} kptx_reloc_var;

typedef struct kptx_reloc_plan {
    unsigned n;
    kptx_reloc_var *vars;       /* malloc'ed: kptx_reloc_plan_clear */
    uint64_t bytes;             /* the block's size (0 when n == 0) */
} kptx_reloc_plan;

/* Whether module variable v of m can be relocated; why (may be NULL) gets the reason. */
bool kptx_reloc_possible(const kptx_module *m, const kptx_var *v, char *why, size_t len);
/* Lays out every relocatable .global variable of m (n may be 0). KPTX_ELIMIT when the
 * block would exceed KPTX_RELOC_MAX_BYTES. */
int kptx_reloc_plan_make(const kptx_module *m, kptx_reloc_plan *out, kptx_error *err);
void kptx_reloc_plan_clear(kptx_reloc_plan *p);
/* The block's initial bytes (zero where a variable has no initialiser) into buf of
 * p->bytes. */
int kptx_reloc_image(const kptx_reloc_plan *p, void *buf, uint64_t len, kptx_error *err);
/* Rewrites m for the block at base: every operand naming a planned variable (sym,
 * sym+off, [sym+off]) becomes a register that an added mov.u64 sets to its window
 * address, and the variables' declarations are removed. p must come from m; on failure
 * m is half rewritten and must be freed. */
int kptx_reloc_apply(kptx_module *m, const kptx_reloc_plan *p, uint64_t base,
                     kptx_error *err);

/* ---- Device printf --------------------------------------------------------------------- */

/* A kernel's printf is a call of vprintf(format, args): format is the generic address of
 * the format string, args that of a buffer holding the arguments packed at their natural
 * alignment (kptx_printf_next). kptx_printf_module rewrites every such call whose format
 * is statically known (its register comes, in the same function, from mov/cvta.global/
 * cvta.const of a module .global or .const byte array with an initialiser, maybe plus
 * constants added; each register on the way written once in the function) into inline
 * code that appends one record to a ring, a .global variable the pass adds (KPTX_PRINTF_RING,
 * KPTX_PRINTF_RING_BYTES). The ring starts with a header: u32 bytes reserved so far in the
 * data area, u32 records dropped, 8 bytes unused; the data area follows. A record is
 * 8-aligned: u32 total bytes (written last, after a membar.gl: 0 means not yet complete),
 * u32 argument bytes, u64 the format's generic address as the kernel computed it, then the
 * argument bytes copied from args; total = 16 + argument bytes rounded up to 8. Space is
 * reserved with atom.global.add.u32 on the first header word; a record that does not fit is
 * dropped and counted in the second, and the call returns -1 instead of the argument
 * count. Calls whose format cannot be resolved, or that use a conversion the pass does not
 * know (%n, %ls, ...), are left unchanged. The pass also adds KPTX_PRINTF_STRINGS, the
 * NUL-separated names of the module's initialised byte arrays (format strings and string
 * literals, those of the rewritten formats first, at most KPTX_PRINTF_STRINGS_MAX bytes,
 * ending with an empty name), so that a reader can look them up (cuModuleGetGlobal) and
 * read the texts that records point to. 64-bit modules only. */
#define KPTX_PRINTF_RING "__kernelet_printf"
#define KPTX_PRINTF_STRINGS "__kernelet_printf_strings"
#define KPTX_PRINTF_RING_BYTES ((uint32_t)1 << 20)  /* like CUDA's default FIFO; relocatable */
#define KPTX_PRINTF_RING_HEADER 16u
#define KPTX_PRINTF_RECORD_HEADER 16u
#define KPTX_PRINTF_MAX_ARGS 32u                     /* CUDA's limit too */
#define KPTX_PRINTF_STRINGS_MAX (64u << 10)

/* One conversion of a format string ("%-08.3lf"). */
typedef struct kptx_printf_spec {
    uint32_t start, len;        /* its text in the format */
    char conv;                  /* d i u x X o c s f F e E g G a A p */
    char length;                /* 0, 'h', 'H' (hh), 'l', 'q' (ll), 'z', 'j', 't', 'L' */
    uint8_t size;               /* bytes of its value in the buffer: 4 or 8 */
    bool star_width, star_prec; /* '*' width or precision: an int argument each, first */
    bool has_prec;
    uint32_t width_off, prec_off, value_off;    /* offsets in the argument buffer */
} kptx_printf_spec;

/* The next conversion of fmt (len bytes, or up to a NUL) from *pos: 1 and spec filled (its
 * values placed at the end of the *bytes already laid out, which grows), 0 at the end,
 * KPTX_EUNSUPPORTED for a conversion it does not know. "%%" is text. */
int kptx_printf_next(const char *fmt, size_t len, size_t *pos, uint32_t *bytes,
                     kptx_printf_spec *spec);
/* The argument buffer's size for fmt and how many arguments it holds (n_args may be NULL);
 * KPTX_ELIMIT beyond KPTX_PRINTF_MAX_ARGS. */
int kptx_printf_layout_of(const char *fmt, size_t len, uint32_t *bytes, unsigned *n_args);
/* Flags of the printf pass. */
enum {
    /* Rewrite the calls in entries only, not in .func bodies: the fencing pass fences
     * entries, not device functions, so an entry calling a function that writes the ring
     * could no longer be fenced; such calls stay vprintf calls. */
    KPTX_PRINTF_ENTRIES_ONLY = 1u << 0,
};

/* Rewrites m's resolvable vprintf calls (entries and functions, flags: KPTX_PRINTF_*) and
 * adds the ring and the strings table when there was one; *n_rewritten (may be NULL) gets
 * how many. Refuses
 * (KPTX_EUNSUPPORTED) a module that defines either name already, so a second application
 * fails and changes nothing. Apply it before kptx_fence_module. On any other failure (out
 * of memory) m may be half rewritten and must be freed. */
int kptx_printf_module(kptx_module *m, unsigned flags, unsigned *n_rewritten,
                       kptx_error *err);

#ifdef __cplusplus
}
#endif

#endif
