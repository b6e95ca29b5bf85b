#!/usr/bin/env python3
"""Drives virtio-kernelet's virtqueues through QEMU's qtest protocol, as a guest driver
would: finds the device on the PCI bus, maps its modern virtio BAR, negotiates features,
sets up both queues in guest RAM and posts requests, good and bad. Checks the answers,
the configuration space, the statistics (over QMP) and that a malicious chain leaves QEMU
alive. No guest kernel is involved. Prints TAP.

usage: qtest_virtqueue_test.py QEMU_BINARY
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

VIRTIO_ID = 57
PCI_VENDOR, PCI_DEVICE = 0x1AF4, 0x1040 + VIRTIO_ID
HDR = struct.Struct("<HHIQII")  # opcode, flags, length, request_id, status, reserved
OP_HELLO, OP_GET_INFO, OP_GET_STATS, OP_LAUNCH_BATCH = 0x0001, 0x0002, 0x0003, 0x0301
ST = {"OK": 0, "BAD_REQUEST": 1, "BAD_OPCODE": 2, "TOO_SMALL": 3, "VERSION": 4,
      "UNAVAILABLE": 5}
PROTO_VERSION = 0x00000002
BAR_ADDR = 0xE0000000
QSIZE = 256
VRING_DESC_F_NEXT, VRING_DESC_F_WRITE = 1, 2
# virtio_pci_common_cfg offsets
DFSEL, DF, GFSEL, GF, NUMQ, STATUS, QSEL, QSZ, QEN, QNOFF, QDESC, QDRV, QDEV = (
    0x00, 0x04, 0x08, 0x0C, 0x12, 0x14, 0x16, 0x18, 0x1C, 0x1E, 0x20, 0x28, 0x30)
S_ACK, S_DRIVER, S_DRIVER_OK, S_FEATURES_OK, S_NEEDS_RESET = 1, 2, 4, 8, 0x40


class QTest:
    """Minimal client of QEMU's qtest line protocol."""

    def __init__(self, conn):
        self.f = conn.makefile("rw")

    def cmd(self, line):
        self.f.write(line + "\n")
        self.f.flush()
        while True:
            reply = self.f.readline()
            if not reply:
                raise RuntimeError("qtest connection closed after: " + line[:60])
            if not reply.startswith("IRQ"):
                break
        parts = reply.split()
        if parts[0] != "OK":
            raise RuntimeError(f"qtest '{line[:60]}' -> {reply.strip()}")
        return parts[1] if len(parts) > 1 else None

    def out(self, width, addr, val): self.cmd(f"out{width} 0x{addr:x} 0x{val:x}")
    def inp(self, width, addr): return int(self.cmd(f"in{width} 0x{addr:x}"), 16)
    def writew(self, addr, v): self.cmd(f"writew 0x{addr:x} 0x{v:x}")
    def writel(self, addr, v): self.cmd(f"writel 0x{addr:x} 0x{v:x}")
    def writeq(self, addr, v): self.cmd(f"writeq 0x{addr:x} 0x{v:x}")
    def writeb(self, addr, v): self.cmd(f"writeb 0x{addr:x} 0x{v:x}")
    def readb(self, addr): return int(self.cmd(f"readb 0x{addr:x}"), 16)
    def readw(self, addr): return int(self.cmd(f"readw 0x{addr:x}"), 16)
    def readl(self, addr): return int(self.cmd(f"readl 0x{addr:x}"), 16)

    def write(self, addr, data):
        if data:
            self.cmd(f"write 0x{addr:x} {len(data)} 0x{data.hex()}")

    def read(self, addr, size):
        return bytes.fromhex(self.cmd(f"read 0x{addr:x} {size}")[2:])


class QMP:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.f = self.sock.makefile("r")
        self._read()
        self.cmd("qmp_capabilities")

    def _read(self):
        while True:
            msg = json.loads(self.f.readline())
            if "event" not in msg:
                return msg

    def cmd(self, name, **args):
        self.sock.sendall((json.dumps({"execute": name, "arguments": args}) + "\n").encode())
        reply = self._read()
        if "error" in reply:
            raise RuntimeError(reply["error"]["desc"])
        return reply["return"]


