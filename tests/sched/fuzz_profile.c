/*
 * libFuzzer target: the profile data-file parser on arbitrary bytes. Whatever parses must
 * print back (ksched_profile_format) into text that parses to the same records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *reprint(const ksched_profile_cache *c, size_t *len)
{
    size_t n = ksched_profile_cache_count(c), cap = n * 600 + 1, used = 0;
    char *text = malloc(cap);
    if (!text)
        abort();
    for (size_t i = 0; i < n; i++) {
        const char *entry;
        uint64_t hash;
        const kbackend_profile *p = ksched_profile_cache_at(c, i, &entry, &hash);
        int w = ksched_profile_format(hash, entry, p, text + used, cap - used);
        if (w < 0 || (size_t)w >= cap - used)
            abort();
        used += (size_t)w;
    }
    *len = used;
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ksched_profile_cache *a, *b;
    if (ksched_profile_cache_new(&a, NULL) || ksched_profile_cache_new(&b, NULL))
        abort();
    ksched_err err;
    if (!ksched_profile_parse(a, (const char *)data, size, &err)) {
        size_t len;
        char *text = reprint(a, &len);
        if (ksched_profile_parse(b, text, len, &err) ||
            ksched_profile_cache_count(a) != ksched_profile_cache_count(b))
            abort();
        free(text);
    } else if (!memchr(err.msg, 0, sizeof(err.msg)) || !err.msg[0]) {
        abort();        /* a failure always says why */
    }
    ksched_profile_cache_free(a);
    ksched_profile_cache_free(b);
    return 0;
}
