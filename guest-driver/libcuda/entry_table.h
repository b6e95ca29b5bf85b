/* The generated tables of entries.c and errors.c (gen_entry_points.py). No cuda.h here:
 * the weak stubs are declared without the real prototypes. */
#ifndef KCU_ENTRY_TABLE_H
#define KCU_ENTRY_TABLE_H

typedef void (*kcu_fn)(void);

enum kcu_variant {
    KCU_PLAIN = 0,        /* legacy default stream (or no stream at all) */
    KCU_PER_THREAD = 1,   /* _ptds / _ptsz: the per-thread default stream */
};

struct kcu_entry {
    const char *name;     /* base name as cuGetProcAddress is asked for it */
    int version;          /* CUDA version that introduced this ABI */
    int variant;          /* enum kcu_variant */
    const char *symbol;   /* exported symbol */
    kcu_fn fn;
};

/* Sorted by name (strcmp), then variant, then version. */
extern const struct kcu_entry kcu_entries[];
extern const unsigned kcu_n_entries;

struct kcu_error_name {
    int value;
    const char *name;
};

/* Sorted by value. */
extern const struct kcu_error_name kcu_error_names[];
extern const unsigned kcu_n_error_names;

int kcu_unsupported(const char *name);

/* A weak definition of an entry point that does nothing but report itself unsupported;
 * the library's real implementations override it. */
#define KCU_WEAK_STUB(sym)                                                                  \
    __attribute__((weak)) int sym(void);                                                    \
    __attribute__((weak)) int sym(void) { return kcu_unsupported(#sym); }

#endif
