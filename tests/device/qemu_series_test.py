#!/usr/bin/env python3
"""QEMU's patch series (hw-virtio-kernelet/patches) against the pristine 10.0.2 tarball.

Checks, as TAP:
  - the committed generated patch (0001) is what qemu-series.py makes from the tree now;
  - every patch is in git format-patch form (From, Subject, a diff);
  - the whole series applies, in order, to the files of the pristine tarball with no
    fuzz and no offset (what "applies cleanly" means upstream);
  - the device files it creates equal the files in this repository.
The tarball is the one build-qemu.sh downloads into its cache (KERNELET_QEMU_CACHE, else
~/.cache/kernelet/qemu); without it the test is skipped (exit 77): nothing is downloaded
here, so the test stays fast and offline. Needs no QEMU build.

usage: qemu_series_test.py SOURCE_ROOT
"""
import difflib
import hashlib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.getcwd()
DEV = os.path.join(ROOT, "hw-virtio-kernelet")
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, DEV)
qemu_series = __import__("qemu-series")

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))


def source_env():
    """qemu-source.env's KEY=VALUE lines."""
    env = {}
    with open(os.path.join(DEV, "qemu-source.env")) as f:
        for line in f:
            key, eq, value = line.split("#")[0].strip().partition("=")
            if eq:
                env[key] = value
    return env


def tarball_path(env):
    cache = os.environ.get("KERNELET_QEMU_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kernelet", "qemu")
    return os.path.join(cache, "dl", env["tarball"])


def check_generated():
    with open(os.path.join(qemu_series.PATCHES, qemu_series.series_names()[0]), "rb") as f:
        committed = f.read()
    now = qemu_series.device_patch()
    diff = "".join(difflib.unified_diff(committed.decode(errors="replace").splitlines(True),
                                        now.decode(errors="replace").splitlines(True),
                                        "committed", "generated", n=1))
    check("0001 matches the device files in the tree", committed == now,
          "run hw-virtio-kernelet/qemu-series.py refresh\n" + diff[:3000])


def check_format():
    for name in qemu_series.series_names():
        with open(os.path.join(qemu_series.PATCHES, name), "rb") as f:
            text = f.read()
        ok = (text.startswith(b"From 0000000000000000000000000000000000000000 ")
              and b"\nFrom: " in text and b"\nSubject: [PATCH] " in text
              and b"\ndiff --git " in text and b"\n---\n" in text)
        check(f"{name} is in git format-patch form", ok)


def apply_series(tarball, tmp):
    """Extracts the files the series modifies and applies every patch; returns the tree."""
    tree = os.path.join(tmp, "tree")
    os.makedirs(tree)
    members = [f"qemu-{source_env()['qemu_version']}/{p}" for p in qemu_series.touched()]
    subprocess.run(["tar", "-C", tree, "-xJf", tarball, "--strip-components=1"] + members,
                   check=True)
    for name in qemu_series.series_names():
        path = os.path.join(qemu_series.PATCHES, name)
        r = subprocess.run(["patch", "-d", tree, "-p1", "--fuzz=0", "--batch", "-i", path],
                           capture_output=True, text=True)
        out = r.stdout + r.stderr
        clean = r.returncode == 0 and "offset" not in out and "fuzz" not in out
        check(f"{name} applies cleanly", clean, out.strip())
    return tree


def check_round_trip(tree):
    differ = []
    for src, dst in qemu_series.device_files():
        with open(os.path.join(ROOT, src), "rb") as a:
            want = a.read()
        try:
            with open(os.path.join(tree, dst), "rb") as b:
                got = b.read()
        except FileNotFoundError:
            got = None
        if got != want:
            differ.append(dst)
    check("the series creates the device files as they are in the tree", not differ,
          "differ: " + ", ".join(differ))


def main():
    env = source_env()
    tarball = tarball_path(env)
    if not os.path.exists(tarball):
        print(f"1..0 # SKIP {tarball} is absent (build-qemu.sh downloads it)")
        return 77
    with open(tarball, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    check_generated()
    check_format()
    check("the tarball is the pristine one (sha256)", digest == env["tarball_sha256"], digest)
    with tempfile.TemporaryDirectory(prefix="kernelet-series-") as tmp:
        check_round_trip(apply_series(tarball, tmp))
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and detail:
            print("\n".join("# " + l for l in detail.splitlines()))
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
