#!/usr/bin/env python3
"""The guest driver virtio_kernelet.ko in a TCG guest with two virtio-kernelet devices.

One boot runs guest_driver_checks.sh (kernelet-guest-probe and sysfs) and answers its
requests for QMP actions: a policy change, one-shot device faults, device_del and
device_add. Checks, against values this test sets or computes itself: the devices and
their configuration, control requests through the driver, bulk echo integrity, contexts
per open file, every error path, signals and killed processes (nothing stays pinned),
config-change interrupts, a misbehaving and a broken device (EIO, reset, recovery),
module unload and reload, hot-unplug with a waiting process (ENODEV), and no oops.
Prints TAP.

usage: vm_guest_driver_test.py QEMU VMLINUZ INITRAMFS
"""
import errno
import os
import sys

from guest_vm import TAP, GuestVM

LIMIT = int(os.environ.get("KERNELET_VM_LIMIT", "400"))  # seconds for the boot; TCG on a loaded machine is slow
GIB = 1 << 30
DEV0 = dict(id="kl0", name="Test H100", sms=132, mem=80 * GIB, cc=(9, 0))
DEV1 = dict(id="kl1", name="Second", sms=16, mem=2 * GIB, cc=(8, 6))
MAX_BULK = 2 << 20
QUOTA = 256 << 20
ST_OK, ST_BAD_REQUEST, ST_BAD_OPCODE = 0, 1, 2

# Every error case of `kernelet-guest-probe errors` and what it must get: an errno name,
# or (0, device status).
ERRCASES = {
    "submit_null_arg": "EFAULT", "unknown_ioctl": "ENOTTY",
    "get_config_bad_pointer": "EFAULT", "req_addr_bad": "EFAULT",
    "req_addr_unmapped": "EFAULT", "resp_addr_unmapped": "EFAULT",
    "resp_addr_readonly": "EFAULT", "h2d_array_unmapped": "EFAULT",
    "h2d_buf_unmapped": "EFAULT", "h2d_buf_kernel_address": "EFAULT",
    "h2d_buf_wraps_around": "EFAULT", "d2h_buf_readonly": "EFAULT",
    "h2d_buf_readonly_is_fine": ST_OK, "req_shorter_than_header": "EINVAL",
    "hdr_length_disagrees": "EINVAL", "xfer_flag_from_user": "EINVAL",
    "resp_below_header": "EINVAL", "queue_2": "EINVAL", "queue_huge": "EINVAL",
    "unknown_submit_flag": "EINVAL", "zero_length_buffer": "EINVAL",
    "req_above_max": "E2BIG", "resp_above_max": "E2BIG", "too_many_buffers": "E2BIG",
    "bulk_total_above_max": "E2BIG", "bulk_buffer_huge": "E2BIG",
    "launch_opcode_on_request_queue": ST_BAD_OPCODE, "info_on_launch_ring": ST_BAD_OPCODE,
    "unknown_opcode": ST_BAD_OPCODE, "bulk_on_get_info": ST_BAD_REQUEST,
    "valid_request_after_all": ST_OK,
}
OOPS_MARKERS = ("Oops", "BUG:", "WARNING:", "Call Trace", "general protection",
                "Kernel panic", "KERNELET-MODULE-FAILED")


def device_arg(d):
    return (f"virtio-kernelet-pci,id={d['id']},gpu-name={d['name']},gpu-sms={d['sms']},"
            f"gpu-mem={d['mem']},gpu-cc-major={d['cc'][0]},gpu-cc-minor={d['cc'][1]}")


