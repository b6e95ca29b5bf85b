/* Progress on stderr: a bar redrawn in place on a terminal, else a line every 10%. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct bench_progress {
    int enabled, tty;
    uint64_t total;
    unsigned last_tenth;
    double last_draw;
    unsigned round, rounds;
};

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bench_progress *bench_progress_new(int enabled, uint64_t total)
{
    bench_progress *p = calloc(1, sizeof(*p));
    if (p) {
        p->enabled = enabled;
        p->tty = isatty(STDERR_FILENO);
        p->total = total ? total : 1;
    }
    return p;
}

void bench_progress_step(bench_progress *p, uint64_t done, const char *label)
{
    if (!p || !p->enabled)
        return;
    double frac = (double)done / (double)p->total;
    if (frac > 1)
        frac = 1;
    char text[80];
    if (p->rounds > 1)
        snprintf(text, sizeof(text), "%s r%u/%u", label, p->round + 1, p->rounds);
    else
        snprintf(text, sizeof(text), "%s", label);
    if (p->tty) {
        double now = wall_s();
        if (now - p->last_draw < 0.1 && done < p->total)
            return;
        p->last_draw = now;
        char bar[41];
        int fill = (int)(frac * 40);
        for (int i = 0; i < 40; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[40] = 0;
        fprintf(stderr, "\r[%s] %5.1f%% %-24s", bar, frac * 100, text);
        if (done >= p->total)
            fputc('\n', stderr);
        fflush(stderr);
        return;
    }
    unsigned tenth = (unsigned)(frac * 10);
    if (tenth > p->last_tenth || (done >= p->total && p->last_tenth < 10)) {
        p->last_tenth = tenth;
        fprintf(stderr, "progress %3.0f%% %s\n", frac * 100, text);
    }
}

void bench_progress_round(bench_progress *p, unsigned round, unsigned rounds)
{
    if (p) {
        p->round = round;
        p->rounds = rounds;
    }
}

void bench_progress_free(bench_progress *p)
{
    free(p);
}
