#!/usr/bin/env python3
"""Unmodified CUDA programs in TCG guests, through libcuda's virtio transport, the guest
driver and virtio-kernelet's link to one kerneletd --backend emu on the host.

Checks:
  link    two VMs at once, each running `tea --small` and `mm --small`: RESULT ...
          verified=yes in both; a guest process killed during its copies leaves no chain,
          orphan or pinned page (driver counters) and no device memory in the daemon
          (CONTEXT_CLOSE: the VM's mem-in-use over QMP returns to 0); VM B killed (SIGKILL to QEMU) while its
          program runs: the daemon keeps running and VM A's next program still verifies.
  isolated (KERNELET_VM_DAEMON_ARGS="--isolate vm-a"): the same, VM A served by a worker
          of the daemon with a context of its own (the isolation tier), VM B in the
          daemon's; the log must say VM A was handed to a worker.
  nolink  (KERNELET_VM_NOLINK=1, for a QEMU without the link): one VM without a daemon;
          the program ends on its own with CUDA's "no CUDA-capable device" error (exit
          status 1..125, no signal, no hang) instead of crashing or hanging.
Prints TAP.

usage: vm_libcuda_test.py QEMU VMLINUZ INITRAMFS KERNELETD
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from guest_vm import TAP, GuestVM, start_kerneletd

LIMIT = int(os.environ.get("KERNELET_VM_LIMIT", "400"))
BENCH = "/opt/kernelet/bench"

# Guest script: runs programs, prints one RUN line per program and the driver counters.
GUEST_RUNS = r"""
run() { name=$1; shift
  out=$("$@" 2>&1); rc=$?
  echo "$out" | sed 's/^/  | /'
  echo "$out" | grep -q "^RESULT name=$name verified=yes" && v=yes || v=no
  echo "RUN name=$name rc=$rc verified=$v"
}
counters() { d=/sys/class/misc/kernelet0
  echo "COUNTERS tag=$1 inflight=$(cat $d/inflight) orphans=$(cat $d/orphans) pinned=$(cat $d/pinned_pages) contexts=$(cat $d/contexts)"
}
"""

GUEST_LINK = GUEST_RUNS + r"""
run tea %(bench)s/tea --small
run mm %(bench)s/mm --small
# A process killed while it copies: nothing may stay behind once the device let go.
%(bench)s/mm --small >/dev/null 2>&1 & pid=$!
sleep %(kill_after)s; kill -9 $pid; wait $pid
# A process killed while it holds device memory (100 timed repeats of a 256^3 product
# keep it running for about half a minute; one launch at most is queued when it dies).
%(bench)s/mm --m=256 --n=256 --k=256 --repeat=100 >/dev/null 2>&1 & pid=$!
sleep %(kill_after)s; kill -9 $pid; wait $pid; echo "KILLED rc=$?"
i=0; while [ $i -lt 50 ] && [ "$(cat /sys/class/misc/kernelet0/inflight)" != 0 ]; do sleep 0.2; i=$((i+1)); done
counters after-kill
echo "KERNELET-ASK phase1-done"; read ack
run tea %(bench)s/tea --small
echo "GUEST-DONE"
poweroff -f
"""

GUEST_VICTIM = GUEST_RUNS + r"""
echo "VICTIM-START"
while true; do run mm %(bench)s/mm --small; done
"""

GUEST_NOLINK = GUEST_RUNS + r"""
start=$(date +%%s)
run tea %(bench)s/tea --small
echo "ELAPSED s=$(( $(date +%%s) - start ))"
poweroff -f
"""


def daemon_args():
    return os.environ.get("KERNELET_VM_DAEMON_ARGS", "").split()


def start_daemon(kerneletd, sock, log):
    return start_kerneletd(kerneletd, sock, ["--backend", "emu", *daemon_args()], log)


def device(sock, vm_id):
    return (f"virtio-kernelet-pci,id=kl0,gpu-name=Emu,gpu-sms=4,gpu-mem=1G"
            + (f",socket={sock},vm-name={vm_id}" if sock else ""))


def runs(vm):
    return {d["name"]: d for d in vm.find("RUN")}


def test_link(tap, qemu, kernel, initrd, kerneletd, tmp):
    sock = os.path.join(tmp, "kerneletd.sock")
    log = open(os.path.join(tmp, "kerneletd.log"), "w")
    daemon = start_daemon(kerneletd, sock, log)
    tap.check("kerneletd started", daemon.poll() is None and os.path.exists(sock))
    a = GuestVM(qemu, kernel, initrd, GUEST_LINK % dict(bench=BENCH, kill_after="3"),
                [device(sock, "vm-a")])
    b = GuestVM(qemu, kernel, initrd, GUEST_VICTIM % dict(bench=BENCH), [device(sock, "vm-b")])
    victim_seen = threading.Event()

    def kill_b_when_running():
        # Kill B once it has finished one verified program and is inside the next one.
        while time.monotonic() - b.start < LIMIT:
            if any(d.get("verified") == "yes" for d in b.find("RUN")):
                time.sleep(2)
                victim_seen.set()
                b.proc.send_signal(signal.SIGKILL)
                return
            time.sleep(0.5)

    mem_after_kill = []

    def on_ask(qmp, words):
        # phase1-done: A has run its first programs; make sure B is gone before A goes on.
        victim_seen.wait(timeout=LIMIT / 2)
        b.proc.wait(timeout=30)
        # Every process of A has ended: the daemon frees what their contexts held once
        # their queued work has run (the killed one's may still be on the emulator).
        deadline = time.monotonic() + 60
        while True:
            mem_after_kill.append(qmp.cmd("qom-get", path="/machine/peripheral/kl0",
                                          property="mem-in-use"))
            if mem_after_kill[-1] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)

    killer = threading.Thread(target=kill_b_when_running, daemon=True)
    killer.start()
    rb = threading.Thread(target=lambda: b.run(lambda q, w: None, LIMIT), daemon=True)
    rb.start()
    a.run(on_ask, LIMIT)
    rb.join(timeout=60)
    ra = runs(a)
    for name in ("tea", "mm"):
        tap.check(f"VM A: {name} --small verified", any(
            d.get("verified") == "yes" for d in a.find("RUN") if d.get("name") == name),
            str(ra.get(name)))
    tap.check("VM B (concurrently): mm --small verified before it was killed",
              any(d.get("verified") == "yes" for d in b.find("RUN")))
    tap.check("VM B was killed mid-run", victim_seen.is_set() and b.proc.returncode == -9,
              f"returncode {b.proc.returncode}")
    after = a.find("COUNTERS")
    tap.check("killed guest process: no chain, orphan or pinned page left",
              bool(after) and after[0].get("inflight") == "0" and after[0].get("orphans") == "0"
              and after[0].get("pinned") == "0", str(after))
    killed = a.find("KILLED")
    tap.check("killed guest process: the daemon freed its device memory (mem-in-use 0)",
              bool(killed) and killed[0].get("rc") == "137"
              and bool(mem_after_kill) and mem_after_kill[-1] == 0,
              f"{killed}, mem-in-use readings {mem_after_kill[:3]} ... {mem_after_kill[-3:]}")
    tea_runs = [d for d in a.find("RUN") if d.get("name") == "tea"]
    tap.check("VM A after VM B's death: tea --small verified",
              len(tea_runs) == 2 and tea_runs[1].get("verified") == "yes", str(tea_runs))
    alive = daemon.poll() is None
    tap.check("kerneletd still running", alive, f"exit status {daemon.returncode}")
    if "--isolate" in daemon_args():
        with open(os.path.join(tmp, "kerneletd.log")) as f:
            said = f.read()
        handed = [l for l in said.splitlines() if "isolated: served by worker" in l]
        tap.check("VM A was served by a worker with a context of its own, VM B was not",
                  bool(handed) and all("tenant 'vm-a'" in l for l in handed),
                  "\n".join(handed) or "no hand-over in the log")
    tap.check("VM A finished", any(l.startswith("GUEST-DONE") for l in a.lines))
    daemon.terminate()
    try:
        daemon.wait(timeout=10)
    except subprocess.TimeoutExpired:
        daemon.kill()
    log.close()
    if not alive:  # what the daemon said last (a sanitizer report, say)
        with open(os.path.join(tmp, "kerneletd.log")) as f:
            for line in f.read().splitlines()[-40:]:
                print(f"# kerneletd: {line}")
    return a


def test_nolink(tap, qemu, kernel, initrd):
    vm = GuestVM(qemu, kernel, initrd, GUEST_NOLINK % dict(bench=BENCH), [device(None, "")])
    vm.run(lambda q, w: None, LIMIT)
    r = runs(vm).get("tea")
    tap.check("program ran and ended by itself", r is not None, "no RUN line")
    rc = int(r["rc"]) if r else -1
    tap.check("a clean CUDA error: exit status 1..125 (no signal, no hang)", 1 <= rc <= 125,
              f"rc={rc}")
    # Without a daemon the device offers no GPU: cuInit must say so (a HELLO the device
    # refused used to surface as "invalid argument" from the first CUDA call instead).
    tap.check("the error is CUDA's \"no device\"",
              any("no CUDA-capable device" in l for l in vm.lines))
    tap.check("no segfault or abort in the console",
              not any("Segmentation fault" in l or "Aborted" in l for l in vm.lines))
    return vm


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    qemu, kernel, initrd, kerneletd = sys.argv[1:]
    tap = TAP()
    with tempfile.TemporaryDirectory(prefix="kernelet-vmcuda-") as tmp:
        if os.environ.get("KERNELET_VM_NOLINK"):
            vm = test_nolink(tap, qemu, kernel, initrd)
        else:
            vm = test_link(tap, qemu, kernel, initrd, kerneletd, tmp)
    tap.report(vm.lines)
    return 0 if all(ok for _, ok, _ in tap.results) else 1


if __name__ == "__main__":
    sys.exit(main())
