/* kernelet-ctl: the operator's view of kerneletd, as handy as nvidia-smi.
 *   kernelet-ctl [--socket PATH] [--json] [--watch [SECONDS]] [status]
 *   kernelet-ctl [--socket PATH] metrics [--listen HOST:PORT]
 *   kernelet-ctl [--socket PATH] set TENANT key=value...   (weight, priority, quota,
 *                                                           max-inflight, slicing=on|off,
 *                                                           time-limit=SECONDS)
 * It talks the administration part of the protocol (docs/PROTOCOL.md); docs/OPERATORS.md
 * describes the output. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

#define DEFAULT_SOCKET "/run/kernelet/kerneletd.sock"
/* Utilisation is GPU time over wall time between two samples; a one-shot status samples
 * over this long (nvidia-smi's own window is of this order). */
#define UTIL_WINDOW_S 0.5

#define USAGE \
    "usage: kernelet-ctl [--socket PATH] [--json] [--watch [SECONDS]] [status]\n" \
    "       kernelet-ctl [--socket PATH] metrics [--listen HOST:PORT]\n" \
    "       kernelet-ctl [--socket PATH] set TENANT key=value...\n"

struct options {
    const char *socket;
    const char *listen;
    int json;
    double watch_s;           /* 0: once */
    const char *command;
    int argc;                 /* the command's own arguments */
    char **argv;
};

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void show(const struct options *o, const struct ctl_snapshot *before,
                 const struct ctl_snapshot *now)
{
    if (o->json) {
        ctl_show_json(stdout, before, now); /* one object a line: JSON Lines under --watch */
    } else {
        if (o->watch_s > 0 && isatty(STDOUT_FILENO))
            fputs("\033[H\033[2J", stdout); /* redraw in place, like watch(1) */
        else if (o->watch_s > 0 && before)
            fputc('\n', stdout);
        ctl_show_table(stdout, before, now);
    }
    fflush(stdout);
}

/* status, once or every watch_s seconds; each frame's utilisation is measured since the
 * frame before (the first one over UTIL_WINDOW_S or the watch period, if shorter). */
static int status(int fd, const struct options *o)
{
    struct ctl_snapshot before, now;
    double first = o->watch_s > 0 && o->watch_s < UTIL_WINDOW_S ? o->watch_s : UTIL_WINDOW_S;

    if (ctl_snapshot_take(fd, &before) != 0)
        return 1;
    sleep_s(first);
    for (;;) {
        if (ctl_snapshot_take(fd, &now) != 0) {
            ctl_snapshot_free(&before);
            return 1;
        }
        show(o, &before, &now);
        ctl_snapshot_free(&before);
        before = now;
        if (o->watch_s <= 0)
            break;
        sleep_s(o->watch_s);
    }
    ctl_snapshot_free(&before);
    return 0;
}

/* metrics: printed once for node_exporter's textfile collector (kernelet_up 0 and exit
 * status 1 when the daemon does not answer, so that a stale file says so), or served. */
static int metrics(const struct options *o)
{
    struct ctl_snapshot s;
    int fd, ok;

    if (o->listen)
        return ctl_metrics_serve(o->listen, o->socket);
    fd = ctl_connect(o->socket, 0);
    ok = fd >= 0 && ctl_snapshot_take(fd, &s) == 0;
    ctl_metrics_write(stdout, ok ? &s : NULL);
    if (ok)
        ctl_snapshot_free(&s);
    if (fd >= 0)
        close(fd);
    return ok ? 0 : 1;
}

#define KEY(k) (strncmp(arg, k, (size_t)(eq - arg)) == 0 && (size_t)(eq - arg) == strlen(k))

/* time-limit=SECONDS (fractions allowed; 0: the daemon's --kernel-time-limit; at most a
 * day) into q as milliseconds; false when it is not such a time. */
static int parse_time_limit(const char *value, struct kernelet_admin_set *q)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(value, &end);
    if (!*value || *end || errno || !(v >= 0.0) || v * 1000.0 > KERNELET_TIME_LIMIT_MAX_MS)
        return 0;
    q->fields |= KERNELET_SET_TIME_LIMIT;
    /* a positive limit below a millisecond is a millisecond, not "the default" */
    q->kernel_time_limit_ms = v > 0.0 && v * 1000.0 < 1.0 ? 1u : (uint32_t)(v * 1000.0);
    return 1;
}

