/* NVIDIA fat binaries (library kernelet-fatbin, host-sched/fatbin/; layout in docs/FATBIN.md).
 *
 * A fat binary holds a kernel module for several GPU architectures: entries of kind PTX
 * (text, JIT-compiled by the driver) and ELF (a cubin for one SM architecture), possibly
 * LZ4- or ZSTD-compressed. Guests hand Kernelet these images as the CUDA runtime registers
 * them; the daemon picks the entry to run (prefer PTX when the kernel will be sliced).
 *
 * A kfatbin is a read-only view of one or more fatbins ("images") found in a buffer: a
 * single fatbin image (magic 0xBA55ED50), several back to back, the host stub's wrapper
 * (magic 0x466243B1) when read inside the process that holds it, or an ELF executable, shared
 * object or host object file whose .nv_fatbin section holds several fatbins one after
 * another. The view copies what it needs (the caller's buffer may go away after
 * kfatbin_open_*). Every size field is checked against the bytes actually present;
 * malformed input gets KPTX_ECORRUPT, never a read out of bounds. Errors use the codes and
 * kptx_error of ptx.h (the library fills kptx_error itself and does not need kptx_strerror).
 * A view is immutable once opened: several threads may read one view at once.
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

/* Largest decompressed payload accepted (bytes): bigger entries get KPTX_ELIMIT. */
#define KFATBIN_MAX_PAYLOAD ((size_t)256 << 20)
/* Largest single fatbin image accepted (bytes, header included): KPTX_ELIMIT beyond. */
#define KFATBIN_MAX_IMAGE ((size_t)1 << 30)
/* Most prelinked fatbins a version-2 wrapper may list. */
#define KFATBIN_MAX_PRELINKED 65536u

/* Entry kinds as stored; other values are kept in kfatbin_entry.kind as they are. */
typedef enum kfatbin_kind {
    KFATBIN_PTX = 1,
    KFATBIN_ELF = 2,
    KFATBIN_LTOIR = 8,          /* -gencode code=lto_XX: NVVM IR in an undocumented encoding */
} kfatbin_kind;

typedef enum kfatbin_compression {
    KFATBIN_RAW = 0,
    KFATBIN_LZ4,
    KFATBIN_ZSTD,
} kfatbin_compression;

/* Bits of kfatbin_entry.flags, as observed in nvcc 13 output (docs/FATBIN.md). */
#define KFATBIN_FLAG_64BIT 0x1u
#define KFATBIN_FLAG_DEBUG 0x2u             /* nvcc -G */
#define KFATBIN_FLAG_LINUX 0x10u            /* host is Linux */
#define KFATBIN_FLAG_LZ4 0x2000u            /* payload is one LZ4 block */
#define KFATBIN_FLAG_ZSTD 0x8000u           /* payload is a ZSTD frame */
#define KFATBIN_FLAG_ARCH_SPECIFIC 0x100000u    /* sm_90a, compute_100a: that SM only */
#define KFATBIN_FLAG_FAMILY_SPECIFIC 0x200000u  /* sm_100f: same major, minor >= arch's */

typedef struct kfatbin_entry {
    kfatbin_kind kind;
    unsigned arch;                  /* SM architecture times 10 + minor: 75, 90, 100 ... */
    uint64_t flags;                 /* the entry header's flags, as stored */
    kfatbin_compression compression;
    size_t stored_size;             /* payload bytes as stored (compressed size, or the raw
                                       payload with its padding) */
    size_t size;                    /* payload bytes once decompressed (as declared) */
    unsigned fatbin_index;          /* which fatbin (image) of the view it came from */
    unsigned version_major;         /* format version of the payload; PTX: the ISA version */
    unsigned version_minor;
    bool relocatable;               /* from a version-2 wrapper's prelinked (-rdc) fatbins:
                                       needs linking, never chosen by kfatbin_select */
    const char *name;               /* identifier (source file name with -G), else "" */
    const char *options;            /* PTX only: ptxas options for its JIT ("--compile-only",
                                       " -g ..."), else "" */
} kfatbin_entry;

