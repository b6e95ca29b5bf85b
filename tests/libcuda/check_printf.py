#!/usr/bin/env python3
"""Checks the output of bench/compat/printf through kerneletd: every line the kernels print
must appear exactly once, between the host's lines printed before and after the
synchronisation that ends them (the last ones at exit, after the last host line). The
expected lines are computed here from the program's formulas, not taken from any
output."""
import sys

THREADS = 8


def speak_lines():
    out = []
    for t in range(THREADS):
        big = 1000000007 * (t + 1)
        d = t * 1.25 + 0.5
        out.append("dev t=%d neg=%d big=%d u=%d hex=%#x c=%c d=%.3f e=%e g=%g w=[%5d] "
                   "l=[%-4d] s=%s lit=%s heap=%s"
                   % (t, -t, big, 4000000000 - t, 255 + t, chr(ord('a') + t), d,
                      1.0 / (t + 1), d * 1000.0, t, t, "kernelet", "literal", "on-the-heap"))
        out.append("func t=%d half=%.1f pct=100%%" % (t, t * 0.5))
    return out


def tagged_lines(phase):
    return ["phase %d t=%d v=%d" % (phase, t, t * t + phase) for t in range(THREADS)]


def check_between(lines, first, last, expected):
    """Each expected line once, between the host's lines first and last (None: the end),
    and no other line there but the program's PASS line."""
    try:
        lo = lines.index(first)
        hi = lines.index(last) if last else len(lines)
    except ValueError as e:
        return ["missing host line: %s" % e]
    errors = []
    for want in expected:
        n = lines.count(want)
        if n != 1:
            errors.append("%r appears %d times, want once" % (want, n))
        elif not lo < lines.index(want) < hi:
            errors.append("%r is not between %r and %r" % (want, first, last))
    extra = [l for l in lines[lo + 1:hi] if l not in expected and not l.startswith("PASS ")]
    if extra:
        errors.append("unexpected lines between %r and %r: %r" % (first, last, extra))
    return errors


def main():
    with open(sys.argv[-1], encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    windows = [("host: before kernel", "host: after kernel", speak_lines()),
               ("host: after kernel", "host: after garbage", []),
               ("host: after garbage", "host: after copy", tagged_lines(2)),
               ("host: after copy", "host: after stream sync", tagged_lines(3)),
               ("host: after stream sync", "host: after event sync", tagged_lines(4)),
               ("host: before exit", None, tagged_lines(5))]
    errors = []
    for first, last, expected in windows:
        errors += check_between(lines, first, last, expected)
    for e in errors:
        print("check_printf:", e)
    if not errors:
        print("check_printf: %d device lines, each once and in place"
              % sum(len(w[2]) for w in windows))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
