/* Internal declarations shared by the files of the PTX library. */
#ifndef KPTX_INTERNAL_H
#define KPTX_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernelet/ptx.h"

/* ---- Arena: every structure of a module lives here (arena.c) ---- */

typedef struct kptx_arena kptx_arena;

kptx_arena *kptx_arena_new(void);
void kptx_arena_free(kptx_arena *a);
/* n bytes aligned to 8, zeroed; NULL when out of memory. */
void *kptx_arena_alloc(kptx_arena *a, size_t n);
/* The same, not cleared (for memory the caller fills completely). */
void *kptx_arena_alloc_raw(kptx_arena *a, size_t n);
/* A NUL-terminated copy of len bytes. */
char *kptx_arena_strndup(kptx_arena *a, const char *s, size_t len);
char *kptx_arena_strdup(kptx_arena *a, const char *s);
/* A copy of n bytes (NULL for n == 0). */
void *kptx_arena_memdup(kptx_arena *a, const void *p, size_t n);
/* One slot for data derived from the module (its analysis), freed with the arena or when
 * replaced; a transformation that changes the module clears it. */
void *kptx_arena_cache(const kptx_arena *a);
void kptx_arena_set_cache(kptx_arena *a, void *cache, void (*free_fn)(void *));

/* ---- Errors (errors.c) ---- */

