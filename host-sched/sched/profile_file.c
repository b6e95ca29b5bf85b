/* The profile data file: parsing (validated, all or nothing), loading and formatting. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "profile.h"

#define LINE_MAX_LEN (KSCHED_ENTRY_MAX + 1024) /* a whole profile of the longest entry */
#define FILE_MAX_BYTES (16u << 20)

typedef struct {
    char entry[KSCHED_ENTRY_MAX + 1];
    uint64_t module_hash; /* 0: the entry in any module */
    kbackend_profile p;
} parsed;

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno)
        return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > max)
        return -1;
    *out = v;
    return 0;
}

/* A module hash as the cache writes it: 1 to 16 hex digits, not 0. */
static int parse_module_hash(const char *s, uint64_t *out)
{
    size_t n = strspn(s, "0123456789abcdefABCDEF");
    if (n == 0 || n > 16 || s[n])
        return -1;
    *out = strtoull(s, NULL, 16);
    return *out ? 0 : -1;
}

/* Applies one key=value pair to rec; *seen collects bits of the required keys. */
static int apply_pair(parsed *rec, const char *key, const char *val, unsigned *seen)
{
    uint64_t u;
    if (!strcmp(key, "module"))
        return parse_module_hash(val, &rec->module_hash);
    if (!strcmp(key, "entry")) {
        if (strlen(val) > KSCHED_ENTRY_MAX || ksched_entry_validate(val, NULL))
            return -1;
        strcpy(rec->entry, val);
        *seen |= 1;
        return 0;
    }
    struct { const char *name; double *dst; unsigned bit; } reals[] = {
        {"rm", &rec->p.rm, 2}, {"insts", &rec->p.insts_per_warp, 4},
        {"pur", &rec->p.pur, 0}, {"mur", &rec->p.mur, 0}, {"unc", &rec->p.uncoalesced, 0},
    };
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
        if (!strcmp(key, reals[i].name)) {
            *seen |= reals[i].bit;
            return parse_double(val, reals[i].dst);
        }
    }
    struct { const char *name; unsigned *dst; } uints[] = {
        {"wpb", &rec->p.warps_per_block}, {"regs", &rec->p.regs_per_thread},
        {"smem", &rec->p.smem_per_block},
    };
    for (size_t i = 0; i < sizeof(uints) / sizeof(uints[0]); i++) {
        if (!strcmp(key, uints[i].name)) {
            if (parse_u64(val, UINT32_MAX, &u))
                return -1;
            *uints[i].dst = (unsigned)u;
            return 0;
        }
    }
    if (!strcmp(key, "min_slice"))
        return parse_u64(val, UINT64_MAX, &rec->p.min_slice_blocks);
    return -2;
}

/* Parses one line (NUL-terminated, no newline). Returns 1 for a record, 0 for a blank or
 * comment line, or a negative code with the reason in err. */
static int parse_line(char *line, parsed *rec, ksched_err *err)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = 0;
    char *save = NULL;
    char *tok = strtok_r(line, " \t\r", &save);
    if (!tok)
        return 0;
    if (strcmp(tok, "profile"))
        return ksched_fail(err, KSCHED_EINVAL, "unknown record '%.40s'", tok);
    memset(rec, 0, sizeof(*rec));
    unsigned seen = 0;
    while ((tok = strtok_r(NULL, " \t\r", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return ksched_fail(err, KSCHED_EINVAL, "'%.40s' is not key=value", tok);
        *eq = 0;
        int rc = apply_pair(rec, tok, eq + 1, &seen);
        if (rc == -2)
            return ksched_fail(err, KSCHED_EINVAL, "unknown key '%.40s'", tok);
        if (rc)
            return ksched_fail(err, KSCHED_EINVAL, "bad value for %.40s", tok);
    }
    if ((seen & 7) != 7)
        return ksched_fail(err, KSCHED_EINVAL, "entry, rm and insts are required");
    int rc = ksched_profile_validate(&rec->p, err);
    return rc ? rc : 1;
}

static int collect(const char *text, size_t len, parsed **out, size_t *n, ksched_err *err)
{
    size_t cap = 0, lineno = 0, pos = 0;
    *out = NULL;
    *n = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        lineno++;
        char line[LINE_MAX_LEN + 1];
        if (end - pos > LINE_MAX_LEN)
            return ksched_fail(err, KSCHED_EINVAL, "line %zu: longer than %d bytes", lineno,
                               LINE_MAX_LEN);
        memcpy(line, text + pos, end - pos);
        line[end - pos] = 0;
        if (strlen(line) != end - pos)
            return ksched_fail(err, KSCHED_EINVAL, "line %zu: NUL byte", lineno);
        pos = end + 1;
        if (grow_array(out, &cap, *n + 1, sizeof(**out)))
            return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
        int rc = parse_line(line, &(*out)[*n], err);
        if (rc < 0) {
            if (err) {
                char why[sizeof(err->msg)];
                snprintf(why, sizeof(why), "%s", err->msg);
                ksched_fail(err, rc, "line %zu: %s", lineno, why);
            }
            return rc;
        }
        *n += (size_t)rc;
    }
    return 0;
}

