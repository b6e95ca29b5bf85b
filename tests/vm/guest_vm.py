"""A Kernelet test guest under TCG, driven from a test: QEMU with the guest's serial
console on stdin/stdout and QMP on a Unix socket.

The guest runs a shell script (kernel command line, see vm-images/init). The script
talks to the test over the console: a line "KERNELET-ASK <action> <args>" asks the test
to do something over QMP; the test answers with the line "ACK <action>" on the console,
which the script reads from its standard input.
"""
import base64
import json
import os
import queue
import socket
import subprocess
import tempfile
import threading
import time


class QMP:
    """QMP over a Unix socket; events are kept in `events`."""

    def __init__(self, path, timeout=30):
        self.events = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.reader = self.sock.makefile("r")
        self._read()
        self.cmd("qmp_capabilities")

    def _read(self):
        while True:
            line = self.reader.readline()
            if not line:
                raise RuntimeError("QMP connection closed")
            msg = json.loads(line)
            if "event" in msg:
                self.events.append(msg)
                continue
            return msg

    def cmd(self, name, **args):
        self.sock.sendall((json.dumps({"execute": name, "arguments": args}) + "\n").encode())
        reply = self._read()
        if "error" in reply:
            raise RuntimeError(f"{name}: {reply['error']['desc']}")
        return reply["return"]

    def wait_event(self, name, timeout, **data):
        """Waits for an event called `name` whose data include `data` (polling QMP with a
        harmless command so that events are read)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.events:
                if e["event"] == name and all(e.get("data", {}).get(k) == v
                                              for k, v in data.items()):
                    return e
            self.cmd("query-status")
            time.sleep(0.2)
        return None


def newc_archive(files):
    """An uncompressed cpio (newc) archive holding `files` ({name: bytes}, mode 0755)."""
    out = bytearray()

    def entry(name, data, mode):
        fields = [0, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields))
        out.extend(name.encode() + b"\0")
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))

    for name, data in files.items():
        entry(name, data, 0o100755)
    entry("TRAILER!!!", b"", 0)
    return bytes(out)


def initrd_with_script(initrd, script, path):
    """Writes to `path` the image's initramfs with /kernelet-test.sh appended as a second
    archive (the kernel unpacks concatenated archives; each starts 4-byte aligned): the
    kernel command line is too short to carry a long script."""
    with open(initrd, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data + b"\0" * (-len(data) % 4))
        f.write(newc_archive({"kernelet-test.sh": script.encode()}))


class GuestVM:
    """QEMU running the test image with `script` as the guest's command."""

    def __init__(self, qemu, kernel, initrd, script, devices, memory=512, accel="tcg",
                 firmware=None):
        self.dir = tempfile.TemporaryDirectory(prefix="kernelet-vm-")
        qmp_path = os.path.join(self.dir.name, "qmp.sock")
        initrd_path = os.path.join(self.dir.name, "initramfs.img")
        initrd_with_script(initrd, script, initrd_path)
        initrd = initrd_path
        cmd64 = base64.b64encode(b"sh /kernelet-test.sh").decode()
        argv = [qemu, "-machine", "pc", "-accel", accel, "-m", str(memory), "-nodefaults",
                "-vga", "none", "-nic", "none", "-display", "none", "-serial", "stdio",
                "-no-reboot", "-kernel", kernel, "-initrd", initrd,
                "-qmp", f"unix:{qmp_path},server=on,wait=off",
                "-append", f"console=ttyS0 panic=-1 kernelet.cmd64={cmd64}"]
        if firmware:  # where QEMU finds its BIOS and option ROMs on a machine without them
            argv += ["-L", firmware]
        for d in devices:
            argv += ["-device", d]
        self.start = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self.lines = []
        self.queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.qmp = QMP(qmp_path)

    def _pump(self):
        for line in self.proc.stdout:
            self.queue.put(line.rstrip("\r\n"))
        self.queue.put(None)

    def run(self, on_ask, limit):
        """Collects console lines until the guest powers off or `limit` seconds pass;
        calls on_ask(words) for every KERNELET-ASK line and acknowledges it."""
        while True:
            left = limit - (time.monotonic() - self.start)
            if left <= 0:
                self.lines.append("TEST-HARNESS: time limit reached")
                break
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                break
            self.lines.append(line)
            if line.startswith("KERNELET-ASK "):
                words = line.split()[1:]
                try:
                    on_ask(self.qmp, words)
                except Exception as e:  # reported, and the guest goes on
                    self.lines.append(f"TEST-HARNESS: action {words} failed: {e!r}")
                self.proc.stdin.write(f"ACK {words[0]}\n")
                self.proc.stdin.flush()
        return self.finish()

    def finish(self):
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.elapsed = time.monotonic() - self.start
        log = os.environ.get("KERNELET_VM_CONSOLE")
        if log:  # the whole console, for a closer look
            with open(log, "w") as f:
                f.write("\n".join(self.lines) + "\n")
        return self.proc.returncode

    def find(self, prefix):
        """Console lines starting with `prefix` followed by a space, as key=value dicts;
        words without '=' are kept under their position."""
        found = []
        for line in self.lines:
            if line.startswith(prefix + " "):
                d = {}
                for i, w in enumerate(line.split()[1:]):
                    k, eq, v = w.partition("=")
                    d[k if eq else i] = v if eq else w
                found.append(d)
        return found


def start_kerneletd(kerneletd, sock, args, log):
    """kerneletd --socket sock with args, its output to log; returns once the socket is
    there or the daemon ended (a test then checks which)."""
    proc = subprocess.Popen([kerneletd, "--socket", sock, *args], stdout=log,
                            stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.exists(sock) or proc.poll() is not None:
            break
        time.sleep(0.05)
    return proc


class TAP:
    """Collects named checks and prints them as TAP."""

    def __init__(self):
        self.results = []

    def check(self, name, ok, detail=""):
        self.results.append((name, bool(ok), detail))

    def report(self, console, tail=60):
        print(f"1..{len(self.results)}")
        for i, (name, ok, detail) in enumerate(self.results, 1):
            print(f"{'ok' if ok else 'not ok'} {i} - {name}")
            if not ok and detail:
                print(f"# {detail}")
        failed = not all(ok for _, ok, _ in self.results)
        if failed:
            print(f"# guest console (last {tail} lines):")
            for line in console[-tail:]:
                print("#   " + line)
        return 1 if failed else 0
