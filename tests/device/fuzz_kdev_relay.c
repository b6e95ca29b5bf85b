/*
 * libFuzzer target: kdev_relay_rewrite on arbitrary guest payloads. The first byte picks
 * the opcode, the next eight the chain's h2d and d2h bulk sizes; every range handed to the
 * map must lie inside the bulk data it names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kdev_relay.h"
#include "kdev_request.h"
#include "kernelet/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct limits {
    uint32_t h2d, d2h;
};

static int checked_map(void *opaque, bool d2h, uint64_t off, uint64_t len, uint32_t *region,
                       uint64_t *offset)
{
    const struct limits *l = opaque;
    uint64_t limit = d2h ? l->d2h : l->h2d;

    if (off > limit || len > limit - off)
        abort();
    *region = 1;
    *offset = off;
    return (off & 1) ? -1 : 0; /* exercise the fall-back answer too */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint16_t ops[] = { KERNELET_OP_LAUNCH_BATCH, KERNELET_OP_MODULE_LOAD,
                                    KERNELET_OP_MEM_ALLOC };
    struct limits l;
    uint8_t *copy;
    char err[160];
    bool uses;

    if (size < 9 || size - 9 > KERNELET_MAX_PAYLOAD)
        return 0;
    l.h2d = kdev_le32(data + 1) % (KERNELET_MAX_BULK + 1);
    l.d2h = kdev_le32(data + 5) % (KERNELET_MAX_BULK + 1);
    copy = malloc(size - 9 + 1);
    memcpy(copy, data + 9, size - 9);
    kdev_relay_rewrite(ops[data[0] % 3], copy, (uint32_t)(size - 9), l.h2d, l.d2h,
                       checked_map, &l, &uses, err, sizeof(err));
    free(copy);
    return 0;
}
