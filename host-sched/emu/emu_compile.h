/* Compiling an entry into an emu_code: shared by the driver (emu_compile.c), the symbol
 * table (emu_symtab.c), the operand helpers (emu_operands.c) and the decoders
 * (emu_decode_*.c). */
#ifndef KERNELET_EMU_COMPILE_H
#define KERNELET_EMU_COMPILE_H

#include "emu_internal.h"

/* ---- Scoped symbol table -------------------------------------------------------------- */

typedef enum emu_sym_kind {
    EMU_SYM_REG,       /* one register: slot */
    EMU_SYM_REGRANGE,  /* %r<N>: slots [slot, slot + count) for %r0..%r(N-1) */
    EMU_SYM_VAR,       /* a variable: space and address in it */
    EMU_SYM_LABEL,     /* pc */
} emu_sym_kind;

typedef struct emu_sym {
    const char *name;
    emu_sym_kind kind;
    int prev;                 /* shadowed symbol of the same name and key class, or -1 */
    unsigned depth;
    uint32_t slot, count;     /* registers */
    emu_type type;            /* registers: declared type; vars: element type */
    unsigned space;           /* vars: EMU_SPACE_* */
    uint64_t addr;            /* vars: address in that space (param: see EMU_PFRAME_BASE) */
    uint64_t bytes;
    uint32_t pc;              /* labels */
} emu_sym;

typedef struct emu_symtab {
    emu_sym *syms;
    uint32_t n, cap;
    int *heads;               /* hash buckets: index of the newest symbol, or -1 */
    const char **keys;        /* bucket keys (the name), NULL when empty */
    bool *key_range;          /* bucket key class: register ranges apart from the rest */
    unsigned n_buckets, n_used;
    unsigned depth;
} emu_symtab;

int emu_symtab_init(emu_symtab *st);
void emu_symtab_free(emu_symtab *st);
void emu_symtab_push(emu_symtab *st);
/* Drops the innermost scope's symbols. */
void emu_symtab_pop(emu_symtab *st);
/* Adds a symbol in the innermost scope; negative on allocation failure. */
int emu_symtab_add(emu_symtab *st, const emu_sym *sym);
/* The visible symbol called name (registers of ranges resolved), or NULL. */
const emu_sym *emu_symtab_find(const emu_symtab *st, const char *name, emu_sym *tmp);
/* A label visible now. */
const emu_sym *emu_symtab_find_label(const emu_symtab *st, const char *name);

/* ---- Compile context ------------------------------------------------------------------ */

/* Slots are tagged while decoding; emu_compile turns tags into final slot numbers. */
#define EMU_TAG_MASK 0xc0000000u
#define EMU_TAG_CONST 0x40000000u
#define EMU_TAG_SREG 0x80000000u

typedef struct emu_linked_fn {
    const kptx_function *fn;
    uint32_t start_pc;
    uint32_t *param_off;      /* .func parameters: call-frame offsets */
    uint32_t *ret_off;
    unsigned depth;           /* longest call chain below (for max_depth) */
    bool visiting, done;      /* depth-first walk */
    bool recursive;           /* on a cycle of the call graph */
    emu_frame frame;          /* what an invocation owns (emu_internal.h) */
} emu_linked_fn;

typedef struct emu_fixup {
    uint32_t insn;
    const char *label;
    unsigned depth;
} emu_fixup;

typedef struct emu_cc {
    const kemu_module *mod;
    kemu_error *err;
    emu_code *code;

    emu_insn *insns;
    uint32_t n_insns, cap_insns;

    uint32_t n_regs;
    emu_type *slot_types;
    uint32_t cap_slots;
    uint32_t sink_slot;       /* EMU_NO_SLOT until a '_' needs it */

    uint64_t *consts;
    uint32_t n_consts, cap_consts;

    emu_symtab st;

    emu_linked_fn *fns;
    uint32_t n_fns, cap_fns;
    uint32_t *walk;           /* the depth-first walk's path (indices into fns) */
    uint32_t n_walk, cap_walk;
    bool indirect;            /* some call goes through a pointer */
    unsigned cur_fn;          /* index of the function being decoded */

    emu_fixup *fixups;
    uint32_t n_fixups, cap_fixups;

    emu_copylist *copylists;
    uint32_t n_copylists, cap_copylists;
    emu_copy *copies;
    uint32_t n_copies, cap_copies;

    uint32_t shared_bytes;    /* static shared: module variables, then the functions' */
    uint32_t dyn_align;
    uint32_t local_bytes;
    uint32_t pframe_bytes;

    char note[200];           /* why the instruction being decoded is not supported */
    unsigned line;
} emu_cc;

