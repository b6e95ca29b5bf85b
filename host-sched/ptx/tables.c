/* What the library knows about PTX names: special registers, types, state spaces,
 * instruction names and directive forms (PTX ISA 9.0). */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

typedef struct sreg_def {
    const char *name;   /* without '%' */
    unsigned len;       /* strlen(name): compared first, most lookups stop there */
    uint32_t cls;
    bool vector;        /* has .x/.y/.z components */
} sreg_def;

static const sreg_def sregs[] = {
    {"tid", 3, KPTX_SREG_TID, true},
    {"ntid", 4, KPTX_SREG_NTID, true},
    {"ctaid", 5, KPTX_SREG_CTAID, true},
    {"nctaid", 6, KPTX_SREG_NCTAID, true},
    {"laneid", 6, KPTX_SREG_LANEID, false},
    {"warpid", 6, KPTX_SREG_WARPID, false},
    {"nwarpid", 7, KPTX_SREG_WARPID, false},
    {"smid", 4, KPTX_SREG_SMID, false},
    {"nsmid", 5, KPTX_SREG_SMID, false},
    {"gridid", 6, KPTX_SREG_GRIDID, false},
    {"clusterid", 9, KPTX_SREG_CLUSTER, true},
    {"nclusterid", 10, KPTX_SREG_CLUSTER, true},
    {"cluster_ctaid", 13, KPTX_SREG_CLUSTER, true},
    {"cluster_nctaid", 14, KPTX_SREG_CLUSTER, true},
    {"cluster_ctarank", 15, KPTX_SREG_CLUSTER, false},
    {"cluster_nctarank", 16, KPTX_SREG_CLUSTER, false},
    {"is_explicit_cluster", 19, KPTX_SREG_CLUSTER, false},
    {"clock", 5, KPTX_SREG_CLOCK, false},
    {"clock_hi", 8, KPTX_SREG_CLOCK, false},
    {"clock64", 7, KPTX_SREG_CLOCK, false},
    {"globaltimer", 11, KPTX_SREG_CLOCK, false},
    {"globaltimer_lo", 14, KPTX_SREG_CLOCK, false},
    {"globaltimer_hi", 14, KPTX_SREG_CLOCK, false},
    {"lanemask_eq", 11, KPTX_SREG_LANEMASK, false},
    {"lanemask_le", 11, KPTX_SREG_LANEMASK, false},
    {"lanemask_lt", 11, KPTX_SREG_LANEMASK, false},
    {"lanemask_ge", 11, KPTX_SREG_LANEMASK, false},
    {"lanemask_gt", 11, KPTX_SREG_LANEMASK, false},
    {"total_smem_size", 15, KPTX_SREG_SMEM, false},
    {"dynamic_smem_size", 17, KPTX_SREG_SMEM, false},
    {"aggr_smem_size", 14, KPTX_SREG_SMEM, false},
    {"reserved_smem_offset_begin", 26, KPTX_SREG_OTHER, false},
    {"reserved_smem_offset_end", 24, KPTX_SREG_OTHER, false},
    {"reserved_smem_offset_cap", 24, KPTX_SREG_OTHER, false},
    {"reserved_smem_offset_0", 22, KPTX_SREG_OTHER, false},
    {"reserved_smem_offset_1", 22, KPTX_SREG_OTHER, false},
    {"current_graph_exec", 18, KPTX_SREG_OTHER, false},
};

/* Numbered families: %envreg0..31, %pm0..7, %pm0_64..%pm7_64. */
static uint32_t numbered_sreg(const char *b, size_t n)
{
    if (n > 6 && memcmp(b, "envreg", 6) == 0) {
        unsigned v = 0;
        size_t i = 6;
        for (; i < n && b[i] >= '0' && b[i] <= '9' && i < 8; i++)
            v = v * 10 + (unsigned)(b[i] - '0');
        if (i == n && v < 32 && !(n == 8 && b[6] == '0'))
            return KPTX_SREG_ENVREG;
        return 0;
    }
    if (n >= 3 && b[0] == 'p' && b[1] == 'm' && b[2] >= '0' && b[2] <= '7' &&
        (n == 3 || (n == 6 && memcmp(b + 3, "_64", 3) == 0)))
        return KPTX_SREG_OTHER;
    return 0;
}

static uint32_t sreg_lookup(const char *name, size_t len, bool *vector)
{
    if (len < 2 || name[0] != '%')
        return 0;
    const char *b = name + 1;
    size_t n = len - 1;
    *vector = false;
    /* Most operands are registers like %r12 or %fd3: a name ending in a digit can only be
     * one of the numbered special registers. */
    if (b[n - 1] >= '0' && b[n - 1] <= '9' && !(n > 6 && memcmp(b, "envreg", 6) == 0) &&
        !(n >= 3 && b[0] == 'p' && b[1] == 'm') && !(n == 7 && memcmp(b, "clock64", 7) == 0) &&
        !(n == 22 && memcmp(b, "reserved_smem_offset_", 21) == 0))
        return 0;
    for (size_t i = 0; i < sizeof sregs / sizeof sregs[0]; i++)
        if (sregs[i].len == n && memcmp(sregs[i].name, b, n) == 0) {
            *vector = sregs[i].vector;
            return sregs[i].cls;
        }
    return numbered_sreg(b, n);
}

