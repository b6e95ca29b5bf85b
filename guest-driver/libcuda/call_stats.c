/* Where a program's time goes in requests to kerneletd: with KERNELET_STATS=1 in its
 * environment, the library counts each synchronous request by opcode (calls, message bytes
 * sent (bulk data travels in shared memory, not counted),
 * time waited for the answer) and prints the table on stderr when the program ends, with
 * the time since the library started. An operator or tenant asking why a program starts
 * slowly through kerneletd reads there which requests it waited for. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcuda_internal.h"

struct op_tally {
    uint64_t calls, bytes, ns, max_ns;
};

static struct {
    pthread_mutex_t lock;
    pthread_once_t once;
    bool on;
    uint64_t start_ns;
    struct op_tally *ops;       /* by row of kproto_opcodes */
} stats = {.lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};

uint64_t kcu_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void print_stats(void)
{
    double total_ms = (double)(kcu_now_ns() - stats.start_ns) / 1e6, waited = 0;

    pthread_mutex_lock(&stats.lock);
    fprintf(stderr, "[kernelet libcuda] requests to kerneletd (KERNELET_STATS):\n"
            "  %-16s %10s %12s %12s %10s\n", "request", "calls", "sent KiB", "waited ms",
            "max ms");
    for (size_t i = 0; i < kproto_opcode_count; i++) {
        const struct op_tally *t = &stats.ops[i];
        if (!t->calls)
            continue;
        waited += (double)t->ns / 1e6;
        fprintf(stderr, "  %-16s %10llu %12.1f %12.1f %10.2f\n", kproto_opcodes[i].name,
                (unsigned long long)t->calls, (double)t->bytes / 1024.0,
                (double)t->ns / 1e6, (double)t->max_ns / 1e6);
    }
    fprintf(stderr, "  waited %.1f ms in all, of %.1f ms since the library started\n", waited,
            total_ms);
    pthread_mutex_unlock(&stats.lock);
}

static void start(void)
{
    const char *v = getenv("KERNELET_STATS");

    stats.start_ns = kcu_now_ns();
    if (!v || !*v || strcmp(v, "0") == 0)
        return;
    if (!(stats.ops = calloc(kproto_opcode_count, sizeof(*stats.ops))))
        return;
    stats.on = true;
    atexit(print_stats);
}

/* From the library's load: the time before a program's first request counts too. */
__attribute__((constructor)) static void stats_at_load(void)
{
    pthread_once(&stats.once, start);
}

bool kcu_stats_on(void)
{
    pthread_once(&stats.once, start);
    return stats.on;
}

void kcu_stats_note(uint16_t opcode, size_t bytes, uint64_t ns)
{
    const struct kproto_opcode_row *row = kproto_opcode_find(opcode);

    if (!kcu_stats_on() || !row)
        return;
    pthread_mutex_lock(&stats.lock);
    struct op_tally *t = &stats.ops[row - kproto_opcodes];
    t->calls++;
    t->bytes += bytes;
    t->ns += ns;
    if (ns > t->max_ns)
        t->max_ns = ns;
    pthread_mutex_unlock(&stats.lock);
}
