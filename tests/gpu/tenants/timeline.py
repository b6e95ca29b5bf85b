#!/usr/bin/env python3
"""Summarises a GPU timeline written by kerneletd's cuda backend (KERNELET_CUDA_TIMELINE):
lines "lane function blocks start_ns end_ns". Prints how much of the span the GPU was busy,
how long two different kernels overlapped, the gaps between launches, and per function the
launches, blocks and time.

  timeline.py FILE
"""
import collections
import statistics
import sys


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 5:
                rows.append((int(p[0]), p[1], int(p[2]), float(p[3]), float(p[4])))
    return rows


def sweep(rows):
    """Busy time (one launch or more) and overlap time (two different functions at once)."""
    events = []
    for lane, fn, _, s, e in rows:
        events.append((s, 1, fn))
        events.append((e, -1, fn))
    events.sort(key=lambda x: (x[0], x[1]))
    active = collections.Counter()
    busy = overlap = 0.0
    last = events[0][0] if events else 0
    for t, d, fn in events:
        kinds = sum(1 for v in active.values() if v > 0)
        if kinds >= 1:
            busy += t - last
        if kinds >= 2:
            overlap += t - last
        active[fn] += d
        last = t
    return busy, overlap


def summary(rows):
    if not rows:
        return "empty timeline"
    span = max(r[4] for r in rows) - min(r[3] for r in rows)
    busy, overlap = sweep(rows)
    out = [f"launches {len(rows)}, span {span / 1e6:.2f} ms, busy {busy / span:.1%}, "
           f"two kernels at once {overlap / span:.1%}"]
    by_fn = collections.defaultdict(list)
    for r in rows:
        by_fn[r[1]].append(r)
    for fn, rs in sorted(by_fn.items()):
        d = [r[4] - r[3] for r in rs]
        blocks = [r[2] for r in rs]
        out.append(f"  {fn}: {len(rs)} launches, median {statistics.median(blocks)} blocks, "
                   f"median {statistics.median(d) / 1e3:.1f} us, total {sum(d) / 1e6:.2f} ms")
    lanes = collections.defaultdict(list)
    for r in rows:
        lanes[r[0]].append(r)
    gaps = []
    for rs in lanes.values():
        rs.sort(key=lambda r: r[3])
        gaps += [b[3] - a[4] for a, b in zip(rs, rs[1:]) if b[3] >= a[4]]
    if gaps:
        gaps.sort()
        out.append(f"  gaps between launches of one lane: median {statistics.median(gaps) / 1e3:.1f} us,"
                   f" p90 {gaps[int(0.9 * (len(gaps) - 1))] / 1e3:.1f} us")
    return "\n".join(out)


if __name__ == "__main__":
    print(summary(load(sys.argv[1])))