/* key=value into q; false when the pair is not understood. */
static int parse_setting(const char *arg, struct kernelet_admin_set *q)
{
    const char *eq = strchr(arg, '=');
    char *end;
    unsigned long long v;

    if (!eq)
        return 0;
    if (KEY("slicing")) {
        q->fields |= KERNELET_SET_SLICING;
        q->slicing = strcmp(eq + 1, "on") == 0 || strcmp(eq + 1, "1") == 0;
        return strcmp(eq + 1, "on") == 0 || strcmp(eq + 1, "off") == 0 ||
               strcmp(eq + 1, "1") == 0 || strcmp(eq + 1, "0") == 0;
    }
    if (KEY("time-limit"))
        return parse_time_limit(eq + 1, q);
    errno = 0;
    v = strtoull(eq + 1, &end, 0);
    if (errno || end == eq + 1)
        return 0;
    if (*end == 'K' || *end == 'M' || *end == 'G' || *end == 'T') {
        v <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 40;
        end++;
    }
    if (*end)
        return 0;
    if (KEY("weight")) {
        q->fields |= KERNELET_SET_WEIGHT;
        q->weight = (uint32_t)v;
    } else if (KEY("priority")) {
        q->fields |= KERNELET_SET_PRIORITY;
        q->priority = (uint32_t)v;
    } else if (KEY("quota")) {
        q->fields |= KERNELET_SET_MEM_QUOTA;
        q->mem_quota = v;
    } else if (KEY("max-inflight")) {
        q->fields |= KERNELET_SET_MAX_INFLIGHT;
        q->max_inflight = (uint32_t)v;
    } else {
        return 0;
    }
    return 1;
}
#undef KEY

static int set(int fd, int argc, char **argv)
{
    struct kernelet_admin_set q = {0};
    char *end;
    size_t len;
    int st;

    q.tenant = strtoull(argv[0], &end, 10);
    if (*end) {
        fprintf(stderr, "kernelet-ctl: bad tenant id '%s'\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (!parse_setting(argv[i], &q)) {
            fprintf(stderr, "kernelet-ctl: bad setting '%s' (weight=1..10000 priority=0..7 "
                            "quota=BYTES max-inflight=1..65536 slicing=on|off "
                            "time-limit=0..86400 seconds, 0 = the daemon's default)\n",
                    argv[i]);
            return 2;
        }
    st = ctl_call(fd, KERNELET_OP_ADMIN_SET, &q, sizeof(q), NULL, 0, &len);
    if (st != KERNELET_ST_OK) {
        fprintf(stderr, "kernelet-ctl: set refused (%s)\n",
                st == KERNELET_ST_BAD_REQUEST ? "a value is out of range"
                : st == KERNELET_ST_CUDA ? "no such tenant" : "error");
        return 1;
    }
    printf("tenant %" PRIu64 " updated\n", q.tenant);
    return 0;
}

static int is_number(const char *s)
{
    char *end;

    strtod(s, &end);
    return end != s && *end == 0;
}

/* "--watch N" as "--watch=N": getopt takes an optional argument only in the second form,
 * and nvidia-smi users type the first. */
static char **join_watch_argument(int *argc, char **argv)
{
    char **out = calloc((size_t)*argc + 1, sizeof(*out));
    int n = 0;

    if (!out)
        return argv;
    for (int i = 0; i < *argc; i++) {
        if (strcmp(argv[i], "--watch") == 0 && i + 1 < *argc && is_number(argv[i + 1])) {
            size_t len = strlen(argv[i + 1]) + sizeof("--watch=");
            if ((out[n] = malloc(len)))
                snprintf(out[n++], len, "--watch=%s", argv[++i]);
            continue;
        }
        out[n++] = argv[i];
    }
    *argc = n;
    return out;
}

static int parse(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"socket", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
        {"watch", optional_argument, NULL, 'w'},  {"listen", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    char *end;
    int ch;

    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (ch) {
        case 's': o->socket = optarg; break;
        case 'j': o->json = 1; break;
        case 'l': o->listen = optarg; break;
        case 'w':
            o->watch_s = optarg ? strtod(optarg, &end) : 2.0;
            if ((optarg && *end) || o->watch_s < 0.1 || o->watch_s > 86400)
                return -1;
            break;
        case 'h': fputs(USAGE, stdout); exit(0);
        default: return -1;
        }
    }
    o->command = optind < argc ? argv[optind++] : "status";
    o->argc = argc - optind;
    o->argv = argv + optind;
    if (strcmp(o->command, "status") == 0 || strcmp(o->command, "metrics") == 0)
        return o->argc == 0 ? 0 : -1;
    return strcmp(o->command, "set") == 0 && o->argc >= 2 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct options o = {.socket = getenv("KERNELET_SOCKET")};
    int fd, rc;

    if (!o.socket || !*o.socket)
        o.socket = DEFAULT_SOCKET;
    argv = join_watch_argument(&argc, argv);
    if (parse(argc, argv, &o) != 0) {
        fputs(USAGE, stderr);
        return 2;
    }
    if (strcmp(o.command, "metrics") == 0)
        return metrics(&o);
    if ((fd = ctl_connect(o.socket, 0)) < 0)
        return 1;
    rc = strcmp(o.command, "status") == 0 ? status(fd, &o) : set(fd, o.argc, o.argv);
    close(fd);
    return rc;
}
