/* PTX fundamental types: names, sizes and classes. */
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned size;
    bool is_signed, is_float;
} type_table[EMU_T_COUNT] = {
    [EMU_T_NONE] = {"", 0, false, false},
    [EMU_T_B8] = {".b8", 1, false, false},
    [EMU_T_B16] = {".b16", 2, false, false},
    [EMU_T_B32] = {".b32", 4, false, false},
    [EMU_T_B64] = {".b64", 8, false, false},
    [EMU_T_B128] = {".b128", 16, false, false},
    [EMU_T_U8] = {".u8", 1, false, false},
    [EMU_T_U16] = {".u16", 2, false, false},
    [EMU_T_U32] = {".u32", 4, false, false},
    [EMU_T_U64] = {".u64", 8, false, false},
    [EMU_T_S8] = {".s8", 1, true, false},
    [EMU_T_S16] = {".s16", 2, true, false},
    [EMU_T_S32] = {".s32", 4, true, false},
    [EMU_T_S64] = {".s64", 8, true, false},
    [EMU_T_F16] = {".f16", 2, false, true},
    [EMU_T_F16X2] = {".f16x2", 4, false, true},
    [EMU_T_BF16] = {".bf16", 2, false, true},
    [EMU_T_BF16X2] = {".bf16x2", 4, false, true},
    [EMU_T_F32] = {".f32", 4, false, true},
    [EMU_T_F64] = {".f64", 8, false, true},
    [EMU_T_PRED] = {".pred", 1, false, false},
};

emu_type emu_type_parse(const char *mod)
{
    if (!mod)
        return EMU_T_NONE;
    for (unsigned t = 1; t < EMU_T_COUNT; t++)
        if (strcmp(mod, type_table[t].name) == 0)
            return (emu_type)t;
    return EMU_T_NONE;
}

unsigned emu_type_size(emu_type t)
{
    return t < EMU_T_COUNT ? type_table[t].size : 0;
}

bool emu_type_is_signed(emu_type t)
{
    return t < EMU_T_COUNT && type_table[t].is_signed;
}

bool emu_type_is_float(emu_type t)
{
    return t < EMU_T_COUNT && type_table[t].is_float;
}

const char *emu_type_name(emu_type t)
{
    return t < EMU_T_COUNT ? type_table[t].name : "";
}

uint64_t emu_var_bytes(const kptx_var *v)
{
    emu_type t = emu_type_parse(v->type);
    uint64_t n = emu_type_size(t) * (v->vec ? v->vec : 1u);
    for (unsigned i = 0; i < v->n_dims && i < 4; i++) {
        uint64_t d = v->dims[i];
        if (d == 0 && i == 0 && v->has_init) {
            uint64_t per = 1;
            for (unsigned j = 1; j < v->n_dims && j < 4; j++)
                per *= v->dims[j] ? v->dims[j] : 1;
            d = (v->n_init + per * (v->vec ? v->vec : 1) - 1) / (per * (v->vec ? v->vec : 1));
        }
        if (d && n > UINT64_MAX / d)
            return UINT64_MAX;
        n *= d;
    }
    return n;
}

uint32_t emu_var_align(const kptx_var *v)
{
    if (v->align)
        return v->align;
    unsigned size = emu_type_size(emu_type_parse(v->type)) * (v->vec ? v->vec : 1u);
    return size ? size : 1;
}

int emu_grow(void **items, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    uint32_t new_cap = *cap ? *cap * 2 : 16;
    if (new_cap <= n || new_cap > UINT32_MAX / 2)
        return KEMU_ENOMEM;
    void *p = realloc(*items, (size_t)new_cap * elem);
    if (!p)
        return KEMU_ENOMEM;
    *items = p;
    *cap = new_cap;
    return 0;
}
