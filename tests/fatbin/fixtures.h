/* Shared helpers of the fatbin tests: the nvcc-built inputs named by the environment
 * (tests/fatbin/meson.build), loading, entry lists and PTX text comparison. */
#ifndef KFB_TEST_FIXTURES_H
#define KFB_TEST_FIXTURES_H

#include <glib.h>

#include "kernelet/fatbin.h"

/* The path of input name (environment KFB_<name>); fails the test when it is not set. */
const char *fx_path(const char *name);

/* The expected entry list of input name (KFB_<name>_SPEC), e.g. "ELF75 PTX75". */
const char *fx_spec(const char *name);

/* The whole file at path (g_free it). */
guint8 *fx_load(const char *path, gsize *size);

/* Opens the input called name and asserts success. */
kfatbin *fx_open(const char *name);

/* The entries of image `image` as a spec string, sorted: "ELF75 ELF90a PTX75" (suffix a or
 * f for arch- or family-specific entries). g_free it. */
char *fx_image_spec(const kfatbin *fb, unsigned image);

/* spec sorted into the same order as fx_image_spec gives. g_free it. */
char *fx_sorted_spec(const char *spec);

/* The entry of image `image` with that kind and arch (asserts there is one). */
unsigned fx_find(const kfatbin *fb, unsigned image, kfatbin_kind kind, unsigned arch);

/* Extracts entry i and asserts success; *size gets the payload size. */
guint8 *fx_extract(const kfatbin *fb, unsigned i, gsize *size);

/* PTX text as fatbinary stores it: comments dropped, each line trimmed and its runs of
 * blanks reduced to one space; line structure kept. g_free it. */
char *fx_ptx_normalise(const char *text);

/* A colon-separated environment list (KFB_<name>), as a NULL-terminated vector. */
char **fx_path_list(const char *name);

#endif
