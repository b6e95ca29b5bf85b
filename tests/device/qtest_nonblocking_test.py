#!/usr/bin/env python3
"""QEMU's main loop never waits for kerneletd (issue 15, item 6). virtio-kernelet talks to a
fake daemon that is slow on purpose, while QMP and qtest (both served by QEMU's main loop)
are timed:

- slow statistics: the fake answers the handshake and ADMIN_SET at once but each
  ADMIN_STATUS only after 1.5 s. A guest's GET_STATS is posted: the kick returns at once, a
  QMP command is answered at once meanwhile, and GET_STATS is answered after the fake's
  delay with the fake's counters (so the device did wait for them, off the main loop);
- a silent daemon: the fake accepts connections and never answers. For 5 s of the
  device's connection attempts (each waits 2 s for HELLO) QMP stays responsive.

Before the worker thread, the kick took 1.5 s (the main loop waited for ADMIN_STATUS; a
daemon slower than 2 s gave stale counters) and QMP waited 2 s behind each connection try.
Helpers from qtest_virtqueue_test.py and qtest_daemon_test.py. Prints TAP.

usage: qtest_nonblocking_test.py QEMU
"""
import array
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qtest_virtqueue_test import HDR, QMP, Device, QTest  # noqa: E402
from qtest_daemon_test import ST, post_chain, tap_report, wait_flag, wait_used  # noqa: E402

OP_HELLO, OP_GET_STATS, OP_SHM_ATTACH = 0x0001, 0x0003, 0x0018
OP_ADMIN_STATUS = 0x0401
STATS_DELAY_S = 1.5  # below the device's 2 s call timeout: the counters do come
TENANT_ID, LAUNCHES = 5, 42
FAST_S = 0.5        # an answer of the main loop that took longer counts as blocked
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))


def recv_exact(conn, n):
    """n bytes, closing any file descriptor passed along (SHM_ATTACH's memfd)."""
    data = b""
    while len(data) < n:
        fds = array.array("i")
        msg, anc, _, _ = conn.recvmsg(n - len(data), socket.CMSG_SPACE(4 * 4))
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % 4])
        for fd in fds:
            os.close(fd)
        if not msg:
            raise EOFError
        data += msg
    return data


def answer_of(op):
    """The fake's answer payload to op (None: OK without payload)."""
    if op == OP_HELLO:
        info = struct.pack("<IIQIHHIIII", 0x00000002, 1, 1 << 30, 132, 9, 0, 100, 0, 256, 0)
        info += b"fake GPU".ljust(64, b"\0")
        return info + struct.pack("<QQIIII", TENANT_ID, 0, 1, 64, 65536, 0)
    if op == OP_SHM_ATTACH:
        return struct.pack("<II", 7, 0)
    if op == OP_ADMIN_STATUS:
        time.sleep(STATS_DELAY_S)       # the slow part
        head = struct.pack("<II", 1, 1) + b"fifo".ljust(32, b"\0") + b"fake".ljust(32, b"\0")
        head += bytes(8 * 6)
        row = struct.pack("<Q", TENANT_ID) + b"vm".ljust(64, b"\0") + bytes(184 - 72)
        row = row[:120] + struct.pack("<Q", LAUNCHES) + row[128:]
        return head + row
    return None


def serve_slow(conn):
    try:
        while True:
            op, _, length, rid, _, _ = HDR.unpack(recv_exact(conn, HDR.size))
            if length:
                recv_exact(conn, length)
            body = answer_of(op) or b""
            conn.sendall(HDR.pack(op, 0, len(body), rid, 0, 0) + body)
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


def serve_silent(conn):
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass


def fake_daemon(path, serve):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)

    def accept_loop():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
    threading.Thread(target=accept_loop, daemon=True).start()
    return listener


