/* The hash behind the driver's INTEGRITY_CHECK export table (see export_tables.c).
 *
 * cudart asks the driver for a 128-bit value computed from what both sides can see: the
 * runtime's version, a timestamp, the driver version, process and thread ids, the
 * addresses of two export tables and of the hashing function, and each device's UUID and
 * PCI location. The value is HMAC-MD2 (RFC 1319, RFC 2104 with MD2's 16-byte block) under
 * a fixed key; cudart computes the same and refuses a driver whose answer differs. Values
 * must therefore match what the library reports through cuDriverGetVersion,
 * cuDeviceGetUuid and the PCI attributes. Plain C, shared with the logging interposer. */
#ifndef KCU_INTEGRITY_H
#define KCU_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

/* One device as hashed: UUID bytes, then PCI domain, bus and device (28 bytes). */
struct kcu_integrity_device {
    uint8_t uuid[16];
    int32_t pci_domain;
    int32_t pci_bus;
    int32_t pci_device;
};

struct kcu_integrity_input {
    uint32_t runtime_version;     /* the first argument cudart passes */
    uint64_t unix_seconds;        /* the second argument */
    uint32_t driver_version;      /* as cuDriverGetVersion reports it */
    uint32_t pid;
    uint32_t tid;                 /* low 32 bits of pthread_self() */
    const void *cudart_table;     /* address of the CUDART_INTERFACE table */
    const void *integrity_table;  /* address of the INTEGRITY_CHECK table */
    const void *fn_address;       /* the hashing function (slot 1 of that table) */
    unsigned n_devices;
    const struct kcu_integrity_device *devices;
};

/* MD2 of n bytes (RFC 1319): 16 bytes into out. */
void kcu_md2(const void *data, size_t n, uint8_t out[16]);

/* The answer the driver gives: out[0] and out[1] as two 64-bit words. */
void kcu_integrity_hash(const struct kcu_integrity_input *in, uint64_t out[2]);

#endif
