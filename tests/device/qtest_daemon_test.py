#!/usr/bin/env python3
"""virtio-kernelet linked to a real kerneletd (--backend emu), driven through QEMU's qtest
protocol as a guest driver would (helpers from qtest_virtqueue_test.py). Checks: the GPU
the device reports is the daemon's (as the daemon tells a direct client); device memory
allocated through the device and a copy in and out with bulk data in the chain round-trip
(zero-copy from a shared memfd RAM backend, and through the staging region without one);
QMP policy appears in `kernelet-ctl status`; statistics come from the daemon; killing the
daemon fails requests with UNAVAILABLE and drops the backend flag; a restarted daemon is
reconnected. Prints TAP.

usage: qtest_daemon_test.py QEMU KERNELETD KERNELET_CTL
"""
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qtest_virtqueue_test import (HDR, QMP, QSIZE, ST, VRING_DESC_F_NEXT,  # noqa: E402
                                  VRING_DESC_F_WRITE, Device, QTest)

ST = dict(ST, BUSY=6, QUOTA=7, CUDA=8)
OP_HELLO, OP_GET_INFO, OP_MEM_ALLOC, OP_LAUNCH_BATCH = 0x0001, 0x0002, 0x0101, 0x0301
OP_SHM_DETACH, OP_CONTEXT_CLOSE = 0x0019, 0x0010
REQ_F_XFER = 1
REGION_BULK = 0xFFFFFFFE
COPY_HTOD, COPY_DTOH, REC_COPY = 1, 2, 2
PROTO = 0x00000001
TENANT = "vm-test"
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))


def post_chain(dev, q, parts):
    """parts: list of (bytes, None) readable or (None, length) writable; returns the
    addresses of the writable parts."""
    r, qt, descs, outs = dev.ring[q], dev.qt, [], []
    for data, wlen in parts:
        if data is not None:
            addr = dev.alloc(len(data))
            qt.write(addr, data)
            descs.append((addr, len(data), 0))
        else:
            addr = dev.alloc(wlen)
            qt.write(addr, b"\xee" * min(wlen, 64))
            descs.append((addr, wlen, VRING_DESC_F_WRITE))
            outs.append(addr)
    head = r["next_desc"]
    for i, (addr, length, flags) in enumerate(descs):
        idx, more = (head + i) % QSIZE, i + 1 < len(descs)
        qt.write(r["desc"] + 16 * idx, struct.pack(
            "<QIHH", addr, length, flags | (VRING_DESC_F_NEXT if more else 0),
            (idx + 1) % QSIZE if more else 0))
    r["next_desc"] = (head + len(descs)) % QSIZE
    qt.writew(r["avail"] + 4 + 2 * (r["avail_idx"] % QSIZE), head)
    r["avail_idx"] = (r["avail_idx"] + 1) & 0xFFFF
    qt.writew(r["avail"] + 2, r["avail_idx"])
    dev.kick(q)
    return outs


def wait_used(dev, q):
    """Waits for one used entry in real time (the daemon answers asynchronously)."""
    r, deadline = dev.ring[q], time.monotonic() + 20
    want = (r["used_idx"] + 1) & 0xFFFF
    while dev.qt.readw(r["used"] + 2) != want:
        if time.monotonic() > deadline:
            raise RuntimeError(f"queue {q}: no answer within 20 s")
        dev.qt.cmd("clock_step 1000000")
        time.sleep(0.002)
    slot = r["used_idx"] % QSIZE
    r["used_idx"] = want
    return struct.unpack("<II", dev.qt.read(r["used"] + 4 + 8 * slot, 8))[1]


def request(dev, q, op, payload=b"", h2d=(), d2h=(), rid=1, resp=256, context=None):
    """One request; h2d: bulk buffers (bytes), d2h: lengths; context: the guest context
    (a transfer descriptor is sent when it or bulk data is given; context 7 by default).
    Returns (status, payload, used length, [d2h bytes], request id)."""
    if h2d or d2h or context is not None:
        xfer = struct.pack("<IIII", 7 if context is None else context, resp,
                           sum(map(len, h2d)), sum(d2h))
        head = HDR.pack(op, REQ_F_XFER, len(payload), rid, 0, 0) + xfer + payload
    else:
        head = HDR.pack(op, 0, len(payload), rid, 0, 0) + payload
    outs = post_chain(dev, q, [(head, None)] + [(b, None) for b in h2d] +
                      [(None, resp)] + [(None, n) for n in d2h])
    used = wait_used(dev, q)
    answer = dev.qt.read(outs[0], resp)
    opc, _, length, got_id, status, _ = HDR.unpack_from(answer)
    bulk = [dev.qt.read(a, n) for a, n in zip(outs[1:], d2h)]
    return status, answer[HDR.size:HDR.size + min(length, resp - HDR.size)], used, bulk, got_id


