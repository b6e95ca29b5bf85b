#!/usr/bin/env python3
"""Two VMs' kernels co-scheduled: VM A runs tea and VM B pc (unmodified, from the guest
image), let go together, through one kerneletd --backend emu --policy kernelet with the
benchmark kernels' profiles. Both must verify and the scheduler must have run pairs:
each program keeps one kernel in flight, so every pair holds a kernel of each VM.
(--pair-short-us 0 and the grid sizes as in libcuda-two-tenants-cosched, which checks
the same for two processes.) Prints TAP.

usage: vm_cosched_test.py QEMU VMLINUZ INITRAMFS KERNELETD KERNELET_CTL PROFILES
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guest_vm import TAP, start_kerneletd  # noqa: E402
from vm_programs import VMFiles, run_in_vms  # noqa: E402

PROGRAMS = [("tea", ["--blocks=1048576", "--repeat=10"]),
            ("pc", ["--bits=14", "--threads=1048576", "--steps=4", "--repeat=10"])]


def pairs(ctl, sock):
    out = subprocess.run([ctl, "--socket", sock, "status"], capture_output=True, text=True,
                         timeout=30).stdout
    m = re.search(r"(\d+) co-scheduled pairs", out)
    return (int(m.group(1)) if m else None), out


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        return 2
    qemu, kernel, initrd, kerneletd, ctl, profiles = sys.argv[1:]
    tap = TAP()
    with tempfile.TemporaryDirectory(prefix="kernelet-vmpair-") as tmp:
        sock = os.path.join(tmp, "kerneletd.sock")
        with open(os.path.join(tmp, "kerneletd.log"), "w") as log:
            daemon = start_kerneletd(kerneletd, sock, [
                "--backend", "emu", "--policy", "kernelet", "--pair-short-us", "0",
                "--profiles", profiles], log)
            tap.check("kerneletd started", daemon.poll() is None and os.path.exists(sock))
            results = run_in_vms(VMFiles(qemu, kernel, initrd), sock, PROGRAMS, memory=512)
            for prog, out, rc, go_ns in results:
                tap.check(f"VM running {prog}: verified",
                          rc == 0 and re.search(rf"^RESULT name={prog} verified=yes", out, re.M),
                          f"exit {rc}: {out[-400:]}")
                tap.check(f"VM running {prog}: let go with the other", go_ns is not None)
            n, status = pairs(ctl, sock)
            tap.check("the scheduler ran kernels of the two VMs as pairs", n is not None and n > 0,
                      status.strip().replace("\n", " | "))
            tap.check("kerneletd still running", daemon.poll() is None)
            daemon.terminate()
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
    tap.report([])
    return 0 if all(ok for _, ok, _ in tap.results) else 1


if __name__ == "__main__":
    sys.exit(main())
