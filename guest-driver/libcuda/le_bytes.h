/* Little-endian integers read from byte buffers of any alignment (images, printf rings). */
#ifndef KCU_LE_BYTES_H
#define KCU_LE_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t kcu_le16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t kcu_le32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint64_t kcu_le64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

#endif
