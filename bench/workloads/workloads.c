/* The registry of benchmark kernels (kw_kernels, kw_find) and kw_total_blocks. */
#include "kernelet/workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const kw_kernel kw_pc, kw_sad, kw_spmv, kw_st, kw_mm, kw_mriq, kw_bs, kw_tea;

/* The paper's table order. */
static const kw_kernel *const kw_all[] = {
    &kw_pc, &kw_sad, &kw_spmv, &kw_st, &kw_mm, &kw_mriq, &kw_bs, &kw_tea,
};

const kw_kernel *const *kw_kernels(size_t *n)
{
    if (n)
        *n = sizeof kw_all / sizeof kw_all[0];
    return kw_all;
}

const kw_kernel *kw_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof kw_all / sizeof kw_all[0]; i++)
        if (strcmp(kw_all[i]->name, name) == 0)
            return kw_all[i];
    return NULL;
}

uint64_t kw_total_blocks(const kw_instance *inst)
{
    if (!inst)
        return 0;
    return (uint64_t)inst->grid[0] * inst->grid[1] * inst->grid[2];
}

size_t kw_pack_args(const kw_instance *inst, const uint64_t dev[], unsigned char *out)
{
    size_t off = 0;
    for (unsigned a = 0; a < inst->n_args; a++) {
        const kw_arg *arg = &inst->args[a];
        size_t size = arg->kind == KW_ARG_U32 || arg->kind == KW_ARG_F32 ? 4 : 8;
        off = (off + size - 1) / size * size;
        switch (arg->kind) {
        case KW_ARG_BUFFER: memcpy(out + off, &dev[arg->value.buffer], 8); break;
        case KW_ARG_U32: memcpy(out + off, &arg->value.u32, 4); break;
        case KW_ARG_U64: memcpy(out + off, &arg->value.u64, 8); break;
        case KW_ARG_F32: memcpy(out + off, &arg->value.f32, 4); break;
        case KW_ARG_F64: memcpy(out + off, &arg->value.f64, 8); break;
        }
        off += size;
    }
    return off;
}

char *kw_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
        s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) {
        s[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return s;
}