int ksched_profile_parse(ksched_profile_cache *c, const char *text, size_t len,
                         ksched_err *err)
{
    if (!c || (!text && len))
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    parsed *recs;
    size_t n;
    int rc = collect(text, len, &recs, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        rc = ksched_profile_cache_put(c, recs[i].module_hash, recs[i].entry, &recs[i].p, err);
    free(recs);
    return rc;
}

int ksched_profile_load_file(ksched_profile_cache *c, const char *path, ksched_err *err)
{
    if (!c || !path)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return ksched_fail(err, KSCHED_EIO, "%s: %s", path, strerror(errno));
    char *buf = malloc(FILE_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    size_t len = fread(buf, 1, FILE_MAX_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    int rc;
    if (bad)
        rc = ksched_fail(err, KSCHED_EIO, "%s: read error", path);
    else if (len > FILE_MAX_BYTES)
        rc = ksched_fail(err, KSCHED_EINVAL, "%s: larger than %u bytes", path, FILE_MAX_BYTES);
    else if ((rc = ksched_profile_parse(c, buf, len, err)) && err) {
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg);
        ksched_fail(err, rc, "%s: %s", path, why);
    }
    free(buf);
    return rc;
}

int ksched_profile_format(uint64_t module_hash, const char *entry, const kbackend_profile *p,
                          char *buf, size_t buflen)
{
    char module[32] = "";
    if (module_hash)
        snprintf(module, sizeof(module), " module=%016llx", (unsigned long long)module_hash);
    return snprintf(buf, buflen,
                    "profile entry=%s%s rm=%.6g insts=%.6g pur=%.6g mur=%.6g unc=%.6g wpb=%u "
                    "regs=%u smem=%u min_slice=%llu\n",
                    entry, module, p->rm, p->insts_per_warp, p->pur, p->mur, p->uncoalesced,
                    p->warps_per_block, p->regs_per_thread, p->smem_per_block,
                    (unsigned long long)p->min_slice_blocks);
}

static int write_records(const ksched_profile_cache *c, FILE *f)
{
    const kbackend_profile *p;
    const char *entry;
    uint64_t hash;
    char line[LINE_MAX_LEN + 1];
    for (size_t i = 0; (p = ksched_profile_cache_at(c, i, &entry, &hash)); i++) {
        int n = ksched_profile_format(hash, entry, p, line, sizeof(line));
        if (n < 0 || (size_t)n >= sizeof(line) || fputs(line, f) == EOF)
            return -1;
    }
    return 0;
}

int ksched_profile_cache_save(const ksched_profile_cache *c, const char *path, ksched_err *err)
{
    if (!c || !path)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return ksched_fail(err, KSCHED_EINVAL, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return ksched_fail(err, KSCHED_EIO, "%s: %s", tmp, strerror(errno));
    int bad = fputs("# kernel profiles learned by kerneletd (module = hash of the module's PTX)\n",
                    f) == EOF || write_records(c, f);
    bad |= fclose(f) != 0;
    /* Written aside and renamed: a crash mid-write never leaves a half file to load. */
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ksched_fail(err, KSCHED_EIO, "%s: %s", path, bad ? "write error" : strerror(e));
    }
    return 0;
}