class Device:
    """The virtio-kernelet PCI function, driven like a virtio 1.x driver would."""

    def __init__(self, qt):
        self.qt = qt
        self.devfn = self._find()
        self.caps = self._caps()
        self.ring = {}
        self.next_buf = 0x200000

    def cfg_read(self, reg):
        self.qt.out("l", 0xCF8, 0x80000000 | (self.devfn << 8) | (reg & 0xFC))
        return (self.qt.inp("l", 0xCFC) >> (8 * (reg & 3)))

    def cfg_write32(self, reg, val):
        self.qt.out("l", 0xCF8, 0x80000000 | (self.devfn << 8) | reg)
        self.qt.out("l", 0xCFC, val)

    def _find(self):
        for dev in range(32):
            devfn = dev << 3
            self.qt.out("l", 0xCF8, 0x80000000 | (devfn << 8))
            ids = self.qt.inp("l", 0xCFC)
            if ids == (PCI_DEVICE << 16) | PCI_VENDOR:
                return devfn
        raise RuntimeError("virtio-kernelet not found on PCI bus 0")

    def _caps(self):
        caps, ptr = {}, self.cfg_read(0x34) & 0xFF
        while ptr:
            vndr, nxt = self.cfg_read(ptr) & 0xFF, self.cfg_read(ptr + 1) & 0xFF
            if vndr == 0x09:  # vendor-specific: a virtio capability
                cfg_type, bar = self.cfg_read(ptr + 3) & 0xFF, self.cfg_read(ptr + 4) & 0xFF
                off, length = self.cfg_read(ptr + 8), self.cfg_read(ptr + 12)
                mult = self.cfg_read(ptr + 16) if cfg_type == 2 else 0
                caps.setdefault(cfg_type, (bar, off & 0xFFFFFFFF, length, mult))
            ptr = nxt
        return caps

    def map_bar(self):
        bar = self.caps[1][0]
        self.cfg_write32(0x10 + 4 * bar, BAR_ADDR)
        self.cfg_write32(0x10 + 4 * bar + 4, 0)  # 64-bit BAR: high half
        self.cfg_write32(0x04, 0x0006)           # memory space + bus master
        self.common = BAR_ADDR + self.caps[1][1]
        self.device_cfg = BAR_ADDR + self.caps[4][1]
        self.notify_base, self.notify_mult = BAR_ADDR + self.caps[2][1], self.caps[2][3]

    def status(self):
        return self.qt.readb(self.common + STATUS)

    def init(self):
        qt, c = self.qt, self.common
        qt.writeb(c + STATUS, 0)
        qt.writeb(c + STATUS, S_ACK | S_DRIVER)
        qt.writel(c + DFSEL, 1)
        if not qt.readl(c + DF) & 1:
            raise RuntimeError("device does not offer VIRTIO_F_VERSION_1")
        qt.writel(c + GFSEL, 0)
        qt.writel(c + GF, 0)
        qt.writel(c + GFSEL, 1)
        qt.writel(c + GF, 1)  # VIRTIO_F_VERSION_1 only
        qt.writeb(c + STATUS, S_ACK | S_DRIVER | S_FEATURES_OK)
        if not self.status() & S_FEATURES_OK:
            raise RuntimeError("FEATURES_OK not accepted")
        self.num_queues = qt.readw(c + NUMQ)
        for q in range(self.num_queues):
            base = 0x100000 + q * 0x8000
            desc, avail, used = base, base + 0x1000, base + 0x2000
            qt.writew(c + QSEL, q)
            qt.writew(c + QSZ, QSIZE)
            qt.writeq(c + QDESC, desc)
            qt.writeq(c + QDRV, avail)
            qt.writeq(c + QDEV, used)
            notify = self.notify_base + qt.readw(c + QNOFF) * self.notify_mult
            qt.writew(c + QEN, 1)
            qt.write(avail, bytes(4))
            self.ring[q] = {"desc": desc, "avail": avail, "used": used, "notify": notify,
                            "avail_idx": 0, "used_idx": 0, "next_desc": 0}
        qt.writeb(c + STATUS, S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK)

    def alloc(self, size):
        addr = self.next_buf
        self.next_buf += (size + 0xFFF) & ~0xFFF
        return addr

    def post(self, q, readable, writable_len, readable_addr=None, kick=True):
        """Posts one chain (readable bytes, then a writable buffer); returns the
        writable buffer's address. With readable_addr, `readable` is a length and the
        descriptor points there without writing anything (for addresses outside RAM)."""
        r, qt = self.ring[q], self.qt
        descs = []
        if readable_addr is not None:
            descs.append((readable_addr, readable, 0))
        elif readable is not None:
            addr = self.alloc(len(readable))
            qt.write(addr, readable)
            descs.append((addr, len(readable), 0))
        out_addr = self.alloc(max(writable_len, 1))
        qt.write(out_addr, b"\xee" * writable_len)
        descs.append((out_addr, writable_len, VRING_DESC_F_WRITE))
        head = r["next_desc"]
        for i, (addr, length, flags) in enumerate(descs):
            idx = (head + i) % QSIZE
            more = i + 1 < len(descs)
            qt.write(r["desc"] + 16 * idx,
                     struct.pack("<QIHH", addr, length, flags | (VRING_DESC_F_NEXT if more else 0),
                                 (idx + 1) % QSIZE if more else 0))
        r["next_desc"] = (head + len(descs)) % QSIZE
        slot = r["avail_idx"] % QSIZE
        qt.writew(r["avail"] + 4 + 2 * slot, head)
        r["avail_idx"] = (r["avail_idx"] + 1) & 0xFFFF
        qt.writew(r["avail"] + 2, r["avail_idx"])
        if kick:
            self.kick(q)
        return out_addr

    def kick(self, q):
        self.qt.writew(self.ring[q]["notify"], q)

    def wait_used(self, q, count=1, timeout=10):
        """Waits until `count` more chains are used; returns their (id, len) entries."""
        r, deadline = self.ring[q], time.monotonic() + timeout
        want = (r["used_idx"] + count) & 0xFFFF
        while self.qt.readw(r["used"] + 2) != want:
            if time.monotonic() > deadline:
                raise RuntimeError(f"queue {q}: device did not answer within {timeout} s")
            self.qt.cmd("clock_step 1000000")
        entries = []
        for _ in range(count):
            slot = r["used_idx"] % QSIZE
            entries.append(struct.unpack("<II", self.qt.read(r["used"] + 4 + 8 * slot, 8)))
            r["used_idx"] = (r["used_idx"] + 1) & 0xFFFF
        return entries

    def request(self, q, raw, resp_len=512):
        out = self.post(q, raw, resp_len)
        (_, used_len), = self.wait_used(q)
        data = self.qt.read(out, resp_len)
        return used_len, data


