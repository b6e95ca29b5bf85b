#!/usr/bin/env python3
"""Counts meson test results from testlog.json files and prints one line:
"N passed, N failed, N skipped". Exits 1 if any test failed or no log exists."""
import json
import sys

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}


def count(paths):
    passed = failed = skipped = 0
    missing = False
    for path in paths:
        try:
            with open(path, encoding="utf-8") as log:
                for line in log:
                    if not line.strip():
                        continue
                    result = json.loads(line).get("result", "ERROR")
                    if result in PASS:
                        passed += 1
                    elif result in SKIP:
                        skipped += 1
                    else:  # FAIL, UNEXPECTEDPASS, TIMEOUT, ERROR
                        failed += 1
                        print(f"failed: {json.loads(line).get('name')} ({result})")
        except FileNotFoundError:
            print(f"no test log at {path} (build failed?)")
            missing = True
    if missing:
        failed += 1
    return passed, failed, skipped


def main():
    passed, failed, skipped = count(sys.argv[1:])
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
