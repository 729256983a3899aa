#!/bin/bash
# tools/bench-store.sh BUILD — what backups cost per change kind under
# `fsbroker run`, against the same command bare, in this one run: `chmod -R`
# and `touch -h -d` over 1,000 files, `rm -rf` and `mv` of a 3,000-file tree.
# In every round each configuration runs once on a fresh copy, bare first or
# second in turn; medians are printed with their ratio, never judged. Each
# row also gives the bytes the store copied (objects that are not the
# workspace's own inodes, kept by link) and, with strace installed, the
# fsync + fdatasync calls per change (100 changes of the kind, less a run
# that changes nothing).
#
#   BENCH_QUICK=1   one round instead of three
#
# Everything runs in a temp dir under BUILD (not under /tmp: the default pack
# skips backups of ${tmp}/**) with its own --state-dir, removed at the end.
set -eu
build=$(cd "${1:-build}" && pwd)
fsb=${FSBROKER:-$build/fsbroker}
rounds=3
[ "${BENCH_QUICK:-0}" = 1 ] && rounds=1

echo "Backups per change kind (fsbroker run vs bare): medians over $rounds round(s);"
echo "copied = bytes the store copied; syncs = fsync+fdatasync per change."
command -v bwrap >/dev/null 2>&1 || { echo "  skipped: bwrap is not installed (make deps)"; exit 0; }

root=$(mktemp -d "$build/bench-store.XXXXXX")
trap 'rm -rf "$root"' EXIT
trap 'exit 130' INT TERM

# make_tree DIR N: N files of 4 KiB under DIR/t, 100 to a directory.
make_tree() {
    local i=0 sub
    mkdir -p "$1/t"
    while [ $i -lt "$2" ]; do
        sub="$1/t/d$((i / 100))"
        mkdir -p "$sub"
        head -c 4096 /dev/urandom >"$sub/f$i"
        i=$((i + 1))
    done
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# one CFG DIR SCRIPT: run SCRIPT (with @ for DIR) bare or under fsbroker run;
# prints "ms copied-bytes".
one() {
    local cfg=$1 dir=$2 script=${3//@/$2} t0 t1 copied=0
    find "$dir/t" -type f -printf '%i\n' | sort >"$dir.inos"
    t0=$(date +%s%N)
    if [ "$cfg" = bare ]; then
        sh -c "$script"
    else
        "$fsb" run --workspace "$dir" --state-dir "$dir.state" -- sh -c "$script" 2>/dev/null
    fi
    t1=$(date +%s%N)
    if [ -d "$dir.state" ]; then
        copied=$(find "$dir.state"/sessions/*/modify_backup/objects -type f -printf '%i %s\n' |
                 sort | join -v1 - "$dir.inos" | awk '{s += $2} END {print s + 0}')
    fi
    echo "$(( (t1 - t0) / 1000000 )) $copied"
}

# syncs SCRIPT: fsync+fdatasync calls per change of 100 (with @ for the
# tree of 100 files), less a run that changes nothing.
syncs() {
    command -v strace >/dev/null 2>&1 || { echo "-"; return; }
    local d=$root/syncs.$RANDOM n0 n
    mkdir -p "$d"
    make_tree "$d" 100
    strace -f -qq -c -e trace=fsync,fdatasync -o "$d.s0" \
        "$fsb" run --workspace "$d" --state-dir "$d.st0" -- true >/dev/null 2>&1
    strace -f -qq -c -e trace=fsync,fdatasync -o "$d.s1" \
        "$fsb" run --workspace "$d" --state-dir "$d.st1" -- sh -c "${1//@/$d}" >/dev/null 2>&1
    n0=$(awk '/fsync|fdatasync/ {s += $4} END {print s + 0}' "$d.s0")
    n=$(awk '/fsync|fdatasync/ {s += $4} END {print s + 0}' "$d.s1")
    awk -v a="$n" -v b="$n0" 'BEGIN {printf "%.1f", (a - b) / 100}'
}

# row SLUG NAME FILES SCRIPT SYNC-SCRIPT
row() {
    local slug=$1 name=$2 n=$3 script=$4 r bare run copied out ratio
    : >"$root/bare" ; : >"$root/run"
    for r in $(seq 1 "$rounds"); do
        for cfg in $( [ $((r % 2)) = 1 ] && echo bare run || echo run bare ); do
            local d=$root/$slug.$cfg.$r
            mkdir -p "$d"
            make_tree "$d" "$n"
            out=$(one "$cfg" "$d" "$script")
            echo "${out% *}" >>"$root/$cfg"
            [ "$cfg" = run ] && copied=${out#* }
        done
    done
    bare=$(median <"$root/bare")
    run=$(median <"$root/run")
    ratio=$(awk -v a="$run" -v b="$bare" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print "-" }')
    printf '  %-30s %6s ms  bare %5s ms  %5sx  copied %9s B  syncs %s\n' "$name" "$run" "$bare" \
        "$ratio" "$copied" "$(syncs "$5")"
}

row chmod "chmod -R, 1,000 files" 1000 "chmod -R go-w @/t" \
    'for f in @/t/d0/*; do chmod 600 "$f"; done'
row touch "touch -h -d, 1,000 files" 1000 "find @/t -type f -exec touch -h -d 2020-01-01 {} +" \
    'for f in @/t/d0/*; do touch -h -d 2020-01-01 "$f"; done'
row rm "rm -rf, 3,000 files" 3000 "rm -rf @/t" 'rm -f @/t/d0/*'
row mv "mv of a 3,000-file directory" 3000 "mv @/t @/moved" \
    'for f in @/t/d0/*; do mv "$f" "$f.moved"; done'
