#!/bin/sh
# The kernelet-ptx tool on PTX, a fatbin and an executable, and on bad input (TAP).
#   test_cli.sh KERNELET_PTX CORPUS_DIR [FATBIN EXECUTABLE]
tool=$1 corpus=$2 fatbin=$3 exe=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
check() { # description, then a command that must succeed
    n=$((n + 1))
    desc=$1
    shift
    if "$@" >"$tmp/out" 2>"$tmp/err"; then
        echo "ok $n $desc"
    else
        echo "not ok $n $desc"
        sed 's/^/# /' "$tmp/out" "$tmp/err"
        bad=1
    fi
}
contains() { "$tool" "$1" "$2" 2>&1 | grep -q -- "$3"; }
fails() { ! "$@"; }

echo "1..10"
check "info lists a sliceable kernel" contains info "$corpus/features.ptx" "sliceable: yes"
check "info says why a kernel is not sliceable" contains info "$corpus/gridid.ptx" "sliceable: no: reads %gridid"
check "info shows parameter offsets" contains info "$corpus/features.ptx" "features_sel .*offset *32 *size *4"
check "slice writes a module" "$tool" slice "$corpus/features.ptx" -o "$tmp/sliced.ptx"
check "the sliced module has the variant" contains info "$tmp/sliced.ptx" "kernel features__kslice"
check "print writes a module that parses" sh -c "'$tool' print '$corpus/features.ptx' > '$tmp/p.ptx' && '$tool' info '$tmp/p.ptx'"
printf 'garbage\n' >"$tmp/garbage.ptx"
check "garbage is an error" fails "$tool" info "$tmp/garbage.ptx"
check "a missing file is an error" fails "$tool" info "$tmp/none.ptx"
check "bad usage is an error" fails "$tool" slice "$corpus/features.ptx"
if [ -n "$fatbin" ] && "$tool" info "$fatbin" >/dev/null 2>&1; then
    check "a fatbin and an executable are read" sh -c "'$tool' info '$fatbin' | grep -q 'sliceable: yes' && '$tool' slice '$exe' -o '$tmp/exe.ptx' && grep -q __kslice '$tmp/exe.ptx'"
else
    n=$((n + 1))
    echo "ok $n # SKIP fatbin reader not built in"
fi
exit $bad
