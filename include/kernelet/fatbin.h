/* NVIDIA fat binaries (library kernelet-ptx, host-sched/ptx/).
 *
 * A fat binary holds a kernel module for several GPU architectures: entries of kind PTX
 * (text, JIT-compiled by the driver) and ELF (a cubin for one SM architecture), possibly
 * LZ4- or ZSTD-compressed. Guests hand Kernelet these images as the CUDA runtime registers
 * them; the daemon picks the entry to run (prefer PTX when the kernel will be sliced).
 *
 * A kfatbin is a read-only view of one or more fatbins found in a buffer: a single fatbin
 * image (magic 0xBA55ED50), the host stub's wrapper (magic 0x466243B1) when read inside the
 * process that holds it, or an ELF executable or shared object whose .nv_fatbin section
 * holds several fatbins one after another. The view copies what it needs (the caller's
 * buffer may go away after kfatbin_open_*). Every size field is checked against the bytes
 * actually present; malformed input gets KPTX_ECORRUPT, never a read out of bounds.
 * Errors use the codes and kptx_error of ptx.h.
 */
#ifndef KERNELET_FATBIN_H
#define KERNELET_FATBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/ptx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KFATBIN_MAGIC 0xBA55ED50u
#define KFATBIN_WRAPPER_MAGIC 0x466243B1u

/* Largest decompressed payload accepted (bytes). */
#define KFATBIN_MAX_PAYLOAD ((size_t)256 << 20)

typedef enum kfatbin_kind {
    KFATBIN_PTX = 1,
    KFATBIN_ELF = 2,
} kfatbin_kind;

typedef enum kfatbin_compression {
    KFATBIN_RAW = 0,
    KFATBIN_LZ4,
    KFATBIN_ZSTD,
} kfatbin_compression;

typedef struct kfatbin_entry {
    kfatbin_kind kind;
    unsigned arch;                  /* SM architecture times 10 + minor: 75, 90, 100 ... */
    uint64_t flags;                 /* the entry header's flags, as stored */
    kfatbin_compression compression;
    size_t stored_size;             /* payload bytes as stored */
    size_t size;                    /* payload bytes once decompressed */
    unsigned fatbin_index;          /* which fatbin of the buffer it came from */
} kfatbin_entry;

typedef struct kfatbin kfatbin;

/* Opens an in-memory image: a fatbin (or several, back to back), or an ELF file with a
 * .nv_fatbin section. size is the number of bytes available. */
int kfatbin_open(const void *data, size_t size, kfatbin **out, kptx_error *err);

/* Opens the host stub's wrapper {magic, version, pointer to fatbin(s), ...} inside this
 * process (how the CUDA runtime passes a fatbin to __cudaRegisterFatBinary). */
int kfatbin_open_wrapper(const void *wrapper, kfatbin **out, kptx_error *err);

/* Reads a file and opens it as kfatbin_open does. */
int kfatbin_open_file(const char *path, kfatbin **out, kptx_error *err);

void kfatbin_free(kfatbin *fb);

/* The size in bytes of the fatbin at p, read from its header, when only a pointer is known
 * (cuModuleLoadData); avail bounds the read (SIZE_MAX when unknown). KPTX_ECORRUPT if p
 * does not start with a fatbin header. */
int kfatbin_image_size(const void *p, size_t avail, size_t *size, kptx_error *err);

/* Number of entries, and entry i (NULL when i is out of range). */
unsigned kfatbin_count(const kfatbin *fb);
const kfatbin_entry *kfatbin_entry_at(const kfatbin *fb, unsigned i);

/* The payload of entry i, decompressed, in a malloc'd buffer with a NUL byte after the
 * *size bytes (so PTX text can be used as a string). */
int kfatbin_extract(const kfatbin *fb, unsigned i, uint8_t **data, size_t *size,
                    kptx_error *err);

/* The entry to run on an SM of architecture target_arch (e.g. 90). With prefer_ptx: the PTX
 * of the highest architecture not above the target, else a cubin that runs there (same
 * major version, minor not above the target's; the highest such). Without prefer_ptx the
 * cubin is tried first. KPTX_ENOTFOUND when nothing fits. */
int kfatbin_select(const kfatbin *fb, unsigned target_arch, bool prefer_ptx, unsigned *index,
                   kptx_error *err);

#ifdef __cplusplus
}
#endif

#endif