def hdr(opcode, length=0, rid=1):
    return HDR.pack(opcode, 0, length, rid, 0, 0)


results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))


def answer(dev, q, raw, resp_len=512):
    used_len, data = dev.request(q, raw, resp_len)
    if used_len < HDR.size:
        return used_len, None, b""
    op, flags, length, rid, status, _ = HDR.unpack_from(data)
    return used_len, {"op": op, "length": length, "id": rid, "status": status}, data[HDR.size:]


def run_tests(dev, qmp):
    cfg = dev.qt.read(dev.device_cfg, 96)
    version, flags, max_req = struct.unpack_from("<III", cfg)
    mem, sms, ccmaj, ccmin = struct.unpack_from("<QIHH", cfg, 16)
    name = cfg[32:96].split(b"\0")[0].decode()
    check("config space: protocol version 0.2", version == PROTO_VERSION, hex(version))
    check("config space: GPU from the device properties",
          (name, mem, sms, ccmaj, ccmin) == ("Test H100", 80 << 30, 132, 9, 0),
          f"{name!r} {mem} {sms} {ccmaj}.{ccmin}")
    check("config space: slicing on, no backend", flags == 2, hex(flags))
    check("two virtqueues", dev.num_queues == 2, str(dev.num_queues))
    sent, errors = 0, 0

    n, h, body = answer(dev, 0, hdr(OP_GET_INFO, rid=0xABCDEF))
    sent += 1
    check("GET_INFO answered OK with its request id",
          h and h["status"] == ST["OK"] and h["id"] == 0xABCDEF and h["op"] == OP_GET_INFO, str(h))
    check("GET_INFO used length = header + 104", n == HDR.size + 104, str(n))
    weight = struct.unpack_from("<I", body, 24)[0] if len(body) >= 28 else None
    check("GET_INFO carries the weight", weight == 100, str(weight))

    qmp.cmd("qom-set", path="/machine/peripheral/kl0", property="weight", value=900)
    qmp.cmd("qom-set", path="/machine/peripheral/kl0", property="mem-quota", value=8 << 30)
    n, h, body = answer(dev, 0, hdr(OP_HELLO, 8, rid=2) + struct.pack("<II", PROTO_VERSION, 0))
    sent += 1
    weight = struct.unpack_from("<I", body, 24)[0] if len(body) >= 28 else None
    check("HELLO answered OK", h and h["status"] == ST["OK"], str(h))
    check("policy set over QMP reaches the guest's next answer", weight == 900, str(weight))
    cfg_mem = struct.unpack_from("<Q", dev.qt.read(dev.device_cfg + 16, 8))[0]
    check("config space offers mem-quota, not the GPU's memory", cfg_mem == 8 << 30, str(cfg_mem))

    bad = [
        ("unknown opcode", hdr(0x0777), "BAD_OPCODE"),
        ("launch opcode on the request queue", hdr(OP_LAUNCH_BATCH, 4) + bytes(4), "BAD_OPCODE"),
        ("truncated header", hdr(OP_GET_INFO)[:10], "BAD_REQUEST"),
        ("length larger than the payload", hdr(OP_GET_INFO, 100), "BAD_REQUEST"),
        ("non-zero reserved field", HDR.pack(OP_GET_INFO, 0, 0, 1, 0, 9), "BAD_REQUEST"),
        ("HELLO from another major version",
         hdr(OP_HELLO, 8) + struct.pack("<II", 5 << 16, 0), "VERSION"),
        ("readable part above 64 KiB", hdr(OP_GET_INFO, 70000) + bytes(70000), "BAD_REQUEST"),
    ]
    for what, raw, want in bad:
        n, h, _ = answer(dev, 0, raw)
        sent += 1
        errors += 1
        check(f"{what} -> {want}", h and h["status"] == ST[want] and n == HDR.size, f"{h} len {n}")

    n, h, _ = answer(dev, 0, hdr(OP_GET_INFO), resp_len=40)
    sent += 1
    errors += 1
    check("response part too small for the answer -> TOO_SMALL",
          h and h["status"] == ST["TOO_SMALL"] and n == HDR.size, f"{h} len {n}")
    n, h, _ = answer(dev, 0, hdr(OP_GET_INFO), resp_len=8)
    sent += 1
    errors += 1
    check("response part below a header -> returned with used length 0", n == 0, str(n))
    out = dev.post(0, None, 64)
    (_, n), = dev.wait_used(0)
    sent += 1
    errors += 1
    check("chain without a readable part -> BAD_REQUEST",
          n == HDR.size and HDR.unpack_from(dev.qt.read(out, 24))[4] == ST["BAD_REQUEST"], str(n))

    n, h, _ = answer(dev, 1, hdr(OP_LAUNCH_BATCH, 32, rid=77) + bytes(32))
    sent += 1
    errors += 1
    check("launch batch without kerneletd -> UNAVAILABLE",
          h and h["status"] == ST["UNAVAILABLE"] and h["id"] == 77, str(h))
    n, h, _ = answer(dev, 1, hdr(OP_GET_INFO))
    sent += 1
    errors += 1
    check("control opcode on the launch ring -> BAD_OPCODE",
          h and h["status"] == ST["BAD_OPCODE"], str(h))

    # A flood: fill the ring (two descriptors per chain) and kick once.
    flood = QSIZE // 2
    outs = [dev.post(0, hdr(OP_GET_INFO, rid=1000 + i), 160, kick=False) for i in range(flood)]
    dev.kick(0)
    used = dev.wait_used(0, flood)
    ids = [HDR.unpack_from(dev.qt.read(o, 24))[3] for o in outs]
    sent += flood
    check(f"flood of {flood} chains: all answered OK in one pass",
          all(n == HDR.size + 104 for _, n in used) and ids == [1000 + i for i in range(flood)],
          f"lens {sorted(set(n for _, n in used))}")

    n, h, body = answer(dev, 0, hdr(OP_GET_STATS))
    sent += 1
    req_count, err_count = struct.unpack_from("<QQ", body) if len(body) >= 16 else (None, None)
    check("GET_STATS counts requests and errors", (req_count, err_count) == (sent, errors),
          f"got {(req_count, err_count)}, sent {sent}, errors {errors}")
    q_req = qmp.cmd("qom-get", path="/machine/peripheral/kl0", property="requests")
    q_err = qmp.cmd("qom-get", path="/machine/peripheral/kl0", property="errors")
    check("QMP statistics match", (q_req, q_err) == (sent, errors), f"{q_req} {q_err}")

    # Last: descriptors pointing outside guest RAM. QEMU reads unassigned address space
    # through a bounce buffer (as zeros here), so a small chain is answered with an error
    # status; a chain it cannot map at all marks the device broken (NEEDS_RESET). Either is
    # fine; crashing or hanging is not.
    out = dev.post(0, 24, 64, readable_addr=0x7FFF00000000)
    (_, n), = dev.wait_used(0)
    st = HDR.unpack_from(dev.qt.read(out, 24))[4] if n >= HDR.size else None
    check("readable part outside guest RAM -> error status",
          n == HDR.size and st in (ST["BAD_REQUEST"], ST["BAD_OPCODE"]), f"len {n} status {st}")
    dev.post(0, 1 << 30, 64, readable_addr=0x7FFF00000000)
    deadline = time.monotonic() + 10
    while not dev.status() & S_NEEDS_RESET and time.monotonic() < deadline:
        dev.qt.cmd("clock_step 1000000")
    check("unmappable 1 GiB chain: device marked NEEDS_RESET", dev.status() & S_NEEDS_RESET,
          hex(dev.status()))
    check("QEMU still serves QMP after the bad descriptors",
          qmp.cmd("query-status")["status"] in ("running", "paused"))


