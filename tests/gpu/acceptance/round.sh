#!/bin/sh
# One round of acceptance checks on the GPU machine, from a folder made by pack.sh, each
# step's table in OUT_DIR/round.txt and everything it left in OUT_DIR/round.tar.gz (the
# device tool brings back at most 8 files):
#   round.sh CARRY_DIR OUT_DIR STEP...
# Steps: contain (contain.sh, limit 2 s), fence (fence.sh: the bench programs natively,
# fenced and unfenced), pairs:MIXES:REPEATS:MODES (pairs.sh with SWEEP=0; MODES uses ','
# as pairs.sh does). BACKEND=emu tries the round without a GPU.
set -u
carry=$(cd "${1:?usage: round.sh CARRY_DIR OUT_DIR STEP...}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
shift 2
work=$out/round
mkdir -p "$work"
for step in "$@"; do
    echo "== $step ($(date -u +%T))" | tee -a "$out/round.txt"
    case $step in
    contain) timeout 300 sh "$carry/contain.sh" "$carry" "$work" 2 ;;
    fence) timeout 400 sh "$carry/fence.sh" "$carry" "$work" ;;
    pairs:*)
        rest=${step#pairs:}; mixes=${rest%%:*}; rest=${rest#*:}; repeats=${rest%%:*}
        modes=${rest#*:}
        SWEEP=0 timeout 500 sh "$carry/pairs.sh" "$carry" "$work" "$mixes" "$repeats" "$modes" ;;
    *) echo "round.sh: unknown step $step" ;;
    esac 2>&1 | tee -a "$out/round.txt" | grep -E '^\||^==|failed|passed' || true
done
pkill -9 kerneletd 2>/dev/null
tar -C "$out" -czf "$out/round.tar.gz" round && rm -rf "$work"
