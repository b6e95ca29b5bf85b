/* Device printf records (kernelet/ptx.h, "Device printf") turned into text: plain C with no
 * daemon behind it, so that malformed rings can be tested alone. Everything in a ring is
 * written by tenant kernels and therefore untrusted: every length is checked against the
 * buffer it claims to describe. */
#ifndef KCU_PRINTF_RECORDS_H
#define KCU_PRINTF_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest format text and %s string read from the device. */
#define KCU_PF_MAX_FORMAT 4096u
#define KCU_PF_MAX_STRING 4096u

/* Reads the NUL-terminated text at device address addr into buf (at most cap - 1 bytes,
 * NUL-terminated, shorter when the memory holding it ends first): false when no memory
 * of the tenant's holds addr. */
typedef bool (*kcu_pf_read_text)(void *user, uint64_t addr, bool format, char *buf,
                                 size_t cap);

/* Text produced so far (malloc'd; oom set when growing failed, the text then stops). */
struct kcu_pf_out {
    char *p;
    size_t len, cap;
    bool oom;
};

/* What one walk found. */
struct kcu_pf_walk {
    size_t consumed;        /* bytes of whole records read, from the start of the data */
    unsigned records;       /* records formatted */
    unsigned unreadable;    /* records whose format could not be read (skipped) */
    bool malformed;         /* a record's header was impossible: the walk stopped there */
};

/* Formats the records in data[0, len) (the ring's data area from a record boundary) into
 * out, in order, up to the first record not yet complete (total 0) or malformed. */
void kcu_pf_walk_records(const uint8_t *data, size_t len, kcu_pf_read_text read, void *user,
                         struct kcu_pf_out *out, struct kcu_pf_walk *res);

/* Formats fmt with the argument bytes args[0, n) as C's printf would: %d %i %u %x %X %o %c
 * %s %f %F %e %E %g %G %a %A %p with flags, width, precision ('*' included) and the length
 * modifiers h hh l ll z j t (L ignored); %s strings are read through read. A conversion
 * whose value lies past n is written as it stands in the format. */
void kcu_pf_format(const char *fmt, const uint8_t *args, size_t n, kcu_pf_read_text read,
                   void *user, struct kcu_pf_out *out);

#endif
