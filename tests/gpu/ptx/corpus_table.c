/* The corpus kernels (tests/ptx/corpus/) as the generic runner launches them. A parameter
 * list is comma-separated, one item per PTX parameter, in order:
 *   buf:N   a device buffer of N bytes filled with random bytes (its address is passed)
 *   u32:V   f32:V   f64:V   a value
 *   raw     random bytes, as many as the parameter has (structures by value)
 * Globals are module variables compared after the run (zeroed before it). Sizes are chosen
 * so that every access of the kernel stays inside its buffers. */
#include "corpus_table.h"

#include <stddef.h>

const corpus_case corpus_cases[] = {
    {"grid1d.ptx", "grid1d", "buf:400000,u32:100000", {391, 1, 1}, {256, 1, 1}, 0, NULL},
    {"grid1d_lineinfo.ptx", "grid1d_loop", "buf:400000,u32:100000,u32:9", {391, 1, 1},
     {256, 1, 1}, 0, NULL},
    {"grid2d.ptx", "transpose", "buf:2800000,buf:2800000,u32:1000,u32:700", {63, 44, 1},
     {16, 16, 1}, 0, NULL},
    {"grid2d_sm90.ptx", "coords2d", "buf:217856", {37, 23, 1}, {8, 4, 1}, 0, NULL},
    {"grid3d.ptx", "coords3d", "buf:80640", {9, 7, 5}, {4, 2, 2}, 0, NULL},
    {"grid3d.ptx", "stencil3d", "buf:491520,buf:491520,u32:64,u32:48,u32:40", {8, 6, 10},
     {8, 8, 4}, 0, NULL},
    {"gridstride.ptx", "saxpy_stride", "buf:4000000,buf:4000000,f32:2.5,u32:1000000",
     {120, 1, 1}, {256, 1, 1}, 0, NULL},
    {"gridstride_lineinfo_sm90.ptx", "scale2d_stride", "buf:2520000,u32:900,u32:700,f32:1.5",
     {5, 7, 1}, {32, 8, 1}, 0, NULL},
    {"templates.ptx", "_Z4blurIfLi2EEvPT_PKS0_j", "buf:400000,buf:400000,u32:100000",
     {391, 1, 1}, {256, 1, 1}, 0, NULL},
    {"templates.ptx", "_Z4blurIdLi1EEvPT_PKS0_j", "buf:800000,buf:800000,u32:100000",
     {391, 1, 1}, {256, 1, 1}, 0, NULL},
    {"templates_lineinfo.ptx", "_Z4blurIiLi3EEvPT_PKS0_j", "buf:400000,buf:400000,u32:100000",
     {391, 1, 1}, {256, 1, 1}, 0, NULL},
    {"shared.ptx", "block_sum", "buf:1564,buf:400000,u32:100000", {391, 1, 1}, {256, 1, 1},
     0, NULL},
    {"shared_G.ptx", "block_sum", "buf:1564,buf:400000,u32:100000", {391, 1, 1}, {256, 1, 1},
     0, NULL},
    {"shared.ptx", "reverse_dyn", "buf:400000,u32:100000", {391, 1, 1}, {256, 1, 1}, 1024,
     NULL},
    {"noparams.ptx", "noparams", "", {50, 3, 1}, {64, 1, 1}, 0, "g_hits,g_last_grid"},
    {"bigparams.ptx", "bigparams", "buf:400000,buf:400000,raw,raw", {391, 1, 1}, {256, 1, 1},
     0, NULL},
    {"devfunc.ptx", "devfunc", "buf:30720", {6, 5, 4}, {8, 4, 2}, 0, NULL},
    {"devfunc_G.ptx", "devfunc", "buf:30720", {6, 5, 4}, {8, 4, 2}, 0, NULL},
    {"devfunc_sm90.ptx", "devfunc", "buf:30720", {6, 5, 4}, {8, 4, 2}, 0, NULL},
    {"atomics.ptx", "histogram", "buf:256,buf:800000,u32:200000", {100, 1, 1}, {256, 1, 1}, 0,
     NULL},
    {"atomics_sm90.ptx", "max_or", "buf:16,buf:400000,u32:100000", {391, 1, 1}, {256, 1, 1},
     0, NULL},
    {"shuffle.ptx", "warp_reduce", "buf:12512,buf:400000,u32:100000", {391, 1, 1},
     {256, 1, 1}, 0, NULL},
    {"misc.ptx", "misc_math", "buf:200000,buf:800000,buf:400000,u32:50000,u32:0", {196, 1, 1},
     {256, 1, 1}, 0, NULL},
    {"misc_fastmath.ptx", "half_axpy", "buf:200000,buf:200000,f32:0.75,u32:100000",
     {391, 1, 1}, {256, 1, 1}, 0, NULL},
    {"funcptr.ptx", "apply_pure", "buf:51200,u32:1", {100, 1, 1}, {128, 1, 1}, 0, NULL},
};

const size_t n_corpus_cases = sizeof corpus_cases / sizeof corpus_cases[0];
