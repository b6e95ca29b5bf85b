#!/usr/bin/env python3
"""kernelet-ctl's machine-readable outputs against a running kerneletd --backend emu.

  --json status    one JSON object (python's json parses it), every field of the documented
                   schema with its type; a tenant name with a quote and a backslash comes
                   back unchanged; set is reflected; --watch --json gives one object a line
                   with utilisation measured between frames
  metrics          Prometheus text format 0.0.4: names, HELP and TYPE once per family and
                   before its samples, counters named *_total, label values escaped (the
                   same name decodes back), one sample per tenant and metric, no duplicates
  metrics --listen GET /metrics answers 200 with the format's content type, other paths
                   404; with the daemon gone it says kernelet_up 0, as does the one-shot
                   form (exit status 1)
With a CUDA program given, it runs through libcuda as a second tenant so that launches,
GPU time and utilisation are non-zero while the outputs are read.

usage: ctl_output_test.py KERNELETD KERNELET_CTL CTL_TENANT [LIBCUDA_DIR PROGRAM ARGS...]
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

KD, CTL, TENANT = sys.argv[1:4]
LIBCUDA = sys.argv[4] if len(sys.argv) > 5 else None
PROGRAM = sys.argv[5:] if LIBCUDA else None
ODD_NAME = 'odd "quoted" back\\slash'

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))
    return ok


def ctl(sock, *args, timeout=30):
    return subprocess.run([CTL, "--socket", sock, *args], capture_output=True, text=True,
                          timeout=timeout)


def status_json(sock):
    r = ctl(sock, "--json", "status")
    return json.loads(r.stdout)


TENANT_FIELDS = {
    "id": int, "name": str, "kind": str, "pid": int, "uid": int, "gpu_time_ns": int,
    "memory_used_bytes": int, "memory_quota_bytes": int, "queued": int, "launched": int,
    "completed": int, "coscheduled_slices": int, "requests": int, "errors": int,
    "faulted": bool, "streams": int, "bytes_copied": int, "policy": dict, "isolated": bool,
}


def schema_problems(doc):
    """What in `doc` differs from the documented schema (docs/OPERATORS.md)."""
    bad = []
    d = doc.get("daemon", {})
    if not (isinstance(d.get("backend"), str) and isinstance(d.get("policy"), str)
            and isinstance(d.get("uptime_s"), (int, float)) and isinstance(d.get("tenants"), int)):
        bad.append(f"daemon {d}")
    s = doc.get("scheduler", {})
    for k in ("decisions", "coscheduled_pairs", "solo", "slices", "kernels_completed"):
        if not isinstance(s.get(k), int):
            bad.append(f"scheduler.{k}")
    for t in doc.get("tenants", []):
        for k, ty in TENANT_FIELDS.items():
            if not isinstance(t.get(k), ty) or (ty is int and isinstance(t.get(k), bool)):
                bad.append(f"tenant {t.get('id')}.{k} = {t.get(k)!r}")
        u = t.get("utilisation_percent", "missing")
        if not (u is None or isinstance(u, (int, float))):
            bad.append(f"utilisation_percent {u!r}")
        p = t.get("policy", {})
        if not (isinstance(p.get("slicing"), bool) and all(
                isinstance(p.get(k), int) for k in ("weight", "priority", "max_inflight"))
                and isinstance(p.get("kernel_time_limit_s"), (int, float))):
            bad.append(f"policy {p}")
    return bad


# ---- Prometheus text format 0.0.4 ------------------------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(rf"^({NAME})(?:\{{((?:{LABEL},?)*)\}})? (\S+)$")


def unescape(v):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), v)


def parse_exposition(text):
    """{(name, labels tuple): value}, raising ValueError on anything outside the format."""
    families, samples = {}, {}
    helped = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            if name in helped or not re.fullmatch(NAME, name):
                raise ValueError(f"HELP twice or bad name: {line}")
            helped.add(name)
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if name in families or kind not in ("counter", "gauge"):
                raise ValueError(f"bad TYPE: {line}")
            if kind == "counter" and not name.endswith("_total"):
                raise ValueError(f"counter not named *_total: {name}")
            families[name] = kind
        elif line.startswith("#") or not line:
            raise ValueError(f"unexpected line: {line!r}")
        else:
            m = SAMPLE.match(line)
            if not m:
                raise ValueError(f"malformed sample: {line!r}")
            name = m.group(1)
            if name not in families or name not in helped:
                raise ValueError(f"sample before its HELP/TYPE: {line}")
            labels = tuple((k, unescape(v)) for k, v in re.findall(LABEL, m.group(2) or ""))
            if (name, labels) in samples:
                raise ValueError(f"duplicate series: {line}")
            samples[(name, labels)] = float(m.group(5))
    return families, samples


def tenant_series(samples, name, tenant_name):
    return [v for (n, labels), v in samples.items()
            if n == name and dict(labels).get("name") == tenant_name]


# ---- the daemon and its tenants ---------------------------------------------------------

def start_daemon(sock, log):
    kd = subprocess.Popen([KD, "--socket", sock, "--backend", "emu"], stdout=log,
                          stderr=subprocess.STDOUT)
    for _ in range(400):
        if os.path.exists(sock) or kd.poll() is not None:
            break
        time.sleep(0.05)
    return kd


def wait_for(pred, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.2)
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_json(sock, program_running):
    doc = status_json(sock)
    check("--json status parses and follows the schema", not schema_problems(doc),
          "; ".join(schema_problems(doc)))
    check("--json: backend emu, sample interval 0.5 s",
          doc["daemon"]["backend"] == "emu" and abs(doc["sample_interval_s"] - 0.5) < 0.2,
          str(doc["daemon"]))
    odd = [t for t in doc["tenants"] if t["name"] == ODD_NAME]
    check("--json: a name with quotes and a backslash comes back unchanged", len(odd) == 1,
          str([t["name"] for t in doc["tenants"]]))
    if program_running:
        busy = [t for t in doc["tenants"] if t["launched"] > 0]
        check("--json: the CUDA program's launches and GPU time are counted",
              busy and busy[0]["gpu_time_ns"] > 0 and busy[0]["kind"] == "process",
              str(doc["tenants"]))
    return odd[0]["id"] if odd else None


def check_set_and_watch(sock, tid, program_running):
    r = ctl(sock, "set", str(tid), "weight=300", "priority=2", "quota=64M", "slicing=off",
            "time-limit=2.5")
    doc = status_json(sock)
    t = next((t for t in doc["tenants"] if t["id"] == tid), {})
    check("set is reflected in --json", r.returncode == 0 and t.get("policy") == {
        "weight": 300, "priority": 2, "max_inflight": t["policy"]["max_inflight"],
        "slicing": False, "kernel_time_limit_s": 2.5}
        and t.get("memory_quota_bytes") == 64 << 20, str(t))
    try:
        out = subprocess.run([CTL, "--socket", sock, "--json", "--watch", "0.3"],
                             capture_output=True, text=True, timeout=1.6).stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    frames = [json.loads(line) for line in out.splitlines() if line.strip()]
    measured = [t["utilisation_percent"] for f in frames for t in f["tenants"]]
    check("--watch 0.3 --json: one object a line, several frames, utilisation measured",
          len(frames) >= 3 and all(u is not None and u >= 0 for u in measured)
          and all(abs(f["sample_interval_s"] - 0.3) < 0.2 for f in frames), out[-2000:])
    if program_running:
        check("--watch: the busy tenant shows a utilisation above 0",
              any(t["utilisation_percent"] > 0 for f in frames for t in f["tenants"]), out[-2000:])


def check_metrics(sock):
    r = ctl(sock, "metrics")
    try:
        families, samples = parse_exposition(r.stdout)
        err = ""
    except ValueError as e:
        families, samples, err = {}, {}, str(e)
    check("metrics: valid text format (HELP/TYPE, names, escaping, no duplicates)",
          r.returncode == 0 and not err, err + "\n" + r.stdout[:1500])
    check("metrics: kernelet_up 1 and kernelet_info with the backend",
          samples.get(("kernelet_up", ())) == 1 and
          samples.get(("kernelet_info", (("backend", "emu"), ("policy", "kernelet")))) == 1,
          r.stdout[:800])
    per_tenant = [n for n in families if n.startswith("kernelet_tenant_")]
    missing = [n for n in per_tenant if len(tenant_series(samples, n, ODD_NAME)) != 1]
    check("metrics: every per-tenant metric once for the tenant, its name decoded back",
          len(per_tenant) >= 15 and not missing, f"missing {missing}")
    want = {"kernelet_tenant_gpu_seconds_total": "counter",
            "kernelet_tenant_memory_used_bytes": "gauge",
            "kernelet_tenant_coscheduled_slices_total": "counter",
            "kernelet_tenant_errors_total": "counter",
            "kernelet_scheduler_coscheduled_pairs_total": "counter"}
    check("metrics: utilisation, memory, pairs and errors families with their types",
          all(families.get(k) == v for k, v in want.items()), str(families))
    check("metrics: the set weight and kernel time limit are exported",
          tenant_series(samples, "kernelet_tenant_weight", ODD_NAME) == [300.0] and
          tenant_series(samples, "kernelet_tenant_kernel_time_limit_seconds", ODD_NAME) ==
          [2.5])


def scrape(port, path="/metrics"):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, None, ""


def check_listen(sock, kd):
    port = free_port()
    server = subprocess.Popen([CTL, "--socket", sock, "metrics", "--listen",
                               f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    try:
        got = wait_for(lambda: _try_scrape(port), 10)
        status, ctype, body = got if got else (None, None, "")
        check("metrics --listen: GET /metrics answers 200 in the text format",
              status == 200 and ctype == "text/plain; version=0.0.4; charset=utf-8"
              and "kernelet_up 1" in body and parse_exposition(body), f"{status} {ctype}")
        check("metrics --listen: other paths are 404", scrape(port, "/")[0] == 404)
        kd.terminate()
        kd.wait(timeout=20)
        status, _, body = scrape(port)
        check("metrics --listen: daemon gone -> kernelet_up 0", status == 200 and
              "kernelet_up 0" in body, body)
    finally:
        server.terminate()
        server.wait(timeout=10)
    r = ctl(sock, "metrics")
    check("metrics without a daemon: kernelet_up 0, exit status 1",
          r.returncode == 1 and "kernelet_up 0" in r.stdout, r.stdout)


def _try_scrape(port):
    try:
        return scrape(port)
    except (urllib.error.URLError, ConnectionError, OSError):
        return None


def main():
    with tempfile.TemporaryDirectory(prefix="kernelet-ctl-") as tmp:
        sock = os.path.join(tmp, "k.sock")
        log = open(os.path.join(tmp, "kd.log"), "w")
        kd = start_daemon(sock, log)
        holder = subprocess.Popen([TENANT, sock, ODD_NAME], stdin=subprocess.PIPE)
        prog = None
        try:
            if PROGRAM:
                env = dict(os.environ, KERNELET_SOCKET=sock, LD_LIBRARY_PATH=LIBCUDA)
                prog = subprocess.Popen(PROGRAM, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
            ready = wait_for(lambda: [t for t in status_json(sock)["tenants"]
                                      if t["name"] == ODD_NAME and
                                      (not prog or any(x["gpu_time_ns"] for x in
                                                       status_json(sock)["tenants"]))], 60)
            check("the tenants appear", ready)
            running = bool(prog and prog.poll() is None)
            tid = check_json(sock, running)
            if tid is not None:
                check_set_and_watch(sock, tid, running)
                check_metrics(sock)
            table = ctl(sock, "status").stdout
            check("status table: header lines and the tenant's row",
                  "co-scheduled pairs" in table and "UTIL" in table and ODD_NAME in table, table)
            check_listen(sock, kd)
        finally:
            for p in (prog, holder, kd):
                if p and p.poll() is None:
                    p.kill()
                    p.wait()
            log.close()
            if not all(ok for _, ok, _ in results):
                print(open(os.path.join(tmp, "kd.log")).read()[-3000:], file=sys.stderr)
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and detail:
            print("\n".join("# " + l for l in str(detail).splitlines()[:40]))
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
