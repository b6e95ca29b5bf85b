"""Programs in VMs of their own, let go together: each program of a list runs in a test
guest (QEMU with virtio-kernelet, the image of vm-images/) whose device links to one
kerneletd socket. Used by kernelet-tenants' vm- modes on the GPU machine and by the vm
suite's co-scheduling test.

The guest runs the program from the image (/opt/kernelet/...) with BENCH_BARRIER set;
once it is ready the guest asks over its console and every VM is let go at once. The
guests' clocks are not the host's: a caller places a program's span (t1 - t0 by its
guest's clock) at the host time its VM was let go.
"""
import gzip
import os
import re
import threading
import time

from guest_vm import GuestVM

GUEST_DIRS = {"burn": "/opt/kernelet/tenants", "stream": "/opt/kernelet/tenants"}

# The guest's command: the program in the background until it says ready, the go from
# the harness, then its whole output (prefixed) and exit status on the console.
GUEST_SCRIPT = r"""
mkdir -p /tmp/b
BENCH_BARRIER=/tmp/b %(cmd)s > /tmp/out 2>&1 &
pid=$!
while [ -z "$(ls /tmp/b)" ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done
echo "KERNELET-ASK go"; read ack; : > /tmp/b/go
wait $pid; rc=$?
sed 's/^/OUT| /' /tmp/out
echo "GUEST-RC rc=$rc"
"""


def accel():
    """TCG unless KERNELET_VM_ACCEL says otherwise: on the build machine and on the GPU
    machine /dev/kvm opens but a KVM guest never reaches its console (nested, 2026-11-27)."""
    return os.environ.get("KERNELET_VM_ACCEL") or "tcg"


def guest_command(prog, args):
    return " ".join([f"{GUEST_DIRS.get(prog, '/opt/kernelet/bench')}/{prog}"] + args)


def device(sock, name):
    return (f"virtio-kernelet-pci,id=kl0,gpu-name=GPU,gpu-sms=132,gpu-mem=16G,"
            f"socket={sock},vm-name={name}")


class _Gate:
    """Lets every VM go at once, when all asked (or gave up); records each one's go time."""

    def __init__(self, n, timeout):
        self.barrier = threading.Barrier(n, timeout=timeout)
        self.go_ns = {}

    def on_ask(self, name):
        def ask(_qmp, words):
            if words and words[0] == "go":
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    pass    # another VM never got ready: go alone, its error is reported
                self.go_ns[name] = time.monotonic_ns()
        return ask


class VMFiles:
    """QEMU, the guest image and QEMU's firmware folder (None: QEMU's own)."""

    def __init__(self, qemu, kernel, initrd, firmware=None):
        self.qemu, self.kernel, self.initrd, self.firmware = qemu, kernel, initrd, firmware

    @classmethod
    def from_pack(cls, vm_dir):
        """The layout of tests/gpu/vm/pack.sh's folder."""
        return cls(os.path.join(vm_dir, "bin", "qemu-system-x86_64"),
                   os.path.join(vm_dir, "image", "vmlinuz"),
                   os.path.join(vm_dir, "image", "initramfs.cpio.gz"),
                   os.path.join(vm_dir, "firmware"))


def run_in_vms(files, sock, programs, memory=None):
    """Runs each (prog, args) of programs in a VM of its own against kerneletd's socket
    sock; returns [(prog, output, rc, go_ns)] in order (rc -1: no exit status seen). A VM
    has `memory` MiB (default KERNELET_VM_MEMORY, else 2048) and is stopped after
    KERNELET_VM_LIMIT seconds (default 600)."""
    limit = int(os.environ.get("KERNELET_VM_LIMIT", "600"))
    memory = memory or int(os.environ.get("KERNELET_VM_MEMORY", "2048"))
    gate = _Gate(len(programs), timeout=limit)
    vms = []
    for i, (prog, args) in enumerate(programs):
        name = f"vm{i}-{prog}"
        script = GUEST_SCRIPT % dict(cmd=guest_command(prog, args))
        vm = GuestVM(files.qemu, files.kernel, files.initrd, script, [device(sock, name)],
                     memory=memory, accel=accel(), firmware=files.firmware)
        vms.append((name, vm))
    threads = [threading.Thread(target=vm.run, args=(gate.on_ask(name), limit))
               for name, vm in vms]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = []
    for (prog, _), (name, vm) in zip(programs, vms):
        out = "\n".join(l[5:] for l in vm.lines if l.startswith("OUT| "))
        rcs = [int(d["rc"]) for d in vm.find("GUEST-RC")]
        if not out:
            out = "\n".join(vm.lines[-20:])   # no output: what the console said last
        results.append((prog, out, rcs[0] if rcs else -1, gate.go_ns.get(name)))
    return results


def extract_image(initrd, dest):
    """Copies the image's programs and libcuda.so.1 out of its initramfs (newc cpio,
    gzip) into dest/bench and dest/libcuda, so that the same binaries run natively and
    through kerneletd beside the VMs."""
    with gzip.open(initrd, "rb") as f:
        data = f.read()
    at = 0
    wanted = re.compile(r"^(opt/kernelet/(bench|tenants)/[^/]+|usr/lib/x86_64-linux-gnu/libcuda\.so\.1)$")
    while at + 110 <= len(data) and data[at:at + 6] == b"070701":
        fields = [int(data[at + 6 + 8 * i:at + 14 + 8 * i], 16) for i in range(13)]
        size, namesize = fields[6], fields[11]
        name = data[at + 110:at + 110 + namesize - 1].decode()
        at = (at + 110 + namesize + 3) & ~3
        body = data[at:at + size]
        at = (at + size + 3) & ~3
        if name == "TRAILER!!!":
            break
        regular = fields[1] & 0o170000 == 0o100000
        if regular and wanted.match(name.lstrip("./")):
            sub = "libcuda" if name.endswith("libcuda.so.1") else "bench"
            os.makedirs(os.path.join(dest, sub), exist_ok=True)
            path = os.path.join(dest, sub, os.path.basename(name))
            with open(path, "wb") as out:
                out.write(body)
            os.chmod(path, 0o755)
