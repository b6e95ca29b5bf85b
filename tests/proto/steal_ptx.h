/* PTX of the kernels the fencing tests attack with (test_kerneletd_fence.c,
 * test_kerneletd_contexts.c): a kernel that copies a victim's words out and overwrites
 * them. */
#ifndef STEAL_PTX_H
#define STEAL_PTX_H

/* steal(u64 victim, u64 out): out[i] = victim[i]; victim[i] = 0xbadbad, one thread per
 * word, through .global accesses (steal_global) or generic ones (steal_generic). */
#define STEAL(name, space) STEAL_WITH(name, space, "", "")
/* The same with more parameters after the two, and one more instruction. */
#define STEAL_WITH(name, space, more_params, more_code)                                     \
    ".visible .entry " name "(\n"                                                           \
    "    .param .u64 victim,\n"                                                             \
    "    .param .u64 out" more_params "\n"                                                  \
    ")\n"                                                                                   \
    "{\n"                                                                                   \
    "    .reg .b32 %r<6>;\n"                                                                \
    "    .reg .b64 %rd<6>;\n"                                                               \
    "    ld.param.u64 %rd1, [victim];\n"                                                    \
    "    ld.param.u64 %rd2, [out];\n"                                                       \
    "    mov.u32 %r1, %ctaid.x;\n"                                                          \
    "    mov.u32 %r2, %ntid.x;\n"                                                           \
    "    mov.u32 %r3, %tid.x;\n"                                                            \
    "    mad.lo.s32 %r1, %r1, %r2, %r3;\n"                                                  \
    "    mul.wide.u32 %rd3, %r1, 4;\n"                                                      \
    "    add.s64 %rd4, %rd1, %rd3;\n"                                                       \
    "    add.s64 %rd5, %rd2, %rd3;\n"                                                       \
    "    ld" space ".u32 %r4, [%rd4];\n"                                                    \
    "    st" space ".u32 [%rd5], %r4;\n"                                                    \
    "    mov.u32 %r5, 12246957;\n" /* 0xbadbad */                                           \
    "    st" space ".u32 [%rd4], %r5;\n"                                                    \
    more_code                                                                               \
    "    ret;\n"                                                                            \
    "}\n"

/* The module header those kernels go under. */
#define STEAL_HEADER ".version 7.0\n.target sm_52\n.address_size 64\n"

#endif