def on_ask(qmp, words):
    """The guest's requests for host actions."""
    action, args = words[0], words[1:]
    path = f"/machine/peripheral/{args[0]}"
    if action == "qom-set":
        qmp.cmd("qom-set", path=path, property=args[1], value=int(args[2]))
    elif action == "fault":
        qmp.cmd("qom-set", path=path, property="x-fault", value=args[1])
    elif action == "device_del":
        qmp.events.clear()
        qmp.cmd("device_del", id=args[0])
        if qmp.wait_event("DEVICE_DELETED", 60, device=args[0]) is None:
            raise RuntimeError("no DEVICE_DELETED event within 60 s")
    elif action == "device_add":
        qmp.cmd("device_add", driver="virtio-kernelet-pci", id=args[0], **{
            "gpu-name": DEV1["name"], "gpu-sms": DEV1["sms"], "gpu-mem": DEV1["mem"],
            "gpu-cc-major": DEV1["cc"][0], "gpu-cc-minor": DEV1["cc"][1]})
    else:
        raise RuntimeError(f"unknown action {action}")


def one(vm, prefix, match=None):
    """The first line with `prefix` whose fields include `match`, or {}."""
    for d in vm.find(prefix):
        if all(d.get(k) == v for k, v in (match or {}).items()):
            return d
    return {}


def num(d, key, default=-1):
    try:
        return int(d.get(key, default), 0)
    except ValueError:
        return default


def check_devices(t, vm):
    devs = vm.find("DEVS")
    t.check("both devices appear as /dev/kernelet0 and /dev/kernelet1",
            devs and set(devs[0].values()) == {"kernelet0", "kernelet1"}, str(devs))
    for idx, d in ((0, DEV0), (1, DEV1)):
        s = one(vm, "SYSFS", {0: f"kernelet{idx}"})
        want = {"name": d["name"].replace(" ", "_"), "sms": str(d["sms"]),
                "mem": str(d["mem"]), "cc": "%d.%d" % d["cc"], "version": "0.2",
                "max_bulk": str(MAX_BULK), "generation": "1"}
        t.check(f"kernelet{idx} sysfs shows the -device values {want}",
                all(s.get(k) == v for k, v in want.items()), str(s))
        c = one(vm, "CONFIG", {"dev": f"/dev/kernelet{idx}"})
        want = {"index": str(idx), "sms": str(d["sms"]), "mem": str(d["mem"]),
                "cc": "%d.%d" % d["cc"], "version": "0.2", "max_bulk": str(MAX_BULK),
                "max_request": "65536", "max_bufs": "16", "flags": "0x2"}
        t.check(f"kernelet{idx} GET_CONFIG matches", all(c.get(k) == v for k, v in want.items())
                and num(c, "context") > 0, str(c))


def check_requests(t, vm):
    for what in ("HELLO", "INFO"):
        h = vm.find(what)
        t.check(f"{what} through the driver answers with the device's GPU",
                h and h[0].get("rc") == "0" and h[0].get("status") == "0"
                and h[0].get("sms") == str(DEV0["sms"]) and h[0].get("mem") == str(DEV0["mem"])
                and h[0].get("weight") == "100", str(h[:1]))
    s = vm.find("STATS")
    t.check("GET_STATS counts the two requests before it, no errors",
            s and s[0].get("rc") == "0" and num(s[0], "requests") >= 3
            and s[0].get("errors") == "0", str(s[:1]))
    e = vm.find("ECHO")
    t.check("bulk echo of 8 MiB in 1 MiB chains: checksums and every byte right",
            e and e[0].get("bytes") == str(8 << 20) and e[0].get("chains") == "8"
            and e[0].get("errors") == "0" and e[0].get("checksum") == "ok"
            and e[0].get("data") == "ok", str(e[:1]))
    p = one(vm, "PARALLEL")
    ones = vm.find("PARALLEL-ONE")
    t.check("three processes echo at once, each gets its own data back",
            p.get("failed") == "0" and len(ones) == 3
            and all(o.get("data") == "ok" and o.get("checksum") == "ok" for o in ones),
            f"{p} {ones}")
    c = one(vm, "CONTEXTS")
    t.check("each open file is its own context, stamped on its requests",
            c.get("distinct") == "yes" and c.get("match") == "yes" and c.get("open") == "3",
            str(c))
    c = one(vm, "CONTEXT-CLOSE")
    t.check("closing two files sends two CONTEXT_CLOSE (device saw 2 echoes + 2 closes + "
            "GET_STATS)", c.get("device_requests_delta") == "5" and c.get("open") == "1", str(c))


