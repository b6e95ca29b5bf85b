/* Helpers shared by the PTX library's tests: parse or fail the test, print or fail. */
#ifndef PTX_TEST_UTIL_H
#define PTX_TEST_UTIL_H

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"

/* Parses len bytes of text (what names it in the failure message). */
static inline kptx_module *test_parse_n(const char *text, size_t len, const char *what)
{
    kptx_module *m = NULL;
    kptx_error err = {0};
    if (kptx_parse(text, len, &m, &err))
        g_error("%s:%u:%u: %s", what, err.line, err.column, err.message);
    return m;
}

static inline kptx_module *test_parse(const char *text)
{
    return test_parse_n(text, strlen(text), "input");
}

/* The module as text (free()), its length in *len when len is not NULL. */
static inline char *test_print(const kptx_module *m, size_t *len)
{
    char *text;
    size_t n;
    kptx_error err = {0};
    g_assert_cmpint(kptx_print(m, &text, &n, &err), ==, 0);
    g_assert_cmpuint(strlen(text), ==, n);
    if (len)
        *len = n;
    return text;
}

/* Printed text parses and prints back to itself. */
static inline void test_assert_reprints(const char *text)
{
    kptx_module *m = test_parse(text);
    char *again = test_print(m, NULL);
    g_assert_cmpstr(text, ==, again);
    free(again);
    kptx_module_free(m);
}

/* The text of function name as printed, from " name(" to its closing brace (g_free). */
static inline char *test_function_text(const kptx_module *m, const char *name)
{
    char *text = NULL;
    size_t len;
    g_assert_cmpint(kptx_print(m, &text, &len, NULL), ==, 0);
    char *head = g_strdup_printf(" %s(", name);
    const char *at = strstr(text, head);
    g_free(head);
    g_assert_nonnull(at);
    const char *end = strstr(at, "\n}\n");
    g_assert_nonnull(end);
    char *out = g_strndup(at, (size_t)(end - at));
    free(text);
    return out;
}

/* How many times what occurs in text. */
static inline unsigned test_occurrences(const char *text, const char *what)
{
    unsigned n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* The fencing verdict of entry k in text (body: for the message) is "" when why is NULL,
 * else a reason that contains why, and kptx_fence_module fences k or not accordingly;
 * the fenced module printed parses back to itself. */
static inline void test_assert_fence_verdict(const char *text, const char *body,
                                             const char *why_part)
{
    kptx_module *m = test_parse(text);
    char why[192];
    kptx_error err = {0};
    g_assert_cmpint(kptx_fence_verdict(m, "k", 0, why, sizeof why, &err), ==, 0);
    g_test_message("%s -> %s", body, why[0] ? why : "fenceable");
    if (!why_part)
        g_assert_cmpstr(why, ==, "");
    else
        g_assert_nonnull(strstr(why, why_part));
    unsigned n = 9;
    g_assert_cmpint(kptx_fence_module(m, 0, &n, &err), ==, 0);
    g_assert_cmpuint(n, ==, why_part ? 0 : 1);
    char *out = test_print(m, NULL);
    test_assert_reprints(out);
    free(out);
    kptx_module_free(m);
}

#endif
