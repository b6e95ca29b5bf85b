#!/usr/bin/env python3
"""QMP tests of virtio-kernelet: every policy property set and read with qom-set/qom-get,
invalid values rejected, statistics read-only, migration refused, PCI identity, and the
-device short form. Starts our qemu-system-x86_64 without a guest (-accel qtest, -S) and
talks QMP over a Unix socket. Prints TAP.

usage: qmp_policy_test.py QEMU_BINARY
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

VIRTIO_ID = 57
PCI_VENDOR = 0x1AF4
PCI_DEVICE = 0x1040 + VIRTIO_ID
DEV = "/machine/peripheral/kl0"


class QMPError(Exception):
    pass


class VM:
    """One QEMU process and its QMP connection."""

    def __init__(self, qemu, device_args):
        self.dir = tempfile.TemporaryDirectory(prefix="kernelet-qmp-")
        self.sock_path = os.path.join(self.dir.name, "qmp.sock")
        self.proc = subprocess.Popen(
            [qemu, "-machine", "pc", "-accel", "qtest", "-S", "-nodefaults",
             "-display", "none", "-vga", "none", "-nic", "none",
             "-qmp", f"unix:{self.sock_path},server=on,wait=off", *device_args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        self.sock = None
        while self.sock is None:
            if self.proc.poll() is not None:
                raise RuntimeError("qemu exited: " + self.proc.stderr.read())
            if time.monotonic() > deadline:
                raise RuntimeError("qemu's QMP socket did not appear")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.sock_path)
                self.sock = s
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.05)
        self.sock.settimeout(20)
        self.reader = self.sock.makefile("r")
        greeting = self._read()
        assert "QMP" in greeting, greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while True:
            line = self.reader.readline()
            if not line:
                raise RuntimeError("QMP connection closed")
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def cmd(self, name, **args):
        self.sock.sendall((json.dumps({"execute": name, "arguments": args}) + "\n").encode())
        reply = self._read()
        if "error" in reply:
            raise QMPError(reply["error"]["desc"])
        return reply["return"]

    def close(self):
        try:
            self.cmd("quit")
        except (QMPError, RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.sock.close()
        self.dir.cleanup()


results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))


def expect_error(vm, path, prop, value, needle=None):
    """qom-set must fail (and mention needle) and leave the property unchanged."""
    before = vm.cmd("qom-get", path=path, property=prop)
    try:
        vm.cmd("qom-set", path=path, property=prop, value=value)
    except QMPError as e:
        after = vm.cmd("qom-get", path=path, property=prop)
        ok = after == before and (needle is None or needle in str(e))
        check(f"{prop}={value!r} rejected", ok, f"error '{e}', value {before} -> {after}")
        return
    check(f"{prop}={value!r} rejected", False, "qom-set accepted it")


def test_policy(qemu):
    vm = VM(qemu, ["-device", "virtio-kernelet-pci,id=kl0"])
    try:
        defaults = {"weight": 100, "priority": 0, "mem-quota": 0, "max-inflight": 256,
                    "slicing": True, "kernel-time-limit-ms": 0}
        for prop, want in defaults.items():
            got = vm.cmd("qom-get", path=DEV, property=prop)
            check(f"default {prop} is {want!r}", got == want, f"got {got!r}")

        new = {"weight": 400, "priority": 7, "mem-quota": 3 << 30, "max-inflight": 16,
               "slicing": False, "kernel-time-limit-ms": 86400000}
        for prop, value in new.items():
            vm.cmd("qom-set", path=DEV, property=prop, value=value)
            got = vm.cmd("qom-get", path=DEV, property=prop)
            check(f"qom-set {prop}={value!r} reads back", got == value, f"got {got!r}")
        # the properties live on the virtio device; the proxy's are aliases of them
        inner = vm.cmd("qom-get", path=DEV + "/virtio-backend", property="weight")
        check("proxy alias and virtio device agree", inner == 400, f"inner weight {inner}")

        expect_error(vm, DEV, "weight", 0, "weight")
        expect_error(vm, DEV, "weight", 10001, "weight")
        expect_error(vm, DEV, "weight", -5)
        expect_error(vm, DEV, "weight", "heavy")
        expect_error(vm, DEV, "priority", 8, "priority")
        expect_error(vm, DEV, "max-inflight", 0, "max-inflight")
        expect_error(vm, DEV, "max-inflight", 65537, "max-inflight")
        expect_error(vm, DEV, "mem-quota", -1, "mem-quota")
        expect_error(vm, DEV, "mem-quota", (1 << 50) + 1, "mem-quota")
        expect_error(vm, DEV, "slicing", "sometimes")
        expect_error(vm, DEV, "slicing", 1)
        expect_error(vm, DEV, "kernel-time-limit-ms", 86400001, "kernel-time-limit-ms")
        expect_error(vm, DEV, "kernel-time-limit-ms", -1)
        expect_error(vm, DEV, "kernel-time-limit-ms", 1.5)

        for stat in ["requests", "errors", "kernels-launched", "gpu-time-ns", "bytes-copied",
                     "mem-in-use"]:
            got = vm.cmd("qom-get", path=DEV, property=stat)
            check(f"statistic {stat} starts at 0", got == 0, f"got {got!r}")
            try:
                vm.cmd("qom-set", path=DEV, property=stat, value=5)
                check(f"statistic {stat} is read-only", False, "qom-set accepted")
            except QMPError:
                check(f"statistic {stat} is read-only", True)

        # PCI identity as the guest will see it
        devs = [d for bus in vm.cmd("query-pci") for d in bus["devices"]
                if d["id"]["vendor"] == PCI_VENDOR and d["id"]["device"] == PCI_DEVICE]
        check("PCI device 1af4:%04x present" % PCI_DEVICE, len(devs) == 1,
              f"{len(devs)} matching devices")

        try:
            vm.cmd("migrate", uri="exec:cat > /dev/null")
            check("migration refused", False, "migrate was accepted")
        except QMPError as e:
            check("migration refused with the device's reason",
                  "virtio-kernelet does not support migration" in str(e), str(e))
        out = vm.cmd("human-monitor-command", **{"command-line": "savevm snap0"})
        check("savevm refused with the device's reason",
              "virtio-kernelet does not support migration" in out, out.strip())
        status = vm.cmd("query-migrate").get("status", "none")
        check("no migration started", status in ("none", "failed"), status)
    finally:
        vm.close()


def test_short_form(qemu):
    vm = VM(qemu, ["-device", "virtio-kernelet,id=kl0,weight=700,mem-quota=1G"])
    try:
        t = vm.cmd("qom-get", path=DEV, property="type")
        check("-device virtio-kernelet is virtio-kernelet-pci", t == "virtio-kernelet-pci", t)
        w = vm.cmd("qom-get", path=DEV, property="weight")
        check("weight given on the command line", w == 700, f"got {w}")
        q = vm.cmd("qom-get", path=DEV, property="mem-quota")
        check("mem-quota=1G on the command line", q == 1 << 30, f"got {q}")
    finally:
        vm.close()


def test_bad_command_line(qemu):
    r = subprocess.run([qemu, "-machine", "pc", "-accel", "qtest", "-S", "-nodefaults",
                        "-display", "none", "-device", "virtio-kernelet-pci,weight=0"],
                       capture_output=True, text=True, timeout=30)
    check("weight=0 on the command line refused", r.returncode != 0 and "weight" in r.stderr,
          f"rc {r.returncode}, stderr {r.stderr.strip()!r}")


def main():
    qemu = sys.argv[1]
    for t in (test_policy, test_short_form, test_bad_command_line):
        try:
            t(qemu)
        except Exception as e:  # a crash of the harness or QEMU is a failure, not a skip
            check(t.__name__ + " ran", False, repr(e))
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and detail:
            print(f"# {detail}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
