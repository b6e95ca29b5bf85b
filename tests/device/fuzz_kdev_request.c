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
    if (n && n != sizeof(struct kernelet_req_hdr) + kdev_le32(resp + 4))
        abort();
    return 0;
}