/* Decoder results besides 0: the instruction is not supported (cc->note says why). */
#define EMU_DEC_UNSUPPORTED 1
/* ... or the decoder emitted its instructions itself (calls). */
#define EMU_DEC_EMITTED 2

/* Keeps a copy of text in the code being compiled (freed with it) in *out. */
int emu_code_note(emu_cc *cc, const char *text, const char **out);

/* Formats cc->note and returns EMU_DEC_UNSUPPORTED. */
int emu_unsupported(emu_cc *cc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Modifier lists --------------------------------------------------------------------- */

typedef struct emu_mods {
    const kptx_instr *ki;
    uint64_t used;            /* bit i: modifier i consumed */
} emu_mods;

void emu_mods_init(emu_mods *ml, const kptx_instr *ki);
bool emu_mods_take(emu_mods *ml, const char *mod);
/* The first unused type modifier (consumed), or EMU_T_NONE. */
emu_type emu_mods_type(emu_mods *ml);
/* The index in names[] of the first unused modifier that is one of them (consumed), or -1. */
int emu_mods_pick(emu_mods *ml, const char *const *names, unsigned n);
int emu_mods_rounding(emu_mods *ml);           /* EMU_RND_*, NONE when absent */
int emu_mods_compare(emu_mods *ml);            /* EMU_CMP_*, 0 when absent */
int emu_mods_bool(emu_mods *ml);               /* EMU_BOP_* */
/* State space (EMU_SPACE_*; GENERIC when absent); -1 for a space not supported. */
int emu_mods_space(emu_mods *ml);
unsigned emu_mods_vec(emu_mods *ml);           /* 1, 2 or 4 */
/* Consumes cache, eviction, ordering and scope hints that do not change results. */
void emu_mods_hints(emu_mods *ml);
/* The first modifier nobody consumed, or NULL. */
const char *emu_mods_left(const emu_mods *ml);

/* ---- Operands ------------------------------------------------------------------------- */

/* Slot of a source operand read as type t: register, immediate (a constant slot, float
 * literals converted to t), special register, or a symbol's address. A negated predicate
 * gets a temporary computed by an inserted not.pred. */
int emu_src(emu_cc *cc, const kptx_operand *op, emu_type t, uint32_t *slot);
/* Slot of a destination register ('_' gets a scratch slot). */
int emu_dst(emu_cc *cc, const kptx_operand *op, uint32_t *slot);
/* Base slot, offset and whether the base is 32-bit, of an address operand [..]. */
int emu_addr(emu_cc *cc, const kptx_operand *op, unsigned space, uint32_t *base,
             int64_t *offset, bool *addr32);
/* A constant slot holding v. */
int emu_const_slot(emu_cc *cc, uint64_t v, uint32_t *slot);
/* The slot of a special register by name ("%tid.x"), or unsupported. */
int emu_sreg_slot(emu_cc *cc, const char *name, uint32_t *slot);
/* A fresh register slot (temporaries). */
int emu_new_slot(emu_cc *cc, emu_type t, uint32_t *slot);
/* Declared type of a register slot (EMU_T_NONE for constants). */
emu_type emu_slot_type(const emu_cc *cc, uint32_t slot);
/* Address of a variable symbol as an instruction in `space` sees it (generic: windows). */
uint64_t emu_var_address(const emu_sym *var, unsigned space);

/* Appends an instruction; negative on allocation failure. */
int emu_emit(emu_cc *cc, const emu_insn *in);
/* A new instruction with defaults for the current line. */
void emu_insn_init(emu_cc *cc, emu_insn *in, const kptx_instr *ki);
/* A call copy list of n entries; *first gets the index of the first copy. */
int emu_copylist_new(emu_cc *cc, uint32_t n, uint32_t *list);
int emu_copy_add(emu_cc *cc, uint32_t dst, uint32_t src, uint32_t bytes);
/* Records a branch to label at instruction insn (resolved when its scope closes). */
int emu_fixup_add(emu_cc *cc, uint32_t insn, const char *label);
/* Index of the linked function called name (adds nothing), or -1. */
int emu_linked_index(const emu_cc *cc, const char *name);

/* ---- Decoders ----------------------------------------------------------------------------- */

/* Decodes one instruction into one or more emu_insn (appended). 0, EMU_DEC_UNSUPPORTED, or
 * a negative error. */
int emu_decode(emu_cc *cc, const kptx_instr *ki);

typedef int (*emu_decoder)(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in);
/* The decoder of an opcode in each family file, or NULL. */
emu_decoder emu_decoder_arith(const char *opcode);
emu_decoder emu_decoder_data(const char *opcode);
emu_decoder emu_decoder_ctrl(const char *opcode);

#endif
