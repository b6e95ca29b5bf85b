/* PTX of the kernels the backend tests run (tests/cuda with the fake driver, tests/gpu/cuda
 * on a GPU): count_blocks (and its twin count_blocks_b, a second kernel identity for the
 * scheduler to pair) adds one to counts[linear block id] for every block, so a launch run
 * as slices must leave every count at exactly one per run; fault stores to address 8.
 * The sliced variants come from the PTX library's slicer (kptx_slice_module). */
#ifndef KERNELET_TESTS_CUDA_KERNELS_PTX_H
#define KERNELET_TESTS_CUDA_KERNELS_PTX_H

/* count_blocks under another name: the same body. */
#define KCUDA_COUNT_BLOCKS_PTX(name) \
    ".visible .entry " name "(.param .u64 counts, .param .u32 tag)\n" \
    "{\n" \
    "    .reg .pred %p<2>;\n" \
    "    .reg .b32 %r<10>;\n" \
    "    .reg .b64 %rd<5>;\n" \
    "    ld.param.u64 %rd1, [counts];\n" \
    "    cvta.to.global.u64 %rd2, %rd1;\n" \
    "    mov.u32 %r1, %ctaid.x;\n" \
    "    mov.u32 %r2, %ctaid.y;\n" \
    "    mov.u32 %r3, %ctaid.z;\n" \
    "    mov.u32 %r4, %nctaid.x;\n" \
    "    mov.u32 %r5, %nctaid.y;\n" \
    "    mad.lo.u32 %r6, %r3, %r5, %r2;\n" \
    "    mad.lo.u32 %r7, %r6, %r4, %r1;\n" \
    "    mov.u32 %r8, %tid.x;\n" \
    "    setp.ne.u32 %p1, %r8, 0;\n" \
    "    @%p1 bra DONE;\n" \
    "    mul.wide.u32 %rd3, %r7, 4;\n" \
    "    add.s64 %rd4, %rd2, %rd3;\n" \
    "    atom.global.add.u32 %r9, [%rd4], 1;\n" \
    "DONE:\n" \
    "    ret;\n" \
    "}\n" \
    "\n"

static const char kcuda_test_ptx[] =
    ".version 7.5\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    KCUDA_COUNT_BLOCKS_PTX("count_blocks")
    KCUDA_COUNT_BLOCKS_PTX("count_blocks_b")
    ".visible .entry fault(.param .u32 value)\n"
    "{\n"
    "    .reg .b32 %r<2>;\n"
    "    .reg .b64 %rd<2>;\n"
    "    ld.param.u32 %r1, [value];\n"
    "    mov.u64 %rd1, 8;\n"
    "    st.global.u32 [%rd1], %r1;\n"
    "    ret;\n"
    "}\n";

/* A module with variables (__device__ unsigned counter; __constant__ char table[16]):
 * every load must get variables of its own. */
static const char kcuda_test_vars_ptx[] =
    ".version 7.5\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .global .align 4 .u32 counter;\n"
    ".const .align 8 .b8 table[16];\n"
    "\n"
    KCUDA_COUNT_BLOCKS_PTX("count_vars");

#endif
