#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_proto_request: one well-formed request of each kind
(little-endian wire layouts of include/kernelet/protocol.h). Run from this folder:
    python3 make_corpus.py corpus
"""
import os
import struct
import sys


def msg(op, payload, rid=1, context=0):
    return struct.pack("<HHIQII", op, 0, len(payload), rid, 0, context) + payload


def pad8(b):
    return b + b"\0" * (-len(b) % 8)


def rec(op, body, stream=0):
    r = pad8(body)
    return struct.pack("<HHIQ", op, 0, 16 + len(r), stream) + r


def batch(records, flags=0):
    return struct.pack("<II", len(records), flags) + b"".join(records)


launch = rec(1, struct.pack("<Q3I3III", 7, 4, 1, 1, 128, 1, 1, 0, 12) + bytes(range(12)), 3)
copy_shm = rec(2, struct.pack("<II6Q", 1, 2, 0x1000, 0, 256, 1, 256, 256), 3)
copy_inline = rec(2, struct.pack("<II6Q", 1, 0xFFFFFFFF, 0x40, 0, 5, 2, 8, 5) + b"abcdefghij")
copy_2d = rec(2, struct.pack("<II6Q", 3, 0, 0x2000, 0x1000, 64, 4, 128, 64))
memset_rec = rec(3, struct.pack("<4QII", 0x1000, 64, 16, 2, 0xABCD, 2))
event_rec = rec(4, struct.pack("<Q", 5), 3)
wait_rec = rec(5, struct.pack("<Q", 5), 0)
launch_ex = rec(6, struct.pack("<Q3I3III", 7, 4, 2, 1, 128, 1, 1, 0, 8) + struct.pack("<4I", 2, 2, 1, 1)
                + bytes(range(8)), 3)
G = 2 << 20

seeds = {
    "hello": msg(0x0001, struct.pack("<II", 1, 0)),
    "hello_tenant": msg(0x0001, struct.pack("<II", 1, 0) + struct.pack("<II", 0, 0)
                        + b"bench-tea".ljust(64, b"\0")),
    "shm_attach": msg(0x0018, struct.pack("<QII", 1 << 20, 0, 0)),
    "device_get": msg(0x0020, struct.pack("<II", 0, 0)),
    "mem_alloc": msg(0x0101, struct.pack("<QII", 4096, 0, 0)),
    "mem_free": msg(0x0102, struct.pack("<Q", 0x7F0000000000)),
    "module_load_inline": msg(0x0201, struct.pack("<IIQQ", 2, 0xFFFFFFFF, 0, 10) + b".version 7"),
    "module_load_shm": msg(0x0201, struct.pack("<IIQQ", 1, 1, 4096, 65536)),
    "function_get": msg(0x0203, struct.pack("<QII", 9, 5, 0) + b"saxpy"),
    "global_get": msg(0x0204, struct.pack("<QII", 9, 8, 0) + b"launches"),
    "batch": msg(0x0301, batch([launch, copy_shm, copy_inline, copy_2d, memset_rec,
                                event_rec, wait_rec])),
    "batch_complete": msg(0x0301, batch([launch], 1)),
    "batch_launch_ex": msg(0x0301, batch([launch_ex, launch])),
    "shm_map_device": msg(0x001a, struct.pack("<IIQ", 1, 0, 0x7F0000000000)),
    "vmm_reserve": msg(0x0110, struct.pack("<4Q", 0, 4 * G, 0, G)),
    "vmm_free": msg(0x0111, struct.pack("<4Q", 0x7F0000000000, 0, 0, 0)),
    "vmm_create": msg(0x0112, struct.pack("<4Q", 0, G, 0, 0)),
    "vmm_release": msg(0x0113, struct.pack("<4Q", 0, 0, 0, 1)),
    "vmm_map": msg(0x0114, struct.pack("<4Q", 0x7F0000000000, G, 0, 1)),
    "vmm_unmap": msg(0x0115, struct.pack("<4Q", 0x7F0000000000, G, 0, 0)),
    # TENSOR_MAP_ENCODE: a tiled 2-D map (kind, type, rank, interleave, swizzle, l2, oob,
    # wide mode; address; dims; strides; box; element strides; corners; channels, pixels;
    # map)
    "tensor_map": msg(0x0120, struct.pack("<8IQ5Q4Q5I5I3i3iII", 1, 7, 2, 0, 0, 0, 0, 0,
                                          0x7F0000000000, 64, 64, 0, 0, 0, 256, 0, 0, 0,
                                          32, 32, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0, 0) + bytes(128)),
    "stream_create": msg(0x0310, struct.pack("<Ii", 1, -1)),
    "stream_sync": msg(0x0312, struct.pack("<Q", 0)),
    "event_create": msg(0x0320, struct.pack("<II", 1, 0)),
    "event_elapsed": msg(0x0324, struct.pack("<QQ", 1, 2)),
    "ctx_sync": msg(0x0330, b""),
    "context_close": msg(0x0010, b"", context=42),
    "mem_alloc_context": msg(0x0101, struct.pack("<QII", 4096, 0, 0), context=42),
    "admin_status": msg(0x0401, struct.pack("<II", 0, 0)),
    "admin_set": msg(0x0402, struct.pack("<QIIIIQII", 1, 0x1F, 200, 3, 64, 1 << 30, 1, 0)),
}

out = sys.argv[1] if len(sys.argv) > 1 else "corpus"
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