typedef struct kfatbin kfatbin;

/* Opens an in-memory image: a fatbin (or several, back to back, at 8-byte aligned offsets
 * with zero padding between), or a 64-bit little-endian ELF file with a .nv_fatbin
 * section. size is the number of bytes available. KPTX_ENOTFOUND for an ELF file without
 * .nv_fatbin; an empty .nv_fatbin gives a view with no images. */
int kfatbin_open(const void *data, size_t size, kfatbin **out, kptx_error *err);

/* Opens the host stub's wrapper {magic, version, pointer to fatbin, pointer} inside this
 * process (what the CUDA runtime passes to __cudaRegisterFatBinary). Version 1 (every
 * whole-program translation unit): one fatbin. Version 2 (the device-link stub of -rdc
 * programs): the linked fatbin (image 0) and, after it, the NULL-terminated array of
 * prelinked fatbins, whose entries are marked relocatable. The pointers are trusted to be
 * readable for the sizes their headers declare. */
int kfatbin_open_wrapper(const void *wrapper, kfatbin **out, kptx_error *err);

/* Reads a file and opens it as kfatbin_open does (KPTX_EIO when it cannot be read). */
int kfatbin_open_file(const char *path, kfatbin **out, kptx_error *err);

/* Frees a view; NULL is allowed. */
void kfatbin_free(kfatbin *fb);

/* The size in bytes of the fatbin at p (header included), read from its header, when only
 * a pointer is known (cuModuleLoadData); avail bounds the read (SIZE_MAX when unknown).
 * KPTX_ECORRUPT if p does not start with a fatbin header or the image is longer than
 * avail; KPTX_ELIMIT beyond KFATBIN_MAX_IMAGE. */
int kfatbin_image_size(const void *p, size_t avail, size_t *size, kptx_error *err);

/* Number of fatbins in the view, and the bytes of fatbin i as copied (NULL when i is out
 * of range): what to hand on to a driver or over the wire. */
unsigned kfatbin_image_count(const kfatbin *fb);
const uint8_t *kfatbin_image_data(const kfatbin *fb, unsigned i, size_t *size);

/* Number of entries, and entry i (NULL when i is out of range). */
unsigned kfatbin_count(const kfatbin *fb);
const kfatbin_entry *kfatbin_entry_at(const kfatbin *fb, unsigned i);

/* The payload of entry i, decompressed, in a malloc'd buffer with a NUL byte after the
 * *size bytes (so PTX text can be used as a string). For PTX, *size is the length of the
 * text (the stored payload ends in NUL padding, which is left out). KPTX_ELIMIT when the
 * entry is larger than KFATBIN_MAX_PAYLOAD, KPTX_ECORRUPT when it does not decompress to
 * exactly its declared size, KPTX_EUNSUPPORTED for kinds other than PTX and ELF. */
int kfatbin_extract(const kfatbin *fb, unsigned i, uint8_t **data, size_t *size,
                    kptx_error *err);

/* The entry to run on an SM of architecture target_arch (e.g. 90). With prefer_ptx: the PTX
 * of the highest architecture not above the target, else a cubin that runs there (same
 * major version, minor not above the target's; the highest such). Without prefer_ptx the
 * cubin is tried first. Arch-specific entries (sm_90a) fit only their own architecture,
 * family-specific PTX (compute_100f) only its major version; relocatable entries never.
 * Ties go to the lowest index. Searches every image of the view. KPTX_ENOTFOUND when
 * nothing fits. */
int kfatbin_select(const kfatbin *fb, unsigned target_arch, bool prefer_ptx, unsigned *index,
                   kptx_error *err);

/* kfatbin_select among the entries of one image (fatbin_index) only: an executable's
 * .nv_fatbin holds one image per translation unit, each a module of its own. */
int kfatbin_select_in(const kfatbin *fb, unsigned fatbin_index, unsigned target_arch,
                      bool prefer_ptx, unsigned *index, kptx_error *err);

#ifdef __cplusplus
}
#endif

#endif
