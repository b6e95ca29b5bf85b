/* The sidecar table of corpus kernels for the generic runner (see corpus_table.c). */
#ifndef PTX_GPU_CORPUS_TABLE_H
#define PTX_GPU_CORPUS_TABLE_H

#include <stddef.h>

typedef struct corpus_case {
    const char *file;       /* PTX file in the built corpus folder */
    const char *kernel;
    const char *params;     /* one item per parameter: buf:N, u32:V, f32:V, f64:V, raw */
    unsigned grid[3], block[3];
    unsigned shared;        /* dynamic shared memory bytes */
    const char *globals;    /* module variables to compare, comma-separated, or NULL */
} corpus_case;

extern const corpus_case corpus_cases[];
extern const size_t n_corpus_cases;

#endif
