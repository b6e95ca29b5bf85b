/*
 * libFuzzer target: the virtio-kernelet request decoder on arbitrary guest bytes.
 * The first two input bytes choose the queue and the response capacity, the rest is the
 * request; the decoder must frame every answer inside the capacity it was given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kdev_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t fuzz_read(void *opaque, size_t off, void *buf, size_t len)
{
    memcpy(buf, (const uint8_t *)opaque + off, len);
    return len;
}

static size_t fuzz_write(void *opaque, size_t off, const void *buf, size_t len)
{
    (void)opaque, (void)off, (void)buf;
    return len;  /* deciding a hold never writes */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t resp[512];
    struct kdev_state st;

    if (size < 2)
        return 0;
    kdev_state_init(&st);
    unsigned vq = data[0] % 3;
    size_t cap = (size_t)data[1] * 2;  /* 0..510: below, at and above every answer size */
    size_t n = kdev_handle(&st, vq, data + 2, size - 2, resp, cap);

    if (n > cap || (cap >= sizeof(struct kernelet_req_hdr) && n < sizeof(struct kernelet_req_hdr)))
        abort();
    /* Used length = header + payload, except for an echo that wrote device-to-host bulk
     * bytes: then it is the response part plus those bytes. */
    if (n && n != sizeof(struct kernelet_req_hdr) + kdev_le32(resp + 4) &&
        (kdev_le16(resp) != KERNELET_OP_DIAG_ECHO_BULK || kdev_le32(resp + 16) != 0 ||
         n < sizeof(struct kernelet_req_hdr) + kdev_le32(resp + 4)))
        abort();
    /* The hold decision reads the same chain and must stay inside it too. */
    struct kdev_chain c = { size - 2, cap, fuzz_read, fuzz_write, (void *)(data + 2) };
    if (kdev_hold_ms(vq, &c) > KERNELET_DIAG_MAX_DELAY_MS)
        abort();
    return 0;
}
