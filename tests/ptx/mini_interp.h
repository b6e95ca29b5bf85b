/* A tiny interpreter for straight-line PTX, enough to run the slicer's index arithmetic:
 * mov, ld.param, add, sub, mul.lo, div, rem (32-bit), setp.eq/ne, guards, bra to a label,
 * ld/st of .u32 in .global and .shared variables (.volatile too), call.uni of functions
 * without arguments, ret. One thread, one block at a time; anything else is an error, so a
 * test cannot pass by skipping code. */
#ifndef PTX_TEST_MINI_INTERP_H
#define PTX_TEST_MINI_INTERP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernelet/ptx.h"

typedef struct mi_state {
    const kptx_module *m;
    uint32_t ctaid[3], nctaid[3];   /* what %ctaid / %nctaid read */
    GHashTable *params;             /* parameter name -> value (GUINT_TO_POINTER) */
    GHashTable *memory;             /* "symbol+offset" -> value, .global and .shared */
    GHashTable *regs;               /* register name -> value */
    unsigned depth;
    char error[256];
} mi_state;

void mi_init(mi_state *st, const kptx_module *m);
void mi_clear(mi_state *st);
void mi_set_param(mi_state *st, const char *name, uint32_t value);
/* Runs function `name` (entry or func) from its first statement. */
bool mi_run(mi_state *st, const char *name);
/* The word stored at symbol+offset, or fails the test when nothing was stored there. */
uint32_t mi_load(mi_state *st, const char *symbol, int64_t offset);

#endif