def main():
    qemu = sys.argv[1]
    tmp = tempfile.TemporaryDirectory(prefix="kernelet-qtest-")
    qtest_path, qmp_path = os.path.join(tmp.name, "qtest.sock"), os.path.join(tmp.name, "qmp.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(qtest_path)
    listener.listen(1)
    listener.settimeout(30)
    proc = subprocess.Popen(
        [qemu, "-machine", "pc", "-accel", "qtest", "-m", "64", "-nodefaults",
         "-display", "none", "-vga", "none", "-nic", "none",
         "-qtest", f"unix:{qtest_path}", "-qtest-log", "/dev/null",
         "-qmp", f"unix:{qmp_path},server=on,wait=off",
         "-device", "virtio-kernelet-pci,id=kl0,gpu-name=Test H100,gpu-mem=80G,gpu-sms=132,"
                    "gpu-cc-major=9,gpu-cc-minor=0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        conn, _ = listener.accept()
        conn.settimeout(30)
        qt = QTest(conn)
        qmp = QMP(qmp_path)
        dev = Device(qt)
        dev.map_bar()
        dev.init()
        run_tests(dev, qmp)
    except Exception as e:  # a hang, a crash or a protocol error is a failure
        check("harness ran to the end", False, repr(e))
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    crashed = proc.returncode not in (-9,)
    check("QEMU did not die on its own", not crashed, f"rc {proc.returncode}: {err.strip()[-300:]}")
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and detail:
            print(f"# {detail}")
    tmp.cleanup()
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