/* Fills err (may be NULL) and returns code. */
int kptx_fail(kptx_error *err, int code, unsigned line, unsigned column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- Growable byte buffer (print.c, slicer names) ---- */

typedef struct kptx_buf {
    char *p;
    size_t len, cap;
    bool oom;
} kptx_buf;

/* Makes room for one more element in the malloc'd array *v that holds n elements of size
 * bytes in *cap (doubling, from first): false when out of memory (*v is kept). */
bool kptx_grow_array(void *v, size_t *cap, size_t n, size_t size, size_t first);

/* Makes room for extra more bytes and a NUL; false (and oom set) when out of memory. */
bool kptx_buf_grow(kptx_buf *b, size_t extra);
void kptx_buf_printf(kptx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends n bytes; the text stays NUL-terminated. */
static inline void kptx_buf_put(kptx_buf *b, const char *s, size_t n)
{
    if (b->cap - b->len <= n && !kptx_buf_grow(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void kptx_buf_puts(kptx_buf *b, const char *s)
{
    kptx_buf_put(b, s, strlen(s));
}

static inline void kptx_buf_putc(kptx_buf *b, char c)
{
    if (b->cap - b->len <= 1 && !kptx_buf_grow(b, 1))
        return;
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

/* ---- Lexer (lex.c) ---- */

typedef enum kptx_tok_kind {
    TK_EOF,
    TK_ERROR,   /* the lexer failed; the error is in the lexer's kptx_error */
    TK_WORD,    /* identifier, maybe %-prefixed, with attached .suffixes: "ld.param.u64" */
    TK_DOTWORD, /* directive or modifier word: ".reg", ".v4.f32", ".shared::cta" */
    TK_INT,
    TK_FLOAT,
    TK_STRING,  /* "..." including the quotes */
    TK_PUNCT,   /* one character: { } [ ] ( ) , ; : @ ! | + - = < > */
} kptx_tok_kind;

typedef struct kptx_token {
    kptx_tok_kind kind;
    char punct;         /* TK_PUNCT: the character */
    bool nl_before;     /* a line break separates it from the previous token */
    uint32_t len;
    const char *p;      /* points into the source text */
    unsigned line, col;
    unsigned fwidth;    /* TK_FLOAT: 32 or 64 */
    union {
        int64_t ival;   /* TK_INT */
        uint64_t fbits; /* TK_FLOAT: IEEE bits */
    };
} kptx_token;

/* Longest token the lexer accepts (identifiers, strings): longer gets KPTX_ELIMIT. */
#define KPTX_MAX_TOKEN 65536u

typedef struct kptx_lexer {
    const char *cur, *end;
    const char *line_start;
    unsigned line;
    kptx_token la[4];   /* lookahead ring */
    unsigned n_la, la_head;
    kptx_error *err;
    int code;           /* error code once TK_ERROR was produced */
} kptx_lexer;

void kptx_lex_init(kptx_lexer *lx, const char *text, size_t len, kptx_error *err);
/* Scans tokens into the lookahead ring until it holds k + 1 of them. */
void kptx_lex_fill(kptx_lexer *lx, unsigned k);

/* Token k ahead (0 = next) without consuming; k < 3. */
static inline const kptx_token *kptx_lex_peek(kptx_lexer *lx, unsigned k)
{
    if (lx->n_la <= k)
        kptx_lex_fill(lx, k);
    return &lx->la[(lx->la_head + k) & 3];
}

/* Consumes and returns the next token. */
static inline kptx_token kptx_lex_next(kptx_lexer *lx)
{
    kptx_token t = *kptx_lex_peek(lx, 0);
    lx->la_head = (lx->la_head + 1) & 3;
    lx->n_la--;
    return t;
}

static inline bool kptx_tok_is(const kptx_token *t, const char *s)
{
    size_t i = 0;
    for (; i < t->len; i++)
        if (s[i] != t->p[i])
            return false;
    return s[i] == '\0';
}

static inline bool kptx_tok_punct(const kptx_token *t, char c)
{
    return t->kind == TK_PUNCT && t->punct == c;
}

/* ---- Tables (tables.c) ---- */

/* KPTX_SREG_* bit of a special register name with its component ("%ctaid.x"),
 * 0 when the name is not a known special register. */
uint32_t kptx_sreg_class(const char *name);
/* True when the base name (before any '.') is a known special register. */
bool kptx_is_sreg(const char *name, size_t len);
/* Size in bytes of a scalar type ".u32", 0 when unknown (.pred counts as 1). */
unsigned kptx_type_size(const char *type);
/* The library's own copy of the type name of len bytes at p, NULL when not a type. */
const char *kptx_type_canon(const char *p, size_t len);
/* True for a PTX instruction name this library knows. */
bool kptx_known_opcode(const char *opcode);
/* Directives that end with ';' when printed (.pragma, .callprototype, ...). */
bool kptx_directive_has_semicolon(const char *name);
/* State space of ".global" etc., KPTX_SPACE_NONE when not a state space word. */
kptx_space kptx_space_of(const char *word, size_t len);
/* State space an instruction's modifier names (".shared::cta" is .shared), or NONE. */
kptx_space kptx_mod_space(const char *mod);
const char *kptx_space_name(kptx_space s);

/* ---- Interned words (intern.c) ---- */

typedef struct kptx_intern_slot {
    const char *s;
    uint32_t hash, len;
} kptx_intern_slot;

typedef struct kptx_intern_table {
    kptx_intern_slot *slots;
    unsigned cap, n;
} kptx_intern_table;

/* The one arena copy of the len bytes at p (NULL when out of memory). */
const char *kptx_intern(kptx_intern_table *t, kptx_arena *a, const char *p, size_t len);
void kptx_intern_free(kptx_intern_table *t);

/* ---- Parser (parse*.c) ---- */

typedef struct kptx_parser {
    kptx_lexer lx;
    kptx_module *m;
    kptx_arena *a;
    kptx_error *err;
    int code;                   /* first error, 0 while none */
    /* scratch stacks reused across functions */
    kptx_operand *ops;
    size_t n_ops, cap_ops;
    kptx_stmt *stmts;
    size_t n_stmts, cap_stmts;
    const char *mods[64];
    kptx_intern_table words;    /* opcodes, modifiers and operand names */
} kptx_parser;

/* Records an error at token t (first error wins) and returns its code. */
int kptx_parse_fail(kptx_parser *ps, const kptx_token *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Consumes the punctuation c or fails. */
int kptx_expect_punct(kptx_parser *ps, char c, const char *what);
/* A directive's arguments kept as text, up to its end (see kptx_directive). */
int kptx_parse_directive_text(kptx_parser *ps, const char *name, const char **text);
/* One parameter of a parameter list: ".param .u64 name" (no ';'). */
int kptx_parse_param(kptx_parser *ps, kptx_var *v);
/* A declaration statement up to and including ';', starting at its linkage or state-space
 * word; several names give several variables (arena array). */
int kptx_parse_decl(kptx_parser *ps, kptx_var **vars, unsigned *n);
/* "+ N", "- N", "+ -N" after an operand: added to o->value, o->has_offset set. */
int kptx_parse_offsets(kptx_parser *ps, kptx_operand *o);
/* Pushes an operand on the parser's scratch stack. */
int kptx_push_operand(kptx_parser *ps, const kptx_operand *o);
/* Moves the operands pushed since base into an arena array (NULL when none). */
int kptx_pop_operands(kptx_parser *ps, size_t base, kptx_operand **out, unsigned *n);
/* A function body after '{' up to and including the matching '}'. */
int kptx_parse_body(kptx_parser *ps, kptx_function *fn);
/* Computes offsets and sizes of an entry's parameters. */
int kptx_layout_params(kptx_parser *ps, kptx_function *fn);
/* Size and alignment in bytes of a declared variable (0 size when unknown/unsized). */
void kptx_var_size_align(const kptx_var *v, uint64_t *size, unsigned *align);

/* ---- Register declarations of a function (regs.c) ---- */

typedef struct kptx_reg_set {
    const kptx_var **v;
    size_t n;
    bool any_plain;             /* some register is named without '%' */
} kptx_reg_set;

int kptx_reg_set_build(const kptx_function *fn, kptx_reg_set *rs);
void kptx_reg_set_free(kptx_reg_set *rs);
/* Whether name is a declared register (itself, or one of a range %r<N>). */
bool kptx_reg_set_has(const kptx_reg_set *rs, const char *name);
/* The declaration of register name (its range's for %r3 of %r<10>), or NULL. */
const kptx_var *kptx_reg_set_find(const kptx_reg_set *rs, const char *name);

/* ---- Printing helpers (print.c) ---- */

void kptx_print_operand(kptx_buf *b, const kptx_operand *o);
void kptx_print_var(kptx_buf *b, const kptx_var *v);

/* ---- Analysis shared by info.c and slice.c (analyse.c, callgraph.c) ---- */

/* Bits of kptx_fn_facts.grid: which of %ctaid.{x,y,z}, %nctaid.{x,y,z} are read. */
#define KPTX_GRID_CTAID(c) (1u << (c))
#define KPTX_GRID_NCTAID(c) (1u << (3 + (c)))
#define KPTX_GRID_VALUES 6

typedef struct kptx_fn_facts {
    const kptx_function *fn;    /* the definition (with body), else the first prototype */
    uint32_t sregs;             /* KPTX_SREG_* read by its own body */
    unsigned grid;              /* KPTX_GRID_* read by its own body */
    unsigned grid_reach;        /* KPTX_GRID_* read by it or any function it calls directly */
    bool address_taken;         /* its name is used other than as a call target */
    bool indirect_calls;        /* it makes calls through a register */
    bool recursive;             /* it lies on a cycle of direct calls (callgraph.c) */
    bool cycle_head;            /* a call that closes such a cycle enters it: every cycle
                                   passes through one (callgraph.c) */
    char why_not[160];          /* why its body alone prevents slicing, or "" */
} kptx_fn_facts;

typedef struct kptx_analysis {
    unsigned n_fns;
    kptx_fn_facts *facts;       /* one per distinct function name, in module order */
    unsigned *edge_start;       /* n_fns + 1: direct calls of facts[i] are */
    unsigned *callee;           /*   callee[edge_start[i] .. edge_start[i + 1]) */
    unsigned *order;            /* n_fns: each function after its callees, but within a
                                   cycle, whose functions lie side by side */
    unsigned *scc_end;          /* n_fns: order[k]'s cycle (component) ends before
                                   order[scc_end[k]] */
    unsigned *slots;            /* name hash: index + 1, 0 = empty */
    unsigned n_slots;
    const char **init_names;    /* names module initialisers take the address of, sorted */
    size_t n_init_names;
} kptx_analysis;

/* The module's analysis, computed once and kept with the module (NULL and err set when
 * out of memory). */
const kptx_analysis *kptx_module_analysis(const kptx_module *m, kptx_error *err);
/* Drops the kept analysis (after the module changed). */
void kptx_module_forget_analysis(kptx_module *m);
/* The direct-call graph's cycles: facts' recursive and cycle_head, order and scc_end, in
 * time and memory linear in functions and calls (callgraph.c); KPTX_ENOMEM. */
int kptx_find_cycles(kptx_analysis *an);
/* The stack pointer below which a function on a cycle of calls ends its thread with
 * KPTX_FAULT_STACK, for threads whose stack is stack_bytes from top down (fence_stack.c);
 * 0 when m has no recursion, cannot use stacksave (PTX ISA before 7.3, or a target before
 * sm_52) or stack_bytes is 0: no guard. KPTX_ENOMEM. */
int kptx_stack_guard(const kptx_module *m, const kptx_analysis *an, uint64_t stack_bytes,
                     uint64_t top, uint64_t *guard);
/* Index of the function named name, or -1. */
int kptx_analysis_find(const kptx_analysis *an, const char *name);
/* Marks in reach[] (n_fns entries, zeroed by the caller) every function reachable from
 * root, including through indirect calls (which may reach any address-taken function). */
void kptx_reachable(const kptx_analysis *an, unsigned root, bool *reach);
/* Whether entry root can be sliced: why is "" when it can, else the reason. Also the
 * special registers read by it and everything it calls. */
int kptx_entry_verdict(const kptx_module *m, const kptx_analysis *an, unsigned root,
                       uint32_t *sregs, char *why, size_t why_len);
/* The number of the module's ".target sm_NN" (75 for sm_75), 0 for another target. */
unsigned kptx_target_sm(const kptx_module *m);
/* Bytes of kernel parameters the module's target and PTX version allow. */
uint32_t kptx_param_limit(const kptx_module *m);
/* Which KPTX_GRID_* value a special register operand name is, or -1. */
int kptx_grid_value(const char *sreg);


/* ---- Rewriting bodies (rewrite.c): shared by the slicer and the fencing pass ---- */

typedef struct kptx_rw {
    kptx_arena *a;
    bool oom;                   /* some allocation failed: the result must not be used */
} kptx_rw;

/* A body being built: an arena array sized beforehand. */
typedef struct kptx_stmt_vec {
    kptx_stmt *v;
    size_t n, cap;
} kptx_stmt_vec;

/* n zeroed arena bytes (NULL and oom set on failure). */
void *kptx_rw_alloc(kptx_rw *rw, size_t n);
/* The arena string a followed by b. */
const char *kptx_rw_name(kptx_rw *rw, const char *a, const char *b);
/* Room for cap statements in sv (false and oom set on failure). */
bool kptx_rw_begin(kptx_rw *rw, kptx_stmt_vec *sv, size_t cap);
/* The next statement of sv: a copy of from, or cleared when from is NULL; NULL (and oom
 * set) when sv is full, so a wrong bound fails instead of overrunning. */
kptx_stmt *kptx_rw_push(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_stmt *from);
/* Appends the label name (an arena string) to sv. */
void kptx_rw_label(kptx_rw *rw, kptx_stmt_vec *sv, const char *name);
/* The register operand name. */
kptx_operand kptx_reg_operand(const char *name);
/* The integer operand v. */
kptx_operand kptx_int_operand(int64_t v);
/* The address operand [symbol+offset]. */
kptx_operand kptx_rw_addr(kptx_rw *rw, const char *symbol, int64_t offset);
/* Appends the instruction opcode with its modifiers written together (".lo.u32", at most
 * four) and n_ops operands (copied); returns it (NULL on failure). */
kptx_stmt *kptx_rw_emit(kptx_rw *rw, kptx_stmt_vec *sv, const char *opcode, const char *mods,
                        unsigned n_ops, const kptx_operand *ops);
/* Appends the declaration of register name of type (range > 0: name<range>). */
void kptx_rw_declare_reg(kptx_rw *rw, kptx_stmt_vec *sv, const char *type, const char *name,
                         unsigned range);
/* kptx_rw_emit of the first n (at most three) of a, b, c. */
kptx_stmt *kptx_rw_emit3(kptx_rw *rw, kptx_stmt_vec *sv, const char *opcode, const char *mods,
                         kptx_operand a, kptx_operand b, kptx_operand c, unsigned n);
/* ---- Relocating module variables (reloc_plan.c) ---- */

/* The names whose address some module variable's initialiser holds, sorted (malloc'ed
 * array of the module's strings; for kptx_analysis.init_names). */
int kptx_collect_init_names(const kptx_module *m, const char ***out, size_t *n);

/* ---- Fencing (fence_check.c, fence.c) ---- */

/* How the fencing pass treats one instruction. */
typedef enum kptx_fence_kind {
    KPTX_FENCE_NONE,        /* touches no global memory (no address, or .shared/.local/
                               .const/.param only) */
    KPTX_FENCE_GLOBAL,      /* ld/ldu/st/atom/red .global: its address is masked */
    KPTX_FENCE_GENERIC,     /* ld/st/atom/red without a state space: masked when
                               isspacep.global says the address is global, clamped into
                               the block's shared memory when isspacep.shared says so */
    KPTX_FENCE_SHARED,      /* ld/st/atom/red, ldmatrix, stmatrix, mbarrier .shared (::cta):
                               its address is clamped into the block's shared memory
                               (fence_shared.c) */
    KPTX_FENCE_COPY,        /* cp.async.{ca,cg}.shared.global: its destination (operand 0)
                               clamped, its source (operand 1) masked, a register src-size
                               bounded by cp-size */
    KPTX_FENCE_NEVER,       /* may touch global memory in a way the pass does not cover */
} kptx_fence_kind;

/* The kind of in, an instruction of fn in m. */
kptx_fence_kind kptx_fence_kind_of(const kptx_module *m, const kptx_function *fn,
                                   const kptx_instr *in);
/* The bytes an ld/ldu/st/atom/red moves (its type's size times its vector count), or an
 * ldmatrix/stmatrix row (16), an mbarrier (8), a cp.async (cp-size) touches at its address:
 * the alignment the GPU requires of it (a misaligned one is a sticky fault that ends the
 * context). 0 when it is not a power of two up to KPTX_ACCESS_MAX or has no type. */
#define KPTX_ACCESS_MAX 128u
unsigned kptx_access_width(const kptx_instr *in);
/* Whether in is cp.async.ca or cp.async.cg (a copy from global to shared memory). */
bool kptx_is_async_copy(const kptx_instr *in);
/* State space of the variable sym as fn sees it (its body's declarations, then the
 * module's), KPTX_SPACE_NONE when sym is no variable. */
kptx_space kptx_symbol_space(const kptx_module *m, const kptx_function *fn, const char *sym);
/* Its declaration, or NULL. */
const kptx_var *kptx_symbol_var(const kptx_module *m, const kptx_function *fn, const char *sym);
/* Whether in calls CUDA's device assert (__assertfail). */
bool kptx_calls_assert(const kptx_instr *in);
/* The function a direct call names, or NULL (not a call, or through a register). */
const char *kptx_call_target(const kptx_instr *in);
/* Whether fn's own body loops, traps or asserts (what fencing must control). */
bool kptx_needs_control(const kptx_function *fn);
/* Whether device function i of an must be controlled for itself: kptx_needs_control, or
 * a cycle of calls enters it (its facts' cycle_head). */
bool kptx_controls_itself(const kptx_analysis *an, unsigned i);
/* The device functions a fenced entry (fence[], per analysed function) reaches that need
 * control, themselves (kptx_controls_itself, or faults[i] when faults is not NULL: with
 * KPTX_FENCE_TRAP, a function whose shared accesses are clamped writes the fault word) or
 * through their calls, into ctl[]; an entry that shares such a function with an unfenced
 * entry loses its fence. *n_fenced: the entries still fenced. */
int kptx_plan_controlled(const kptx_analysis *an, const bool *faults, bool *fence, bool *ctl,
                         unsigned *n_fenced);
/* Why entry root (an index of an) cannot be fenced, into why ("" when it can). */
void kptx_fence_judge(const kptx_module *m, const kptx_analysis *an, unsigned root,
                      unsigned flags, char *why, size_t len);

/* The fence's masks per access width (fence_align.c): slot k holds the register of the
 * mask for accesses of 2^k bytes (slot 0: the window mask itself, for single bytes). */
#define KPTX_ALIGN_SLOTS 8u     /* widths 1 to KPTX_ACCESS_MAX */
typedef struct kptx_align_masks {
    const char *reg[KPTX_ALIGN_SLOTS];
    unsigned used;              /* bit k: the function has a fenced access of 2^k bytes, k > 0 */
} kptx_align_masks;
/* The slot of an access of width bytes (a power of two): its log2. */
unsigned kptx_width_slot(unsigned width);
/* Names the registers (the pass's prefix; the window mask's register); no use yet. */
void kptx_align_setup(kptx_rw *rw, kptx_align_masks *am, const char *prefix,
                      const char *window_mask);
/* The widths of fn's fenced accesses, into am->used. */
void kptx_align_scan(kptx_align_masks *am, const kptx_module *m, const kptx_function *fn);
/* The register of the mask for an access of width bytes. */
const char *kptx_align_mask(const kptx_align_masks *am, unsigned width);
/* Declarations of the used masks' registers; their values (the window mask's register
 * loaded first), for the prologue. */
void kptx_align_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_align_masks *am);
void kptx_align_prologue(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_align_masks *am);

/* The fence's clamp of shared addresses (fence_shared.c). An access of w bytes at shared
 * offset a uses min(a & -w, hi_w), hi_w = max(limit - w, 0) & -w, limit the end of the block's
 * shared memory; hi_w is computed once per width as a function starts, into a .b32
 * register (slot k: 2^k bytes), and for generic accesses its generic address into a .b64
 * one (the clamp then works on generic addresses that isspacep.shared finds shared). */
/* A group of .shared accesses clamped once (fence_shared.c): they use one base register
 * r, at offsets lo + rel, and all run once the first does; the first computes
 * r' = min((r + lo) & -align, bound), the bound's register bounds[slot], into its own
 * register, and each uses [r' + rel]. */
#define KPTX_SMEM_GROUP_SPAN 1024   /* a group's bytes from lo at most: the limit's floor */
#define KPTX_SMEM_BOUNDS 8u         /* distinct (span, align) bounds per function */
typedef struct kptx_smem_group {
    int64_t lo;                 /* its lowest offset */
    unsigned align;             /* its widest access */
    unsigned slot;              /* its bound */
    unsigned first;             /* the statement of its first access */
} kptx_smem_group;

typedef struct kptx_smem_clamps {
    const char *var;            /* the module's .extern .shared array: where the dynamic
                                   shared memory, the last of the block's, starts */
    const char *hi[KPTX_ALIGN_SLOTS];   /* .b32 */
    const char *ghi[KPTX_ALIGN_SLOTS];  /* .b64 */
    const char *scratch[2];     /* two .b32 registers: a shared offset and its clamp */
    unsigned used;              /* bit k: the function clamps accesses of 2^k bytes */
    unsigned generic;           /* bit k: generic ones among them */
    bool var_used;              /* some function read var: the module must declare it */
    const char *group_reg;      /* .b32 range: group k's clamped base */
    const char *bound_reg;      /* .b32 range: bound k, max(limit - span, 0) & -align */
    int64_t bound_span[KPTX_SMEM_BOUNDS];
    unsigned bound_align[KPTX_SMEM_BOUNDS];
    unsigned n_bounds;
    kptx_smem_group *groups;    /* the function's groups */
    unsigned n_groups;
    int *group_at;              /* per statement: the group of its access, or -1 */
} kptx_smem_clamps;
/* Names the registers and the variable (the pass's prefix). */
void kptx_smem_setup(kptx_rw *rw, kptx_smem_clamps *sc, const char *prefix);
/* The widths of fn's clamped accesses, into sc->used and sc->generic (generic accesses
 * count only when generic is true: an entry's are fenced, a device function's refused). */
void kptx_smem_scan(kptx_smem_clamps *sc, const kptx_module *m, const kptx_function *fn,
                    bool generic);
/* Whether fn has a .shared access the fence clamps. */
bool kptx_smem_clamps_any(const kptx_module *m, const kptx_function *fn);
/* Whether addr, the address of a .shared access of width bytes, is a sized .shared variable
 * plus an offset that keeps the access inside it, aligned: it needs no clamp. */
bool kptx_smem_in_bounds(const kptx_module *m, const kptx_function *fn,
                         const kptx_operand *addr, unsigned width);
/* Declarations of the used registers; their values, for the prologue (sets var_used). */
void kptx_smem_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc);
void kptx_smem_prologue(kptx_rw *rw, kptx_stmt_vec *sv, kptx_smem_clamps *sc);
/* fn's groups of shared accesses (none when memory runs short: each is then clamped
 * alone); kptx_smem_forget frees them. */
void kptx_smem_group_scan(kptx_smem_clamps *sc, const kptx_module *m, const kptx_function *fn);
void kptx_smem_forget(kptx_smem_clamps *sc);
/* The group of the access at statement i, or -1. */
int kptx_smem_group_of(const kptx_smem_clamps *sc, unsigned i);
/* Group g's clamped base into its register (src: r as a .b32 offset), at its first access;
 * the address [r' + rel] that an access at offset off of group g uses. */
void kptx_smem_group_clamp(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc,
                           unsigned g, kptx_operand src);
kptx_operand kptx_smem_group_address(kptx_rw *rw, const kptx_smem_clamps *sc, unsigned g,
                                     int64_t off);
/* dst = min((src & -width) + offset, hi_width), offset a multiple of width (0: none):
 * .b32 shared offsets, or (generic) .b64 generic addresses. */
void kptx_smem_clamp(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_smem_clamps *sc,
                     kptx_operand dst, kptx_operand src, unsigned width, int64_t offset,
                     bool generic);
/* The declaration of var, when some function read it (KPTX_ENOMEM). */
int kptx_smem_declare_var(kptx_rw *rw, kptx_module *m, const kptx_smem_clamps *sc);

/* The fence's clamp of local addresses (fence_local.c): a .local access of w bytes (and a
 * generic one an entry finds local) uses min(max(a & -w, lo_w), top - w), lo_w the
 * function's stack pointer as it starts rounded up to w, top the thread's local top. */
typedef struct kptx_local_clamps {
    uint64_t top;               /* kptx_fence_opts.local_top; 0: no clamp (or no stacksave) */
    uint64_t stack_bytes;       /* a function with alloca takes its bound this much lower */
    const char *sp, *addr;      /* .b64: the stack pointer; an access's address */
    const char *lo[KPTX_ALIGN_SLOTS];   /* .b64 lower bounds per width */
    const char *glo[KPTX_ALIGN_SLOTS];  /* .b64 generic lower bounds */
    const char *ghi[KPTX_ALIGN_SLOTS];  /* .b64 generic upper bounds */
    unsigned used;              /* bit k: the function has .local accesses of 2^k bytes */
    unsigned generic;           /* bit k: generic ones (an entry's) */
    bool alloca;                /* the function moves its stack pointer itself */
} kptx_local_clamps;
/* Names the registers; top and stack_bytes as given (top 0 where m cannot stacksave). */
void kptx_local_setup(kptx_rw *rw, kptx_local_clamps *lc, const char *prefix,
                      const kptx_module *m, uint64_t top, uint64_t stack_bytes);
/* The width of in's access when it is a .local ld or st, else 0. */
unsigned kptx_local_width(const kptx_instr *in);
/* The widths of fn's local accesses (generic ones when generic), into lc. */
void kptx_local_scan(kptx_local_clamps *lc, const kptx_module *m, const kptx_function *fn,
                     bool generic);
/* Whether fn has a .local access the clamp would change (top: the local top). */
bool kptx_local_any(const kptx_module *m, const kptx_function *fn, uint64_t top);
/* Declarations of the registers; the stack pointer and bounds, for the prologue. */
void kptx_local_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc);
void kptx_local_prologue(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc);
/* dst = the clamp of the 64-bit address src (generic: a generic address). */
void kptx_local_clamp(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc,
                      kptx_operand dst, kptx_operand src, unsigned width, bool generic);
/* The address operand that replaces addr, a .local access's (is32: its base register is
 * 32 bits wide), computed and clamped first. */
kptx_operand kptx_local_fence(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_clamps *lc,
                              const kptx_operand *addr, unsigned width, bool is32);

/* The fence's scrub of what earlier kernels left (fence_scrub.c; a GPU clears nothing
 * between kernels of a context): every fenced entry zeroes its whole frame as it starts
 * (given the local top), every fenced device function its top-level .local variables,
 * every fenced entry's block its shared memory. */
typedef struct kptx_local_scrub {
    const char *addr, *end;     /* .b64: a loop's store address and its end */
    const char *zero, *zero16;  /* .b32 and .b16 registers holding 0 */
    const char *pred;           /* a loop's predicate */
    const char *label;          /* the loops' label prefix */
    unsigned n_vars;            /* the function's top-level .local variables */
    unsigned n_loops;           /* loops emitted in the function: their labels' numbers */
    const char *sreg, *slabel;  /* the shared scrub's .b32 registers and labels */
    bool shared;                /* the function is an entry: its blocks scrub shared memory */
    uint64_t frame_top;         /* an entry's local top: it zeroes [stacksave, this) in
                                   place of its variables; 0: its variables only */
    bool frame_read;            /* with frame_top: the entry may read local memory (an
                                   entry that cannot is left without a scrub of it) */
} kptx_local_scrub;
/* Names the registers and labels (the pass's prefix); no use yet. */
void kptx_scrub_setup(kptx_rw *rw, kptx_local_scrub *ls, const char *prefix);
/* What fn declares to scrub, into ls; local_top: the local clamps' top (0 where the
 * backend gives none or the module cannot stacksave), the end of an entry's frame. */
void kptx_scrub_scan(kptx_local_scrub *ls, const kptx_function *fn, uint64_t local_top);
/* Whether fn declares a .local variable the scrub zeroes. */
bool kptx_scrub_any(const kptx_function *fn);
/* The statements the scrub may add to fn (kptx_rw_body's bound). */
size_t kptx_scrub_bound(const kptx_function *fn);
/* Declarations of the scrub's registers; the stores that zero fn's frame (an entry with a
 * local top) or its variables, for the prologue (nothing when a device function declares
 * none); an entry's shared scrub after them, given the .extern .shared array where the
 * dynamic shared memory starts (fence_shared.c). */
void kptx_scrub_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls);
void kptx_scrub_prologue(kptx_rw *rw, kptx_stmt_vec *sv, kptx_local_scrub *ls,
                         const kptx_function *fn);
void kptx_scrub_shared(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls,
                       const char *dyn_var);
/* The label that ends the shared scrub: the entry's kptx_function.code_label, so that the
 * slicer's prologue, which stores to shared memory, comes after it. */
const char *kptx_scrub_done_label(kptx_rw *rw, const kptx_local_scrub *ls);

/* Inserts n module variables before the module's first function (PTX declares before
 * use): KPTX_ENOMEM. */
int kptx_rw_add_vars(kptx_rw *rw, kptx_module *m, const kptx_var *vars, unsigned n);

/* What a transformation adds to a body it rewrites (kptx_rw_body). */
typedef struct kptx_body_hooks {
    void (*declare)(void *user, kptx_stmt_vec *sv);     /* declarations, first */
    void (*prologue)(void *user, kptx_stmt_vec *sv);    /* where the code starts */
    void (*instr)(void *user, kptx_stmt_vec *sv, const kptx_stmt *s);  /* each instruction */
    void *user;
    /* Each label, when set (it appends the label itself); NULL copies labels. */
    void (*label)(void *user, kptx_stmt_vec *sv, const kptx_stmt *s);
} kptx_body_hooks;

/* Rewrites fn's body into out (at most cap statements): the hooks' declarations, then
 * fn's own declarations and directives, the prologue where fn's code starts (at the end
 * of an empty body), each instruction through the instr hook, the rest copied. */
void kptx_rw_body(kptx_rw *rw, size_t cap, const kptx_function *fn, kptx_function *out,
                  const kptx_body_hooks *h);
/* A name prefix no identifier of m starts with: base, else base1_, base2_, ... */
int kptx_unused_prefix(const kptx_module *m, const char *base, char *buf, size_t len);

/* ---- Labels and counted loops (fence_loops.c) ---- */

/* A label of a function and the index of its statement. */
typedef struct kptx_label_at {
    const char *name;
    unsigned index;
} kptx_label_at;

/* A function's labels sorted by name, so that each branch finds its target in log time. */
typedef struct kptx_label_index {
    kptx_label_at *at;
    size_t n;
} kptx_label_index;

int kptx_label_index_build(kptx_label_index *ix, const kptx_function *fn);
/* The statement index of label name, or -1. */
int kptx_label_index_find(const kptx_label_index *ix, const char *name);
void kptx_label_index_free(kptx_label_index *ix);
/* The statement index a direct branch s goes to, or -1 (not a branch, or not to a label). */
int kptx_branch_target(const kptx_label_index *ix, const kptx_stmt *s);

/* How a counted loop's back-edge test continues: i < X, i > X or i != X. */
typedef enum kptx_loop_kind { KPTX_LOOP_LT, KPTX_LOOP_GT, KPTX_LOOP_NE } kptx_loop_kind;

/* A loop whose back-edge tests an induction register against a bound the loop does not
 * change (fence_loops.c says what else it proves): its cancel poll can be strip-mined. */
typedef struct kptx_counted_loop {
    unsigned head, update, test, edge;  /* statement indices: label, add, setp, bra */
    kptx_loop_kind kind;
    bool is_signed;             /* the test's order (lt, gt) */
    unsigned width;             /* 32 or 64 */
    const char *iv;             /* the induction register */
    kptx_operand bound;         /* X: a register or an immediate */
    bool bound_first;           /* X is the test's first source */
    int64_t step;               /* the constant step, when step_reg is NULL */
    const char *step_reg;       /* a register step (lt only) */
} kptx_counted_loop;

/* fn's counted loops (malloc'ed array, NULL when none); ix indexes fn's labels. */
int kptx_find_counted_loops(const kptx_function *fn, const kptx_label_index *ix,
                            kptx_counted_loop **out, unsigned *n);

/* The registers and labels the rewrite of one counted loop uses. */
typedef struct kptx_loop_names {
    const char *inner;          /* the inner bound, of the loop's width */
    const char *dist;           /* a scratch register of the loop's width */
    const char *pa, *pb;        /* scratch predicates */
    const char *head2;          /* the label after the inner bound is set */
    const char *leave;          /* the label where the loop is left */
} kptx_loop_names;

/* At the loop's head, after its label: the inner bound, then the label head2. */
void kptx_loop_emit_head(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_counted_loop *l,
                         const kptx_loop_names *nm);
/* The loop's test (test, a statement of the loop's function) against the inner bound. */
void kptx_loop_emit_test(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_stmt *test,
                         const kptx_counted_loop *l, const kptx_loop_names *nm);
/* The back-edge edge to head2, then the original test and a branch to leave when it
 * fails; the caller then polls and ends the loop with kptx_loop_emit_tail. */
void kptx_loop_emit_edge(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_stmt *edge,
                         const kptx_stmt *test, const kptx_loop_names *nm);
/* Back to the loop's head (head_label) for the next strip, and the label leave. */
void kptx_loop_emit_tail(kptx_rw *rw, kptx_stmt_vec *sv, const char *head_label,
                         const kptx_loop_names *nm);

/* ---- Device printf (printf_sites.c, printf.c) ---- */

#define KPTX_PRINTF_MAX_SLOTS (3 * KPTX_PRINTF_MAX_ARGS)  /* '*' width, '*' precision, value */

/* One argument word to copy: offset in the buffer, 4 or 8 bytes. */
typedef struct kptx_printf_slot {
    uint32_t off;
    uint8_t size;
} kptx_printf_slot;

/* A call that is rewritten. */
typedef struct kptx_printf_site {
    unsigned call;              /* statement index of the call */
    int st_fmt, st_args;        /* statement indices of the two st.param, -1 when absent */
    int ld_ret;                 /* statement index of the result's ld.param, -1: none */
    kptx_operand fmt, args;     /* the values stored: a register; args may be the integer 0 */
    const char *fmt_var;        /* the module variable the format lives in */
    uint32_t bytes;             /* argument bytes */
    unsigned n_args, n_slots;
    kptx_printf_slot slots[KPTX_PRINTF_MAX_SLOTS];
} kptx_printf_site;

/* Whether v is an initialised one-dimensional byte array of .global or .const (a string). */
bool kptx_printf_string_var(const kptx_var *v);
/* The calls of fn the printf pass can rewrite (malloc'ed array, NULL when none). */
int kptx_printf_find_sites(const kptx_module *m, const kptx_function *fn, kptx_printf_site **out,
                           unsigned *n);

#endif