def copy_record(kind, dst, src, width):
    rec = struct.pack("<HHIQIIQQQQQQ", REC_COPY, 0, 72, 0, kind, REGION_BULK, dst, src, width,
                      1, width, width)
    return struct.pack("<II", 1, 0) + rec


def daemon_gpu_name(sock):
    """The GPU name the daemon gives a direct client (independent of the device)."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    body = struct.pack("<IIII", PROTO, 0, 0, 0) + b"probe".ljust(64, b"\0")
    s.sendall(HDR.pack(OP_HELLO, 0, len(body), 1, 0, 0) + body)
    data = b""
    while len(data) < HDR.size + 104:
        data += s.recv(4096)
    s.close()
    return data[HDR.size + 40:HDR.size + 104].split(b"\0")[0].decode()


def config_flags(dev):
    return dev.qt.readl(dev.device_cfg + 4)


def wait_flag(dev, want, timeout=10):
    deadline = time.monotonic() + timeout
    while (config_flags(dev) & 1) != want and time.monotonic() < deadline:
        dev.qt.cmd("clock_step 1000000")
        time.sleep(0.05)
    return (config_flags(dev) & 1) == want


def start_daemon(kerneletd, sock):
    proc = subprocess.Popen([kerneletd, "--backend", "emu", "--socket", sock],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc


def round_trip(dev, qmp, mode, split):
    """Allocates device memory, copies bulk bytes in and back out; split: the h2d data in
    two descriptors (not contiguous in guest memory)."""
    size = 20000
    data = random.Random(size + split).randbytes(size)
    # as a guest process: every request carries its context (7, that of the copies below),
    # and a context reaches only the memory it allocated
    st, body, _, _, _ = request(dev, 0, OP_MEM_ALLOC, struct.pack("<QII", 1 << 16, 0, 0),
                                context=7)
    dptr = struct.unpack_from("<Q", body)[0] if st == ST["OK"] else None
    check(f"{mode}: MEM_ALLOC through the device", st == ST["OK"] and dptr, f"status {st}")
    if not dptr:
        return
    h2d = [data[:7000], data[7000:]] if split else [data]
    counts = lambda: [qmp.cmd("qom-get", path="/machine/peripheral/kl0", property=p)
                      for p in ("bulk-zero-copy", "bulk-staged")]
    before = counts()
    st, _, _, _, _ = request(dev, 1, OP_LAUNCH_BATCH, copy_record(COPY_HTOD, dptr, 0, size),
                             h2d=h2d)
    check(f"{mode}: copy in (h2d bulk, {len(h2d)} segment(s))", st == ST["OK"], f"status {st}")
    st, _, used, bulk, _ = request(dev, 1, OP_LAUNCH_BATCH,
                                   copy_record(COPY_DTOH, 0, dptr, size), d2h=[size])
    check(f"{mode}: copy out (d2h bulk) returns the bytes copied in",
          st == ST["OK"] and bulk[0] == data and used == 256 + size,
          f"status {st} used {used} equal {bulk[0] == data}")
    # Zero-copy needs shared RAM and each range contiguous in it: with memfd RAM the copy
    # out (one d2h buffer) is zero-copy, and so is the copy in from one buffer; a copy in
    # across two separate buffers goes through staging. Without memfd everything is staged.
    zero = 0 if mode != "memfd" else (1 if split else 2)
    after = counts()
    check(f"{mode}: {zero} of 2 chains zero-copy, the rest staged",
          [after[0] - before[0], after[1] - before[1]] == [zero, 2 - zero],
          f"{before} -> {after}")


def run(dev, qmp, ctl, sock, mode, kill_restart, kerneletd, daemon):
    flags = config_flags(dev)
    check(f"{mode}: config space: backend connected", flags & 1, hex(flags))
    st, body, _, _, _ = request(dev, 0, OP_GET_INFO)
    name = body[40:104].split(b"\0")[0].decode() if len(body) >= 104 else None
    want = daemon_gpu_name(sock)
    check(f"{mode}: GET_INFO reports the daemon's GPU", st == ST["OK"] and name == want,
          f"{name!r} vs {want!r}")
    st, body, _, _, _ = request(dev, 0, OP_HELLO, struct.pack("<II", PROTO, 0))
    check(f"{mode}: HELLO answered with the backend flag",
          st == ST["OK"] and struct.unpack_from("<I", body, 4)[0] & 1, f"status {st}")
    round_trip(dev, qmp, mode, split=False)
    round_trip(dev, qmp, mode, split=True)
    st, _, _, _, _ = request(dev, 1, OP_LAUNCH_BATCH,
                             copy_record(COPY_HTOD, 0, 100, 64), h2d=[bytes(32)])
    check(f"{mode}: bulk range beyond the chain -> BAD_REQUEST", st == ST["BAD_REQUEST"], st)
    st, _, _, _, _ = request(dev, 0, OP_SHM_DETACH, struct.pack("<II", 1, 0))
    check(f"{mode}: guest may not detach the device's regions -> BAD_OPCODE",
          st == ST["BAD_OPCODE"], st)
    bad = [
        ("payload of the wrong size", 0, OP_MEM_ALLOC, b"\x01\x02\x03", "BAD_REQUEST"),
        ("batch with a truncated record", 1, OP_LAUNCH_BATCH,
         struct.pack("<II", 1, 0) + bytes(12), "BAD_REQUEST"),
        ("copy naming a region of the device", 1, OP_LAUNCH_BATCH,
         copy_record(COPY_HTOD, 0, 0, 8).replace(struct.pack("<I", REGION_BULK),
                                                 struct.pack("<I", 1)), "BAD_REQUEST"),
        ("unknown opcode", 0, 0x0277, b"", "BAD_OPCODE"),
    ]
    for what, q, op, payload, want in bad:
        st, _, _, _, _ = request(dev, q, op, payload)
        check(f"{mode}: {what} -> {want}", st == ST[want], st)
    check(f"{mode}: the link survives bad requests", config_flags(dev) & 1)
    if not kill_restart:
        return
    path = "/machine/peripheral/kl0"
    qmp.cmd("qom-set", path=path, property="weight", value=300)
    qmp.cmd("qom-set", path=path, property="priority", value=2)
    qmp.cmd("qom-set", path=path, property="max-inflight", value=16)
    qmp.cmd("qom-set", path=path, property="slicing", value=False)
    qmp.cmd("qom-set", path=path, property="kernel-time-limit-ms", value=2500)
    guest_stats(dev)    # the device's worker sends the policy before it reads these
    out = subprocess.run([ctl, "--socket", sock, "--json"], capture_output=True,
                         text=True).stdout
    row = next((t for t in json.loads(out)["tenants"] if t["name"] == TENANT), None)
    check("QMP policy appears in kernelet-ctl status (weight, priority, max-inflight, slicing, "
          "kernel time limit)",
          row is not None and row["policy"] == {"weight": 300, "priority": 2,
                                                "max_inflight": 16, "slicing": False,
                                                "kernel_time_limit_s": 2.5}, out)
    qmp.cmd("qom-set", path=path, property="slicing", value=True)
    check("kernelet-ctl status marks the tenant as a VM", row is not None and row["kind"] == "vm",
          out)
    guest = guest_stats(dev)
    check("GET_STATS in the guest carries the daemon's counters: bytes copied, memory",
          guest is not None and guest[4] >= 4 * 20000 and guest[5] == 2 * (1 << 16),
          f"{guest}")
    # QMP reads the counters the device read last (GET_STATS just did), never waiting
    copied = qmp.cmd("qom-get", path=path, property="bytes-copied")
    mem = qmp.cmd("qom-get", path=path, property="mem-in-use")
    check("statistics over QMP: the daemon's counters as last read",
          guest is not None and (copied, mem) == guest[4:6], f"copied {copied} mem {mem}")
    qmp.cmd("qom-set", path=path, property="mem-quota", value=3 << 16)
    guest_stats(dev)    # the policy has reached the daemon once this is answered
    st, _, _, _, _ = request(dev, 0, OP_MEM_ALLOC, struct.pack("<QII", 2 << 16, 0, 0))
    hits = qmp.cmd("qom-get", path=path, property="quota-hits")
    check("mem-quota set over QMP is enforced by the daemon (QUOTA, quota-hits)",
          st == ST["QUOTA"] and hits == 1, f"status {st} hits {hits}")
    st, _, _, _, _ = request(dev, 0, OP_MEM_ALLOC, struct.pack("<QII", 1 << 16, 0, 0))
    check("an allocation within the quota still succeeds", st == ST["OK"], st)
    qmp.cmd("qom-set", path=path, property="mem-quota", value=0)
    contexts(dev)

    daemon.kill()
    daemon.wait()
    check("daemon killed: backend flag drops", wait_flag(dev, 0), hex(config_flags(dev)))
    st, _, _, _, _ = request(dev, 0, OP_MEM_ALLOC, struct.pack("<QII", 4096, 0, 0))
    check("daemon killed: request fails UNAVAILABLE", st == ST["UNAVAILABLE"], st)
    os.unlink(sock)
    daemon = start_daemon(kerneletd, sock)
    check("daemon restarted: device reconnects", wait_flag(dev, 1), hex(config_flags(dev)))
    st, _, _, _, _ = request(dev, 0, OP_MEM_ALLOC, struct.pack("<QII", 4096, 0, 0))
    check("after reconnection: MEM_ALLOC OK", st == ST["OK"], st)
    out = subprocess.run([ctl, "--socket", sock, "--json"], capture_output=True,
                         text=True).stdout
    row = next((t for t in json.loads(out)["tenants"] if t["name"] == TENANT), None)
    check("after reconnection: the policy is sent again", row is not None and
          (row["policy"]["weight"], row["policy"]["priority"],
           row["policy"]["kernel_time_limit_s"]) == (300, 2, 2.5), out)
    return daemon


def guest_stats(dev):
    """GET_STATS as the guest sends it: the six counters, the last four read from the
    daemon after the request arrived (None when it failed)."""
    st, body, _, _, _ = request(dev, 0, 0x0003)
    return struct.unpack_from("<6Q", body) if st == ST["OK"] and len(body) >= 48 else None


def contexts(dev):
    """A guest context's CONTEXT_CLOSE frees what that context allocated, nothing else."""
    def mem():
        return guest_stats(dev)[5]

    base = mem()
    for ctx, size in ((21, 1 << 16), (22, 2 << 16)):
        st, _, _, _, _ = request(dev, 0, OP_MEM_ALLOC, struct.pack("<QII", size, 0, 0),
                                 context=ctx)
        check(f"context {ctx}: MEM_ALLOC", st == ST["OK"], st)
    check("two contexts' allocations count for the VM", mem() == base + (3 << 16),
          f"{mem()} vs {base} + {3 << 16}")
    st, _, _, _, _ = request(dev, 0, OP_CONTEXT_CLOSE, context=21)
    check("CONTEXT_CLOSE is answered OK once forwarded", st == ST["OK"], st)
    check("CONTEXT_CLOSE frees the closed context's memory only", mem() == base + (2 << 16),
          f"{mem()} vs {base} + {2 << 16}")
    st, _, _, _, _ = request(dev, 0, OP_CONTEXT_CLOSE, context=22)
    check("closing the other context frees the rest", st == ST["OK"] and mem() == base,
          f"status {st}, {mem()} vs {base}")


