/* Per-GPU calibration file: parse, format, file name, load (see calibration.h). */
#include "calibration.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 512

typedef enum { K_NAME, K_REAL, K_UINT, K_U64 } key_kind;

typedef struct key {
    const char *name;
    key_kind kind;
    size_t offset;
    double min, max;        /* K_REAL: (min, max]; integers: [min, max] */
    int required;
} key;

static const key keys[] = {
    {"device", K_NAME, offsetof(kcuda_calibration, device), 0, 0, 1},
    {"dram_latency_cycles", K_REAL, offsetof(kcuda_calibration, l0_cycles), 0, 1e6, 1},
    {"a0", K_REAL, offsetof(kcuda_calibration, a0), 0, 1, 1},
    {"sms", K_UINT, offsetof(kcuda_calibration, sms), 1, 100000, 0},
    {"clock_mhz", K_REAL, offsetof(kcuda_calibration, clock_mhz), 0, 1e5, 0},
    {"l2_hit_latency_cycles", K_REAL, offsetof(kcuda_calibration, l2_latency_cycles), 0, 1e6, 0},
    {"read_bandwidth_gbs", K_REAL, offsetof(kcuda_calibration, read_bandwidth_gbs), 0, 1e6, 0},
    {"peak_bandwidth_gbs", K_REAL, offsetof(kcuda_calibration, peak_bandwidth_gbs), 0, 1e6, 0},
    {"slice_overhead_ns", K_U64, offsetof(kcuda_calibration, slice_overhead_ns), 0, 1e9, 0},
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const key *find_key(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(keys[i].name, name))
            return &keys[i];
    return NULL;
}

static int parse_number(const char *v, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(v, &end);
    return *v && !*end && !errno && isfinite(*out);
}

static int store_name(const char *v, kcuda_calibration *c)
{
    size_t n = strlen(v);
    if (!n || n >= sizeof(c->device))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isprint((unsigned char)v[i]))
            return 0;
    memcpy(c->device, v, n + 1);
    return 1;
}

/* Stores the value of k; 0 when it is malformed or out of range. */
static int store(const key *k, const char *v, kcuda_calibration *c)
{
    if (k->kind == K_NAME)
        return store_name(v, c);
    double d;
    if (!parse_number(v, &d))
        return 0;
    char *field = (char *)c + k->offset;
    if (k->kind == K_REAL) {
        if (!(d > k->min && d <= k->max))
            return 0;
        memcpy(field, &d, sizeof(d));
        return 1;
    }
    if (d != floor(d) || d < k->min || d > k->max)
        return 0;
    if (k->kind == K_UINT) {
        unsigned u = (unsigned)d;
        memcpy(field, &u, sizeof(u));
    } else {
        uint64_t u = (uint64_t)d;
        memcpy(field, &u, sizeof(u));
    }
    return 1;
}

/* Copies the line [b, e) into buf without surrounding blanks; 0 when too long. */
static int take_line(const char *b, const char *e, char *buf)
{
    while (b < e && isspace((unsigned char)*b))
        b++;
    while (e > b && isspace((unsigned char)e[-1]))
        e--;
    if ((size_t)(e - b) >= LINE_MAX_BYTES)
        return 0;
    memcpy(buf, b, (size_t)(e - b));
    buf[e - b] = '\0';
    return 1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int parse_line(char *line, unsigned lineno, kcuda_calibration *c, unsigned *seen,
                      kbackend_error *err)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return kbackend_fail(err, KBACKEND_EINVAL, "line %u: not key=value", lineno);
    *eq = '\0';
    const char *name = trim(line), *value = trim(eq + 1);
    const key *k = find_key(name);
    if (!k)
        return 0;   /* a newer probe's figure */
    unsigned bit = 1u << (k - keys);
    if (*seen & bit)
        return kbackend_fail(err, KBACKEND_EINVAL, "line %u: %s given twice", lineno, name);
    *seen |= bit;
    if (!store(k, value, c))
        return kbackend_fail(err, KBACKEND_EINVAL, "line %u: bad value for %s: '%.60s'", lineno, name,
                          value);
    return 0;
}

