#!/usr/bin/env python3
"""Boots the Kernelet guest image under TCG with -device virtio-kernelet-pci and checks,
from the guest's serial console, that the guest sees the device: PCI 1af4:1079 bound by
virtio-pci as virtio device 57, its configuration space read through the BAR, and that a
command from the kernel command line runs.
Prints TAP.

usage: vm_boot_test.py QEMU VMLINUZ INITRAMFS
Environment: KERNELET_VM_BOOT_LIMIT (seconds to the guest's first line, default 60).
"""
import base64
import os
import re
import subprocess
import sys
import time

VIRTIO_ID = 57
PCI_DEVICE = 0x1040 + VIRTIO_ID
TOTAL_LIMIT = 180


def main():
    qemu, kernel, initrd = sys.argv[1:4]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "guest_read_config.sh")) as f:
        read_config = f.read()
    boot_limit = float(os.environ.get("KERNELET_VM_BOOT_LIMIT", "60"))
    # The C++ runtime must load: ld.so resolves libstdc++'s dependencies in the guest.
    command = ("echo KERNELET-CMD $((6 * 7)); "
               "/lib64/ld-linux-x86-64.so.2 --list /usr/lib/x86_64-linux-gnu/libstdc++.so.6\n"
               + read_config)
    cmd64 = base64.b64encode(command.encode()).decode()
    argv = [qemu, "-machine", "pc", "-accel", "tcg", "-m", "512", "-nodefaults",
            "-vga", "none", "-nic", "none", "-display", "none", "-serial", "stdio",
            "-no-reboot", "-kernel", kernel, "-initrd", initrd,
            "-append", f"console=ttyS0 panic=-1 kernelet.cmd64={cmd64}",
            "-device", "virtio-kernelet-pci,gpu-sms=132"]
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    lines, up_at = [], None
    try:
        for line in proc.stdout:
            line = line.rstrip("\r\n")
            lines.append(line)
            if up_at is None and line.startswith("KERNELET-GUEST-UP"):
                up_at = time.monotonic() - start
            if time.monotonic() - start > TOTAL_LIMIT:
                break
        proc.wait(timeout=max(1, TOTAL_LIMIT - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        pass
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    elapsed = time.monotonic() - start

    results = []

    def check(name, ok, detail=""):
        results.append((name, bool(ok), detail))

    pci = [l.split() for l in lines if l.startswith("KERNELET-PCI ")]
    virtio = [l.split() for l in lines if l.startswith("KERNELET-VIRTIO ")]
    check("guest reached init", up_at is not None, f"no KERNELET-GUEST-UP in {elapsed:.0f} s")
    check(f"guest up within {boot_limit:.0f} s", up_at is not None and up_at <= boot_limit,
          f"took {up_at} s")
    check("virtio modules loaded", not any(l.startswith("KERNELET-MODULE-FAILED") for l in lines))
    check("PCI device 1af4:%04x seen by the guest" % PCI_DEVICE,
          any(p[2] == "0x1af4" and p[3] == "0x%04x" % PCI_DEVICE for p in pci),
          f"PCI devices: {[p[1:] for p in pci]}")
    check(f"virtio-pci registered virtio device {VIRTIO_ID}",
          any(v[3] == "0x%04x" % VIRTIO_ID for v in virtio),
          f"virtio devices: {[v[1:] for v in virtio]}")
    check("command from the kernel command line ran", "KERNELET-CMD 42" in lines)
    check("C++ runtime resolves in the guest (libstdc++ -> libgcc_s, libm, libc)",
          all(any(lib + " => " in l and "not found" not in l for l in lines)
              for lib in ("libgcc_s.so.1", "libm.so.6", "libc.so.6")))
    cfg = [l for l in lines if l.startswith("KERNELET-CFG ")]
    check("guest reads the config space through the BAR (version 0.2, slicing, 64 KiB, 132 SMs)",
          cfg == ["KERNELET-CFG version 0x00000002 flags 0x00000002 maxreq 0x00010000 "
                  "sms 0x00000084"], str(cfg))
    check("command exited 0", "KERNELET-EXIT 0" in lines)
    check("guest powered off and QEMU exited 0", proc.returncode == 0,
          f"rc {proc.returncode} after {elapsed:.0f} s")
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            if detail:
                print(f"# {detail}")
    print(f"# boot to init {up_at if up_at is None else round(up_at, 1)} s, total {elapsed:.1f} s")
    if not all(ok for _, ok, _ in results):
        print("# guest console (last 40 lines):")
        for l in lines[-40:]:
            print("#   " + l)
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
