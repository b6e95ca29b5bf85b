/* Helpers shared by the files of libkernelet-proto (not installed). */
#ifndef KPROTO_INTERNAL_H
#define KPROTO_INTERNAL_H

#include <stddef.h>

#include "kernelet/protocol.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libkernelet-proto maps wire structures directly: little-endian hosts only"
#endif

/* Formats a reason into err (when errlen > 0) and returns code. */
int kproto_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks that a fixed-size field block of n bytes is all zero. */
int kproto_all_zero(const void *p, size_t n);

#endif