int kcuda_calibration_parse(const char *text, size_t len, kcuda_calibration *out,
                            kbackend_error *err)
{
    if (!out || (!text && len))
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if (len > KCUDA_CALIBRATION_MAX_BYTES)
        return kbackend_fail(err, KBACKEND_EINVAL, "calibration of %zu bytes (limit %d)", len,
                          KCUDA_CALIBRATION_MAX_BYTES);
    kcuda_calibration c = {0};
    unsigned seen = 0, lineno = 0;
    char line[LINE_MAX_BYTES];
    for (const char *s = text, *end = text + len; s < end;) {
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (!e)
            e = end;
        lineno++;
        if (memchr(s, '\0', (size_t)(e - s)))
            return kbackend_fail(err, KBACKEND_EINVAL, "line %u: NUL byte", lineno);
        if (!take_line(s, e, line))
            return kbackend_fail(err, KBACKEND_EINVAL, "line %u: longer than %d bytes", lineno,
                              LINE_MAX_BYTES - 1);
        int rc = line[0] && line[0] != '#' ? parse_line(line, lineno, &c, &seen, err) : 0;
        if (rc)
            return rc;
        s = e + 1;
    }
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].required && !(seen & (1u << i)))
            return kbackend_fail(err, KBACKEND_EINVAL, "no %s", keys[i].name);
    *out = c;
    return 0;
}

int kcuda_calibration_format(const kcuda_calibration *c, char *buf, size_t buflen)
{
    if (!c)
        return -1;
    char tmp[1024];
    /* %.6g: readable, and never rounds a valid figure out of its range */
    int n = snprintf(tmp, sizeof(tmp), "device=%s\ndram_latency_cycles=%.6g\na0=%.6g\n",
                     c->device, c->l0_cycles, c->a0);
    if (c->sms)
        n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "sms=%u\n", c->sms);
    const struct { const char *name; double v; } opt[] = {
        {"clock_mhz", c->clock_mhz}, {"l2_hit_latency_cycles", c->l2_latency_cycles},
        {"read_bandwidth_gbs", c->read_bandwidth_gbs},
        {"peak_bandwidth_gbs", c->peak_bandwidth_gbs},
    };
    for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
        if (opt[i].v > 0)
            n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%s=%.6g\n", opt[i].name, opt[i].v);
    if (c->slice_overhead_ns)
        n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "slice_overhead_ns=%llu\n",
                      (unsigned long long)c->slice_overhead_ns);
    if (buf && buflen)
        snprintf(buf, buflen, "%s", tmp);
    return n;
}

int kcuda_calibration_file_name(const char *device, char *buf, size_t buflen,
                                kbackend_error *err)
{
    static const char suffix[] = ".calib";
    if (!device || !buf)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    size_t n = 0;
    int gap = 0;
    for (const char *p = device; *p; p++) {
        if (!isalnum((unsigned char)*p)) {
            gap = n > 0;
            continue;
        }
        if (n + (gap ? 2 : 1) + sizeof(suffix) > buflen)
            return kbackend_fail(err, KBACKEND_EINVAL, "device name too long for a file name");
        if (gap)
            buf[n++] = '_';
        gap = 0;
        buf[n++] = *p;
    }
    if (!n)
        return kbackend_fail(err, KBACKEND_EINVAL, "device name '%.60s' has no letter or digit",
                          device);
    memcpy(buf + n, suffix, sizeof(suffix));
    return 0;
}

static int read_small_file(const char *path, char **text, size_t *len, kbackend_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? kbackend_fail(err, KBACKEND_ENOTFOUND, "no calibration file %s", path)
                               : kbackend_fail(err, KBACKEND_EINVAL, "cannot open %s: %s", path,
                                            strerror(errno));
    char *buf = malloc(KCUDA_CALIBRATION_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, KCUDA_CALIBRATION_MAX_BYTES + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    if (bad || n > KCUDA_CALIBRATION_MAX_BYTES) {
        free(buf);
        return kbackend_fail(err, KBACKEND_EINVAL, "%s: %s", path,
                          bad ? "read error" : "larger than 64 KiB");
    }
    *text = buf;
    *len = n;
    return 0;
}

int kcuda_calibration_load(const char *dir, const char *device, kcuda_calibration *out,
                           kbackend_error *err)
{
    if (!dir || !device || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    char name[128], path[4096];
    int rc = kcuda_calibration_file_name(device, name, sizeof(name), err);
    if (rc)
        return rc;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
        return kbackend_fail(err, KBACKEND_EINVAL, "calibration directory path too long");
    char *text = NULL;
    size_t len = 0;
    if ((rc = read_small_file(path, &text, &len, err)))
        return rc;
    kcuda_calibration c;
    kbackend_error pe = {0};
    rc = kcuda_calibration_parse(text, len, &c, &pe);
    free(text);
    if (rc)
        return kbackend_fail(err, rc, "%.3800s: %s", path, pe.msg);
    if (strcmp(c.device, device))
        return kbackend_fail(err, KBACKEND_EINVAL, "%s is for '%s', not '%s'", name, c.device, device);
    *out = c;
    return 0;
}
