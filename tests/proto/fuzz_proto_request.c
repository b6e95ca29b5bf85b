/* libFuzzer target: the daemon's request decoder on arbitrary bytes (a header and its
 * payload), including every record of a batch. Anything may be refused; nothing may
 * crash or read outside the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kernelet_req_hdr h;
    struct kproto_request req;
    struct kproto_record rec;
    struct kproto_batch_iter it;
    uint8_t *copy;
    char err[256];

    if (size < KERNELET_HDR_SIZE || size > KERNELET_MAX_REQUEST)
        return 0;
    if (kproto_hdr_get(data, true, &h, err, sizeof err) != 0)
        return 0;
    if (h.length != size - KERNELET_HDR_SIZE)
        return 0;
    /* An exact-size heap copy so that ASan sees any read past the payload. */
    copy = malloc(h.length ? h.length : 1);
    if (!copy)
        return 0;
    memcpy(copy, data + KERNELET_HDR_SIZE, h.length);
    if (kproto_request_decode(&h, copy, &req, err, sizeof err) == 0 &&
        h.opcode == KERNELET_OP_LAUNCH_BATCH) {
        kproto_batch_begin(&it, &req);
        while (kproto_batch_next(&it, &rec, err, sizeof err) == 1) {
            uint64_t a, b;
            if (rec.op == KERNELET_REC_COPY)
                kproto_copy_spans(&rec.u.copy.rec, &a, &b, err, sizeof err);
        }
    }
    (void)kproto_response_check(h.opcode, copy, h.length, err, sizeof err);
    free(copy);
    return 0;
}
