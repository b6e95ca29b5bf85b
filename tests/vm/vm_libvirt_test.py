#!/usr/bin/env python3
"""The operator's path: a guest with virtio-kernelet started through libvirt from the
domain definition vm-images/kernelet-guest.xml, its policy set with
`virsh qemu-monitor-command`.

The test installs nothing. It starts libvirtd (and virtlogd) when they are not running and
leaves them running, as a service would be. The definition is used as shipped, with only
what must differ here rewritten: a unique name, TCG (nested KVM hangs on these machines),
the paths of our QEMU, the test image and a private kerneletd --backend emu, and the
guest's serial console into a file the test reads.

Checks (TAP): the domain defines and starts; the guest sees PCI 1af4:1079 bound as virtio
device 57 and its configuration space says the device is linked to the daemon; a CUDA
program verifies in the guest (when the image has the bench programs); the domain's
memfd RAM is shared with the daemon; the daemon lists the
VM as a tenant under the domain's name; qom-set through `virsh qemu-monitor-command` (QMP,
and qom-get through HMP) changes the device's properties and the daemon's policy
(kernelet-ctl --json); destroying the domain ends the tenant.

Skipped (exit 77) when libvirt is not installed or this user cannot manage
qemu:///system, with the reason on stdout.

usage: vm_libvirt_test.py QEMU VMLINUZ INITRAMFS KERNELETD KERNELET_CTL DOMAIN_XML
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

from guest_vm import initrd_with_script

QEMU, KERNEL, INITRD, KERNELETD, CTL, XML = sys.argv[1:7]
URI = "qemu:///system"
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
LIMIT = int(os.environ.get("KERNELET_VM_LIMIT", "300"))
HERE = os.path.dirname(os.path.abspath(__file__))

GUEST = r"""
if [ -x /opt/kernelet/bench/tea ]; then
  /opt/kernelet/bench/tea --small 2>&1 | grep '^RESULT'
else
  echo "KERNELET-NO-BENCH"