def start_qemu(qemu, tmp, mode, sock):
    qtest_path, qmp_path = os.path.join(tmp, f"qtest-{mode}"), os.path.join(tmp, f"qmp-{mode}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(qtest_path)
    listener.listen(1)
    listener.settimeout(30)
    proc = subprocess.Popen(
        [qemu, "-machine", "pc", "-accel", "qtest", "-m", "64", "-nodefaults", "-display",
         "none", "-vga", "none", "-nic", "none", "-qtest", f"unix:{qtest_path}",
         "-qtest-log", "/dev/null", "-qmp", f"unix:{qmp_path},server=on,wait=off",
         "-device", f"virtio-kernelet-pci,id=kl0,socket={sock},vm-name=vm"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    conn, _ = listener.accept()
    conn.settimeout(30)
    return proc, Device(QTest(conn)), QMP(qmp_path)


def timed(fn):
    start = time.monotonic()
    value = fn()
    return value, time.monotonic() - start


def slow_stats(qemu, tmp):
    sock = os.path.join(tmp, "slow.sock")
    daemon = fake_daemon(sock, serve_slow)
    proc, dev, qmp = start_qemu(qemu, tmp, "slow", sock)
    path = "/machine/peripheral/kl0"
    try:
        dev.map_bar()
        dev.init()
        check("slow stats: the device connects to the fake daemon", wait_flag(dev, 1))
        start = time.monotonic()
        outs, kick_s = timed(lambda: post_chain(dev, 0, [(HDR.pack(OP_GET_STATS, 0, 0, 9, 0, 0),
                                                          None), (None, 256)]))
        check("slow stats: the guest's GET_STATS kick returns at once", kick_s < FAST_S,
              f"{kick_s:.2f} s")
        weight, qmp_s = timed(lambda: qmp.cmd("qom-get", path=path, property="weight"))
        check("slow stats: QMP answers while the daemon delays the statistics",
              weight == 100 and qmp_s < FAST_S, f"{qmp_s:.2f} s, weight {weight}")
        wait_used(dev, 0)
        took = time.monotonic() - start
        answer = dev.qt.read(outs[0], HDR.size + 48)
        _, _, length, rid, status, _ = HDR.unpack_from(answer)
        counters = struct.unpack_from("<6Q", answer, HDR.size)
        check("slow stats: GET_STATS is answered once the daemon's counters came",
              status == ST["OK"] and rid == 9 and counters[2] == LAUNCHES and
              took >= STATS_DELAY_S - 0.5, f"status {status}, {counters}, {took:.2f} s")
        launched = qmp.cmd("qom-get", path=path, property="kernels-launched")
        check("slow stats: QMP then reads the counters the device got", launched == LAUNCHES,
              launched)
    finally:
        proc.kill()
        proc.communicate(timeout=10)
        daemon.close()


def silent_daemon(qemu, tmp):
    sock = os.path.join(tmp, "silent.sock")
    daemon = fake_daemon(sock, serve_silent)
    proc, _, qmp = start_qemu(qemu, tmp, "silent", sock)
    worst, n = 0.0, 0
    try:
        end = time.monotonic() + 5.0
        while time.monotonic() < end:
            _, took = timed(lambda: qmp.cmd("qom-get", path="/machine/peripheral/kl0",
                                            property="weight"))
            worst, n = max(worst, took), n + 1
            time.sleep(0.05)
        check("silent daemon: QMP stays responsive while the device tries to connect",
              worst < FAST_S, f"slowest of {n} answers: {worst:.2f} s")
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        daemon.close()
    check("silent daemon: QEMU says the daemon is not reachable", "not reachable" in err,
          err.strip()[-300:])


def main():
    qemu = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="kernelet-nonblock-") as tmp:
        for case in (slow_stats, silent_daemon):
            try:
                case(qemu, tmp)
            except Exception as e:  # a hang or a protocol error is a failure
                check(f"{case.__name__}: ran to the end", False, repr(e))
    return tap_report(results)


if __name__ == "__main__":
    sys.exit(main())