def check_errors(t, vm):
    seen = {}
    for line in vm.lines:
        if line.startswith("ERRCASE "):
            w = line.split()
            seen[w[1]] = dict(x.partition("=")[::2] for x in w[2:] if "=" in x)
    for name, want in ERRCASES.items():
        got = seen.get(name, {})
        if isinstance(want, str):
            ok = got.get("rc") == want
        else:
            ok = got.get("rc") == "0" and got.get("status") == str(want)
        t.check(f"error path {name} -> {want}", ok, str(got))
    t.check("no error case the test does not know", set(seen) <= set(ERRCASES),
            str(set(seen) - set(ERRCASES)))
    s = one(vm, "ERRORS")
    t.check("nothing stays pinned after the error cases", s.get("pinned_after") == "0", str(s))


def check_signals_and_kills(t, vm):
    s = one(vm, "SIGNAL")
    t.check("a signal ends the wait with EINTR while the device still holds the pages",
            s.get("interrupted_rc") == "EINTR" and num(s, "pinned_during") >= 2 * 256
            and s.get("orphans_during") == "1", str(s))
    t.check("the interrupted request's pages are released once the device answers",
            s.get("inflight_after") == "0" and s.get("pinned_after") == "0"
            and s.get("orphans_after") == "0", str(s))
    k = one(vm, "SIGNAL-KILLABLE")
    t.check("with KERNELET_SUBMIT_F_KILLABLE the same signal does not end the wait",
            k.get("rc") == "0" and k.get("checksum") == "ok" and k.get("data") == "ok", str(k))
    k = one(vm, "KILLTEST")
    t.check("8 processes killed while the device held their 1 MiB echoes",
            k.get("killed") == "8" and num(k, "pinned_during") > 0
            and num(k, "orphans_during") >= 1, str(k))
    t.check("after the device answered: no chain, pinned page, orphan or context left",
            all(k.get(f) == "0" for f in ("inflight_after", "pinned_after", "orphans_after",
                                          "contexts_after")), str(k))
    f = one(vm, "FLOOD")
    t.check("300 held requests from 300 processes: the ring (256) fills, the rest wait, "
            "all answered", f.get("ok") == "300" and f.get("max_inflight") == "256"
            and f.get("inflight_after") == "0", str(f))
    drop_kb = num(k, "memfree_before_kb") - num(k, "memfree_after_kb")
    t.check("free memory back within 4 MiB of before (8 x 2 MiB were pinned)",
            num(k, "memfree_before_kb") > 0 and drop_kb < 4096, f"dropped {drop_kb} KiB")


def check_config_and_faults(t, vm):
    c = one(vm, "CONFIGCHANGE")
    t.check("mem-quota set over QMP reaches sysfs via a config-change interrupt",
            c.get("mem") == str(QUOTA) and num(c, "gen_after") > num(c, "gen_before") > 0,
            str(c))
    for f in ("short-used", "long-used", "wrong-id", "bad-length"):
        bad, good = one(vm, "REQUEST", {0: f}), one(vm, "REQUEST", {0: "after-" + f})
        t.check(f"device fault {f}: EIO, and the next request works",
                bad.get("rc") == "EIO" and good.get("rc") == "0" and good.get("status") == "0",
                f"{bad} {good}")
    f = vm.find("FAILED-COUNTER")
    t.check("the driver counted the four failures", f and f[0].get(0) == "4", str(f))
    bad, good = one(vm, "REQUEST", {0: "broken"}), one(vm, "REQUEST", {0: "after-broken"})
    held = one(vm, "RESET-HOLD")
    t.check("device declares itself broken: the request that found it so gets EIO",
            bad.get("rc") == "EIO", str(bad))
    t.check("... and so does a request the device was holding", held.get("rc") == "EIO",
            str(held))
    r = one(vm, "RESETS")
    t.check("the driver reset the device once and the next request works",
            r.get("resets") == "1" and good.get("rc") == "0" and good.get("status") == "0"
            and r.get("inflight") == "0" and r.get("pinned") == "0", f"{r} {good}")


