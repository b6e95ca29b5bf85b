#!/usr/bin/env python3
"""Checks the output of bench/compat/printf through kerneletd: every line the kernels print
must appear exactly once, between the host's lines printed before and after the
synchronisation that ends them. The expected lines are computed here from the program's
formulas, not taken from any output."""
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


def again_lines():
    return ["again t=%d sq=%d" % (t, t * t) for t in range(THREADS)]


def check_between(lines, first, last, expected):
    try:
        lo, hi = lines.index(first), lines.index(last)
    except ValueError as e:
        return ["missing host line: %s" % e]
    errors = []
    for want in expected:
        n = lines.count(want)
        if n != 1:
            errors.append("%r appears %d times, want once" % (want, n))
        elif not lo < lines.index(want) < hi:
            errors.append("%r is not between %r and %r" % (want, first, last))
    between = [l for l in lines[lo + 1:hi]]
    extra = [l for l in between if l not in expected]
    if extra:
        errors.append("unexpected lines between %r and %r: %r" % (first, last, extra))
    return errors


def main():
    with open(sys.argv[-1], encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    errors = check_between(lines, "host: before kernel", "host: after kernel", speak_lines())
    errors += check_between(lines, "host: after kernel", "host: after copy", again_lines())
    for e in errors:
        print("check_printf:", e)
    if not errors:
        print("check_printf: %d device lines, each once and in place"
              % (2 * THREADS + THREADS))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