bool kptx_is_sreg(const char *name, size_t len)
{
    const char *dot = memchr(name, '.', len);
    bool vector;
    return sreg_lookup(name, dot ? (size_t)(dot - name) : len, &vector) != 0;
}

uint32_t kptx_sreg_class(const char *name)
{
    size_t len = strlen(name);
    const char *dot = memchr(name, '.', len);
    bool vector;
    uint32_t cls = sreg_lookup(name, dot ? (size_t)(dot - name) : len, &vector);
    if (!cls || !dot)
        return cls;
    /* A component: only .x, .y, .z of the vector registers. */
    if (!vector || strlen(dot) != 2 || (dot[1] != 'x' && dot[1] != 'y' && dot[1] != 'z'))
        return 0;
    return cls;
}

typedef struct type_def {
    const char *name;
    unsigned size;
} type_def;

static const type_def types[] = {
    {".b8", 1}, {".u8", 1}, {".s8", 1}, {".pred", 1},
    {".b16", 2}, {".u16", 2}, {".s16", 2}, {".f16", 2}, {".bf16", 2},
    {".e4m3x2", 2}, {".e5m2x2", 2},
    {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4}, {".f16x2", 4}, {".bf16x2", 4},
    {".tf32", 4},
    {".b64", 8}, {".u64", 8}, {".s64", 8}, {".f64", 8},
    {".b128", 16},
    {".texref", 8}, {".samplerref", 8}, {".surfref", 8},
};

unsigned kptx_type_size(const char *type)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].name, type) == 0)
            return types[i].size;
    return 0;
}

const char *kptx_type_canon(const char *p, size_t len)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == len && memcmp(types[i].name, p, len) == 0)
            return types[i].name;
    return NULL;
}

static const struct {
    const char *name;
    kptx_space space;
} spaces[] = {
    {".reg", KPTX_SPACE_REG}, {".sreg", KPTX_SPACE_SREG}, {".const", KPTX_SPACE_CONST},
    {".global", KPTX_SPACE_GLOBAL}, {".local", KPTX_SPACE_LOCAL}, {".param", KPTX_SPACE_PARAM},
    {".shared", KPTX_SPACE_SHARED}, {".tex", KPTX_SPACE_TEX},
};

kptx_space kptx_space_of(const char *word, size_t len)
{
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
        if (strlen(spaces[i].name) == len && memcmp(spaces[i].name, word, len) == 0)
            return spaces[i].space;
    return KPTX_SPACE_NONE;
}

kptx_space kptx_mod_space(const char *mod)
{
    const char *sub = strstr(mod, "::");
    return kptx_space_of(mod, sub ? (size_t)(sub - mod) : strlen(mod));
}

const char *kptx_space_name(kptx_space s)
{
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
        if (spaces[i].space == s)
            return spaces[i].name;
    return "";
}

/* Instruction names of PTX ISA 9.0, sorted for bsearch. */
static const char *const opcodes[] = {
    "abs", "activemask", "add", "addc", "alloca", "and", "applypriority", "atom", "bar",
    "barrier", "bfe", "bfi", "bfind", "bmsk", "bra", "brev", "brkpt", "brx", "call",
    "clusterlaunchcontrol", "clz", "cnot", "copysign", "cos", "cp", "createpolicy", "cvt",
    "cvta", "discard", "div", "dp2a", "dp4a", "elect", "ex2", "exit", "fence", "fma", "fns",
    "getctarank", "griddepcontrol", "isspacep", "istypeof", "ld", "ldmatrix", "ldu", "lg2",
    "lop3", "mad", "mad24", "madc", "mapa", "match", "max", "mbarrier", "membar", "min", "mma",
    "mov", "movmatrix", "mul", "mul24", "multimem", "nanosleep", "neg", "not", "or", "pmevent",
    "popc", "prefetch", "prefetchu", "prmt", "rcp", "red", "redux", "rem", "ret", "rsqrt",
    "sad", "selp", "set", "setmaxnreg", "setp", "shf", "shfl", "shl", "shr", "sin", "slct",
    "sqrt", "st", "stackrestore", "stacksave", "stmatrix", "sub", "subc", "suld", "suq",
    "sured", "sust", "szext", "tanh", "tcgen05", "tensormap", "testp", "tex", "tld4", "trap",
    "txq", "vabsdiff", "vabsdiff2", "vabsdiff4", "vadd", "vadd2", "vadd4", "vavrg2", "vavrg4",
    "vmad", "vmax", "vmax2", "vmax4", "vmin", "vmin2", "vmin4", "vote", "vset", "vset2",
    "vset4", "vshl", "vshr", "vsub", "vsub2", "vsub4", "wgmma", "wmma", "xor",
};

static int cmp_name(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(const char *const *)elem);
}

bool kptx_known_opcode(const char *opcode)
{
    return bsearch(opcode, opcodes, sizeof opcodes / sizeof opcodes[0], sizeof opcodes[0],
                   cmp_name) != NULL;
}

bool kptx_directive_has_semicolon(const char *name)
{
    return strcmp(name, ".pragma") == 0 || strcmp(name, ".callprototype") == 0 ||
           strcmp(name, ".calltargets") == 0 || strcmp(name, ".branchtargets") == 0 ||
           strcmp(name, ".alias") == 0;
}