def check_reload_and_unplug(t, vm):
    busy, rm, ins = one(vm, "RMMOD-BUSY"), one(vm, "RMMOD"), one(vm, "INSMOD")
    t.check("rmmod refused while /dev/kernelet0 is open", busy.get("rc") not in (None, "0"),
            str(busy))
    t.check("rmmod succeeds once closed and the devices are gone",
            rm.get("rc") == "0" and rm.get("devs") == "" and 2 not in rm, str(rm))
    t.check("insmod brings both devices back", ins.get("rc") == "0" and
            ins.get("devs") == "kernelet0" and ins.get(2) == "kernelet1", str(ins))
    configs = vm.find("CONFIG")
    t.check("after reload kernelet1 is the second device again, config generation 1",
            len(configs) >= 3 and configs[2].get("sms") == str(DEV1["sms"])
            and configs[2].get("generation") == "1", str(configs[2:3]))
    hellos = vm.find("HELLO")
    t.check("requests work after reload", len(hellos) >= 2 and hellos[1].get("rc") == "0",
            str(hellos[1:2]))
    h, a = one(vm, "DEL-HOLD"), one(vm, "DEL-HOLD-AFTER")
    t.check("device_del while a process waits on it: the waiter gets ENODEV",
            h.get("rc") == "ENODEV", str(h))
    t.check("... and the same open file gets ENODEV afterwards",
            a.get("submit") == "ENODEV" and a.get("config") == "ENODEV", str(a))
    d = one(vm, "AFTER-DEL")
    t.check("after device_del: kernelet1 gone, kernelet0 stays, nothing pinned or in flight",
            d.get("devs") == "kernelet0" and d.get("pinned") == "0" and d.get("inflight") == "0",
            str(d))
    echoes = vm.find("ECHO")
    t.check("kernelet0 unaffected by the unplug of kernelet1",
            len(echoes) >= 2 and echoes[1].get("data") == "ok"
            and echoes[1].get("checksum") == "ok", str(echoes[1:2]))
    t.check("device_add: the device comes back as kernelet1",
            len(configs) >= 4 and configs[3].get("dev") == "/dev/kernelet1"
            and configs[3].get("sms") == str(DEV1["sms"]), str(configs[3:4]))


def main():
    qemu, kernel, initrd = sys.argv[1:4]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "guest_driver_checks.sh")) as f:
        script = f.read()
    vm = GuestVM(qemu, kernel, initrd, script, [device_arg(DEV0), device_arg(DEV1)])
    rc = vm.run(on_ask, LIMIT)
    t = TAP()
    t.check("guest ran the checks to the end and powered off",
            "KERNELET-EXIT 0" in vm.lines and rc == 0, f"qemu rc {rc} after {vm.elapsed:.0f} s")
    check_devices(t, vm)
    check_requests(t, vm)
    check_errors(t, vm)
    check_signals_and_kills(t, vm)
    check_config_and_faults(t, vm)
    check_reload_and_unplug(t, vm)
    harness = [l for l in vm.lines if l.startswith("TEST-HARNESS")]
    t.check("every QMP action the guest asked for succeeded", not harness, str(harness))
    oops = [l for l in vm.lines if any(m in l for m in OOPS_MARKERS)]
    t.check("no oops, BUG, WARNING or call trace in the console and dmesg", not oops,
            str(oops[:5]))
    print(f"# total {vm.elapsed:.1f} s")
    return t.report(vm.lines)


if __name__ == "__main__":
    sys.exit(main())
