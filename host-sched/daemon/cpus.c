/* kerneletd --cpus. On the H100's host (a VM of 16 vCPUs) a daemon free to run on every
 * CPU answered a waited-for launch in 55-67 us in about half the runs and 29-38 us in the
 * rest; confined to 8 CPUs it gave 29-38 us in every run (docs/perf/transport.md). */
#define _GNU_SOURCE
#include "cpus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One number of a list: digits only, below CPU_SETSIZE; *s moves past it. */
static int cpu_number(const char **s, unsigned *out)
{
    char *end;
    if (**s < '0' || **s > '9')
        return -1;
    errno = 0;
    unsigned long v = strtoul(*s, &end, 10);
    if (errno || v >= CPU_SETSIZE)
        return -1;
    *out = (unsigned)v;
    *s = end;
    return 0;
}

int kd_cpus_parse(const char *list, cpu_set_t *set, char *err, size_t errlen)
{
    const char *s = list;
    CPU_ZERO(set);
    while (s && *s) {
        unsigned lo, hi;
        if (cpu_number(&s, &lo) != 0)
            goto bad;
        hi = lo;
        if (*s == '-') {
            s++;
            if (cpu_number(&s, &hi) != 0 || hi < lo)
                goto bad;
        }
        for (unsigned c = lo; c <= hi; c++)
            CPU_SET(c, set);
        if (*s == ',' && s[1])
            s++;
        else if (*s)
            goto bad;
    }
    if (CPU_COUNT(set) > 0)
        return 0;
bad:
    snprintf(err, errlen, "--cpus '%s': want a list such as 0-7 or 0,2,4-6 (CPUs below %d)",
             list ? list : "", CPU_SETSIZE);
    return -1;
}

int kd_cpus_apply(const cpu_set_t *set, char *err, size_t errlen)
{
    if (sched_setaffinity(0, sizeof(*set), set) == 0)
        return 0;
    snprintf(err, errlen, "--cpus: %s (the CPUs must exist and be allowed to this process)",
             strerror(errno));
    return -1;
}