fi
%(read_config)s
echo "KERNELET-LIBVIRT-READY"
sleep 3600
"""

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))
    return ok


def virsh(*args, timeout=120):
    return subprocess.run(["virsh", "-c", URI, *args], capture_output=True, text=True,
                          timeout=timeout)


def skip(reason):
    print(f"1..0 # SKIP {reason}")
    sys.exit(77)


def ensure_libvirtd():
    """Connects to qemu:///system, starting virtlogd and libvirtd first if need be."""
    if not shutil.which("virsh") or not shutil.which("libvirtd"):
        skip("libvirt is not installed (libvirt-daemon-system, libvirt-clients: "
             "scripts/packages.d/libvirt.txt, run scripts/bootstrap)")
    if virsh("uri", timeout=30).returncode == 0:
        return
    if os.geteuid() != 0:
        skip("libvirtd is not running and starting it needs root")
    for daemon in ("virtlogd", "libvirtd"):
        if subprocess.run(["pgrep", "-x", daemon], capture_output=True).returncode != 0:
            subprocess.run([daemon, "--daemon"], check=False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if virsh("uri", timeout=30).returncode == 0:
            return
        time.sleep(0.5)
    skip("libvirtd did not start or does not accept qemu:///system here: "
         + virsh("uri").stderr.strip())


def qemu_user():
    """The user libvirt runs QEMU as: user= in qemu.conf, else Debian's default."""
    try:
        with open("/etc/libvirt/qemu.conf") as f:
            m = re.search(r'^\s*user\s*=\s*"([^"]+)"', f.read(), re.M)
            if m:
                return m.group(1)
    except OSError:
        pass
    return "libvirt-qemu"


def domain_xml(name, tmp, sock, initrd, kernel, console):
    """The shipped definition with this run's name, TCG, paths and console file."""
    ET.register_namespace("qemu", QEMU_NS)
    tree = ET.parse(XML)
    dom = tree.getroot()
    dom.set("type", "qemu")
    dom.find("name").text = name
    os_el = dom.find("os")
    os_el.find("kernel").text = kernel
    os_el.find("initrd").text = initrd
    cmd64 = base64.b64encode(b"sh /kernelet-test.sh").decode()
    os_el.find("cmdline").text = f"console=ttyS0 panic=-1 kernelet.cmd64={cmd64}"
    devices = dom.find("devices")
    devices.find("emulator").text = os.path.abspath(QEMU)
    for tag in ("serial", "console"):
        for el in devices.findall(tag):
            devices.remove(el)
    serial = ET.SubElement(devices, "serial", type="file")
    ET.SubElement(serial, "source", path=console)
    for arg in dom.iter(f"{{{QEMU_NS}}}arg"):
        arg.set("value", re.sub(r"socket=[^,]*", f"socket={sock}", arg.get("value")))
    path = os.path.join(tmp, "domain.xml")
    tree.write(path)
    return path


def console_lines(path):
    try:
        with open(path, errors="replace") as f:
            return [l.rstrip("\r\n") for l in f]
    except OSError:
        return []


def wait_console(path, marker, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        lines = console_lines(path)
        if any(l.startswith(marker) for l in lines):
            return lines
        time.sleep(0.5)
    return console_lines(path)


def tenant(sock, name):
    r = subprocess.run([CTL, "--socket", sock, "--json"], capture_output=True, text=True)
    try:
        return next((t for t in json.loads(r.stdout)["tenants"] if t["name"] == name), None)
    except (ValueError, KeyError):
        return None


def qmp(name, command, **arguments):
    r = virsh("qemu-monitor-command", name, json.dumps({"execute": command,
                                                        "arguments": arguments}))
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"error": r.stderr.strip()}


def check_guest(lines):
    pci = [l for l in lines if l.startswith("KERNELET-PCI ") and l.endswith(" 0x1af4 0x1079")]
    virtio = [l for l in lines if l.startswith("KERNELET-VIRTIO ") and l.endswith(" 0x0039")]
    check("the guest sees the device (PCI 1af4:1079, virtio device 57)", pci and virtio,
          "\n".join(lines[-40:]))
    cfg = next((l.split() for l in lines if l.startswith("KERNELET-CFG ")), None)
    linked = cfg is not None and int(cfg[4], 0) & 1
    check("the device's configuration space says it is linked to kerneletd", linked, str(cfg))
    if any(l == "KERNELET-NO-BENCH" for l in lines):
        return
    check("a CUDA program verifies in the libvirt guest (tea --small)",
          any(re.match(r"RESULT name=tea .*verified=yes", l) for l in lines),
          "\n".join(lines[-40:]))


def check_shared_ram(qemu_log):
    """<memoryBacking> memfd/shared reached QEMU: the device offered guest RAM to kerneletd.
    (Whether a given copy then goes zero-copy depends on the guest's pages being contiguous
    in host memory: qom-get bulk-zero-copy / bulk-staged count each way.)"""
    text = _tail(qemu_log, 200)
    check("guest RAM is a shared memfd the device hands to kerneletd",
          re.search(r"zero-copy: [1-9][0-9]* guest RAM block\(s\) shared with kerneletd", text),
          text[-1500:])


def check_policy(name, sock):
    path = "/machine/peripheral/kernelet0"
    set_w = qmp(name, "qom-set", path=path, property="weight", value=300)
    set_p = qmp(name, "qom-set", path=path, property="priority", value=3)
    got = qmp(name, "qom-get", path=path, property="weight")
    check("virsh qemu-monitor-command qom-set/qom-get (QMP)",
          "return" in set_w and "return" in set_p and got.get("return") == 300,
          f"{set_w} {set_p} {got}")
    hmp = virsh("qemu-monitor-command", "--hmp", name, f"qom-get {path} priority")
    check("virsh qemu-monitor-command --hmp qom-get", hmp.stdout.strip() == "3",
          hmp.stdout + hmp.stderr)
    bad = qmp(name, "qom-set", path=path, property="weight", value=0)
    check("an out-of-range value is refused over virsh", "error" in bad, str(bad))
    t = tenant(sock, name)
    check("the policy reached kerneletd (kernelet-ctl --json)",
          t and t["policy"]["weight"] == 300 and t["policy"]["priority"] == 3, str(t))


def run(tmp):
    name = f"kernelet-test-{os.getpid()}"
    sock = os.path.join(tmp, "kerneletd.sock")
    console = os.path.join(tmp, "console.log")
    with open(os.path.join(HERE, "guest_read_config.sh")) as f:
        script = GUEST % {"read_config": f.read()}
    kernel = os.path.join(tmp, "vmlinuz")
    shutil.copy(KERNEL, kernel)
    initrd = os.path.join(tmp, "initramfs.img")
    initrd_with_script(INITRD, script, initrd)
    log = open(os.path.join(tmp, "kerneletd.log"), "w")
    kd = subprocess.Popen([KERNELETD, "--socket", sock, "--backend", "emu",
                           "--admin-user", qemu_user()], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        xml = domain_xml(name, tmp, sock, initrd, kernel, console)
        r = virsh("define", xml)
        if not check("virsh define", r.returncode == 0, r.stderr):
            return
        try:
            r = virsh("start", name)
            qlog = f"/var/log/libvirt/qemu/{name}.log"
            if not check("virsh start", r.returncode == 0, r.stderr + _tail(qlog)):
                return
            t = tenant(sock, name)
            check("kerneletd lists the VM under the domain's name",
                  t is not None and t["kind"] == "vm", str(t))
            lines = wait_console(console, "KERNELET-LIBVIRT-READY", LIMIT)
            check("the guest ran its checks", "KERNELET-LIBVIRT-READY" in lines,
                  "\n".join(lines[-30:]) + _tail(qlog))
            check_guest(lines)
            check_shared_ram(qlog)
            check_policy(name, sock)
            r = virsh("destroy", name)
            gone = r.returncode == 0 and _wait(lambda: tenant(sock, name) is None, 10)
            check("virsh destroy ends the VM's tenant in kerneletd", gone, r.stderr)
        finally:
            virsh("destroy", name)
            virsh("undefine", name)
    finally:
        kd.kill()
        kd.wait()
        log.close()


def _tail(path, n=20):
    try:
        with open(path, errors="replace") as f:
            return "\n" + "".join(f.readlines()[-n:])
    except OSError:
        return ""


def _wait(pred, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return False


def main():
    ensure_libvirtd()
    # libvirt runs QEMU as another user: the directory must be readable by it.
    tmp = tempfile.mkdtemp(prefix="kernelet-libvirt-")
    os.chmod(tmp, 0o755)
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and detail:
            print("\n".join("# " + l for l in str(detail).splitlines()[-40:]))
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