def session(qemu, kerneletd, ctl, tmp, mode, memfd, kill_restart):
    sock = os.path.join(tmp, "kerneletd.sock")
    qtest_path, qmp_path = os.path.join(tmp, f"qtest-{mode}"), os.path.join(tmp, f"qmp-{mode}")
    daemon = start_daemon(kerneletd, sock)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(qtest_path)
    listener.listen(1)
    listener.settimeout(30)
    mem = (["-object", "memory-backend-memfd,id=mem,size=64M,share=on",
            "-machine", "pc,memory-backend=mem"] if memfd else ["-machine", "pc"])
    proc = subprocess.Popen(
        [qemu, *mem, "-accel", "qtest", "-m", "64", "-nodefaults", "-display", "none",
         "-vga", "none", "-nic", "none", "-qtest", f"unix:{qtest_path}",
         "-qtest-log", "/dev/null", "-qmp", f"unix:{qmp_path},server=on,wait=off",
         "-device", f"virtio-kernelet-pci,id=kl0,socket={sock},vm-name={TENANT}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        conn, _ = listener.accept()
        conn.settimeout(30)
        dev = Device(QTest(conn))
        qmp = QMP(qmp_path)
        dev.map_bar()
        dev.init()
        daemon = run(dev, qmp, ctl, sock, mode, kill_restart, kerneletd, daemon) or daemon
    except Exception as e:  # a hang, a crash or a protocol error is a failure
        check(f"{mode}: harness ran to the end", False, repr(e))
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        daemon.kill()
        daemon.wait()
    check(f"{mode}: QEMU did not die on its own", proc.returncode == -9,
          f"rc {proc.returncode}: {err.strip()[-300:]}")
    said = "zero-copy" if memfd else "copied through the device's staging region"
    check(f"{mode}: QEMU says how bulk data travels", said in err, err.strip()[-300:])
    os.path.exists(sock) and os.unlink(sock)


def tap_report(checks):
    """Prints checks [(name, ok, detail)] as TAP; the exit status."""
    print(f"1..{len(checks)}")
    for i, (name, ok, detail) in enumerate(checks, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and detail:
            print("# " + str(detail).replace("\n", "\n# "))
    return 0 if all(ok for _, ok, _ in checks) else 1


def main():
    qemu, kerneletd, ctl = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="kernelet-qtestd-") as tmp:
        session(qemu, kerneletd, ctl, tmp, "memfd", True, True)
        session(qemu, kerneletd, ctl, tmp, "staging", False, False)
    return tap_report(results)


if __name__ == "__main__":
    sys.exit(main())
