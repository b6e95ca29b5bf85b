/* Metric names per quantity and the choice among them (see profiler_metrics.h). */
#include "profiler_metrics.h"

#include <stdarg.h>
#include <stdio.h>

typedef struct quantity_row {
    const char *name;
    int required;
    const char *candidates[4];
} quantity_row;

/* Hopper dropped some instruction-class counters of the smsp__inst_executed_op_* family;
 * the SASS-level family (smsp__sass_inst_executed_op_*) counts the same warp-level
 * instructions there. sm__cycles_elapsed.max stands in when .avg is not offered. */
static const quantity_row rows[KPROF_Q_COUNT] = {
    [KPROF_Q_INST] = {"inst", 1, {"sm__inst_executed.sum", "smsp__inst_executed.sum"}},
    [KPROF_Q_GLOBAL_LD] = {"global_ld", 0, {"smsp__inst_executed_op_global_ld.sum",
                                            "smsp__sass_inst_executed_op_global_ld.sum"}},
    [KPROF_Q_GLOBAL_ST] = {"global_st", 0, {"smsp__inst_executed_op_global_st.sum",
                                            "smsp__sass_inst_executed_op_global_st.sum"}},
    [KPROF_Q_GLOBAL_RED] = {"global_red", 0, {"smsp__inst_executed_op_global_red.sum",
                                              "smsp__sass_inst_executed_op_global_red.sum"}},
    [KPROF_Q_GLOBAL_ATOM] = {"global_atom", 0, {"smsp__inst_executed_op_global_atom.sum",
                                                "smsp__sass_inst_executed_op_global_atom.sum"}},
    [KPROF_Q_LOCAL_LD] = {"local_ld", 0, {"smsp__inst_executed_op_local_ld.sum",
                                          "smsp__sass_inst_executed_op_local_ld.sum"}},
    [KPROF_Q_LOCAL_ST] = {"local_st", 0, {"smsp__inst_executed_op_local_st.sum",
                                          "smsp__sass_inst_executed_op_local_st.sum"}},
    [KPROF_Q_REQUESTS_LD] = {"requests_ld", 0,
                             {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"}},
    [KPROF_Q_REQUESTS_ST] = {"requests_st", 0,
                             {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"}},
    [KPROF_Q_SECTORS_LD] = {"sectors_ld", 0, {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"}},
    [KPROF_Q_SECTORS_ST] = {"sectors_st", 0, {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"}},
    /* sectors from L1 that missed L2: the DRAM-reaching share of the model's Rm */
    [KPROF_Q_L2_MISS_SECTORS] = {"l2_miss_sectors", 0, {"lts__t_sectors_srcunit_tex_lookup_miss.sum",
                                                        "lts__t_sectors_lookup_miss.sum"}},
    [KPROF_Q_DRAM_READ] = {"dram_read", 0, {"dram__bytes_read.sum"}},
    [KPROF_Q_DRAM_WRITE] = {"dram_write", 0, {"dram__bytes_write.sum"}},
    [KPROF_Q_CYCLES] = {"cycles", 1, {"sm__cycles_elapsed.avg", "sm__cycles_elapsed.max"}},
    [KPROF_Q_DURATION] = {"duration", 1, {"gpu__time_duration.sum"}},
};

const char *kprof_quantity_name(kprof_quantity q)
{
    return (unsigned)q < KPROF_Q_COUNT ? rows[q].name : NULL;
}

const char *const *kprof_quantity_candidates(kprof_quantity q)
{
    return (unsigned)q < KPROF_Q_COUNT ? rows[q].candidates : NULL;
}

static int fail(char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int kprof_choose_metrics(kprof_supported_fn supported, void *ctx, kprof_metric_choice *out,
                         char *msg, size_t msglen)
{
    if (!supported || !out)
        return fail(msg, msglen, "NULL argument");
    *out = (kprof_metric_choice){0};
    for (unsigned q = 0; q < KPROF_Q_COUNT; q++) {
        for (const char *const *c = rows[q].candidates; *c && !out->name[q]; c++)
            if (supported(*c, ctx))
                out->name[q] = *c;
        if (out->name[q])
            out->chosen++;
        else if (rows[q].required)
            return fail(msg, msglen, "no supported metric for %s (tried %s)", rows[q].name,
                        rows[q].candidates[0]);
    }
    return 0;
}

/* snprintf into buf at *used, keeping *used the length needed even past len. */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*used < len ? buf + *used : NULL, *used < len ? len - *used : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n;
}

size_t kprof_describe_choice(const kprof_metric_choice *c, char *buf, size_t len)
{
    size_t used = 0;
    if (buf && len)
        buf[0] = '\0';
    if (!c)
        return 0;
    for (unsigned q = 0; q < KPROF_Q_COUNT; q++)
        if (c->name[q])
            append(buf, len, &used, "%s%s=%s", used ? " " : "", rows[q].name, c->name[q]);
    if (c->chosen < KPROF_Q_COUNT) {
        append(buf, len, &used, "%smissing:", used ? " " : "");
        for (unsigned q = 0; q < KPROF_Q_COUNT; q++)
            if (!c->name[q])
                append(buf, len, &used, " %s", rows[q].name);
    }
    return used;
}
