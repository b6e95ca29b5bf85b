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

#endif
