#!/bin/bash
# tools/bench-stages.sh BUILD — where one routed call's time goes: for a
# write-open of a file already backed up, a create and a rename, the call
# timed in the program that makes it (bench/call_loop.c), bare and under
# `fsbroker run`, with the core's own account of it stage by stage
# (FSBROKER_STAGE_TIMES, core/call_stages.h), against the raw seccomp
# notification round trip measured in the same rounds
# (bench/notify_roundtrip.c). Rounds interleave every configuration in an
# order that rotates; each figure is the median over the rounds of each
# run's median. Nothing is judged.
#
#   BENCH_QUICK=1   2 rounds of 1,000 calls (default 5 rounds of 3,000)
#
# The workspace lies under BUILD (not under /tmp: the default pack skips
# backups of ${tmp}/**), with its own --state-dir, removed at the end.
set -eu
build=$(cd "${1:-build}" && pwd)
# Absolute: the workloads run it from their own directories.
fsb=$(realpath "${FSBROKER:-$build/fsbroker}")
loop=$build/bench/call_loop
raw=$build/bench/notify_roundtrip
if [ "${BENCH_QUICK:-0}" = 1 ]; then rounds=2 calls=1000; else rounds=5 calls=3000; fi

echo "Where a routed call's time goes (µs, medians of $rounds rounds of $calls calls each)"
for b in "$loop" "$raw"; do
    [ -x "$b" ] || { echo "  skipped: $b is not built (make bench builds it)"; exit 0; }
done
root=$(mktemp -d "$build/bench-stages.XXXXXX")
trap 'rm -rf "$root"' EXIT
trap 'exit 130' INT TERM
if ! "$fsb" run --workspace "$root" --state-dir "$root/state" --session probe -- true \
    >"$root/probe" 2>&1; then
    echo "  skipped: fsbroker run cannot sandbox here: $(head -1 "$root/probe")"
    exit 0
fi

kinds="write-open create rename"
declare -A samples
add() { samples[$1]+=" $2"; }
med() {
    # shellcheck disable=SC2086 # the samples are words
    printf '%s\n' ${samples[$1]:-} | sort -n | awk '{ a[NR] = $1 }
        END { if (NR == 0) print "-"; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
us() { awk -v v="$1" 'BEGIN { if (v == "-") print "-"; else printf "%.1f", v / 1000 }'; }

# A fresh directory for kind $1 in configuration $2, set up as the call
# needs it: the file to write-open exists, the files to rename exist.
fresh() {
    local d=$root/$2-$1-$n
    mkdir -p "$d"
    case $1 in
    write-open) : >"$d/f0" ;;
    rename) "$loop" make-renames "$d" "$calls" ;;
    esac
    cp "$loop" "$d/call_loop"
    echo "$d"
}

run_bare() {
    local d out
    d=$(fresh "$1" bare)
    out=$("$loop" "$1" "$d" "$calls")
    add "bare $1" "$(echo "$out" | sed -n 's/.*median_ns=\([0-9]*\).*/\1/p')"
}

run_fsb() {
    local d out line s
    d=$(fresh "$1" fsb)
    rm -f "$root/stages.jsonl"
    out=$(cd "$d" && FSBROKER_STAGE_TIMES=$root/stages.jsonl "$fsb" run --workspace "$d" \
        --state-dir "$root/state" --session bench -- ./call_loop "$1" . "$calls" 2>>"$root/log")
    add "fsb $1" "$(echo "$out" | sed -n 's/.*median_ns=\([0-9]*\).*/\1/p')"
    line=$(grep "\"call\":\"$1\"" "$root/stages.jsonl" || true)
    [ -n "$line" ] || return 0
    add "core $1" "$(echo "$line" | sed -n 's/.*"totalMedianNs":\([0-9]*\).*/\1/p')"
    for s in receive readTarget resolve decide backup perform audit answer; do
        add "$s $1" "$(echo "$line" | sed -n "s/.*\"$s\":\([0-9]*\).*/\1/p")"
    done
}

run_raw() {
    local out
    out=$("$raw" "$calls")
    add "raw native" "$(echo "$out" | sed -n 's/.*native_ns=\([0-9]*\).*/\1/p')"
    add "raw notify" "$(echo "$out" | sed -n 's/.*notify_ns=\([0-9]*\).*/\1/p')"
    add "raw open native" "$(echo "$out" | sed -n 's/.*open_native_ns=\([0-9]*\).*/\1/p')"
    add "raw open addfd" "$(echo "$out" | sed -n 's/.*open_addfd_ns=\([0-9]*\).*/\1/p')"
    case $out in *sync_wake_ns=-*) ;; *)
        add "raw sync" "$(echo "$out" | sed -n 's/.* sync_wake_ns=\([0-9]*\).*/\1/p')"
        add "raw open sync" "$(echo "$out" | sed -n 's/.*open_sync_wake_ns=\([0-9]*\).*/\1/p')" ;;
    esac
}

configs="raw bare fsb"
for n in $(seq 1 "$rounds"); do
    # Rotate the order: round 2 starts with the second configuration.
    set -- $configs
    for _ in $(seq 2 "$n"); do set -- "${@:2}" "$1"; done
    for c in "$@"; do
        case $c in
        raw) run_raw ;;
        bare) for k in $kinds; do run_bare "$k"; done ;;
        fsb) for k in $kinds; do run_fsb "$k"; done ;;
        esac
    done
done

# The floor the core stands on: synchronous wake-ups where the kernel has
# them and FSBROKER_SYNC_WAKE_UP does not say 0 (core/linux/supervisor.c).
raw_notify=$(med "raw notify") raw_open=$(med "raw open addfd")
if [ "$(med "raw sync")" != - ] && [ "${FSBROKER_SYNC_WAKE_UP:-1}" != 0 ]; then
    raw_notify=$(med "raw sync") raw_open=$(med "raw open sync")
fi
printf '  %-44s %10s %10s %10s\n' "" write-open create rename
row() {
    local label=$1 key=$2 k
    printf '  %-44s' "$label"
    for k in $kinds; do printf ' %10s' "$(us "$(med "$key $k")")"; done
    echo
}
row "the call, bare" bare
row "the call under fsbroker run, as timed by it" fsb
row "  served in the core, receipt to answer sent" core
row "    receive (RECV, the work gate)" receive
row "    read the target (path, cwd, creds, root)" readTarget
row "    resolve" resolve
row "    decide" decide
row "    back up" backup
row "    perform" perform
row "    audit" audit
row "    answer (SEND or ADDFD; not in the total)" answer
printf '  %-44s' "÷ the raw notification round trip"
for k in $kinds; do
    printf ' %10s' "$(awk -v a="$(med "fsb $k")" -v b="$raw_notify" \
        'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.1f", a / b }')"
done
echo
printf '  %-44s' "÷ bare"
for k in $kinds; do
    printf ' %10s' "$(awk -v a="$(med "fsb $k")" -v b="$(med "bare $k")" \
        'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.1f", a / b }')"
done
echo
printf '  %-44s %10s\n' "write-open ÷ the emulated open's floor" "$(awk -v a="$(med "fsb write-open")" \
    -v b="$raw_open" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.1f", a / b }')"
sync=$(med "raw sync") open_sync=$(med "raw open sync")
echo "  raw notification round trip (getppid trapped, answered at once): $(us "$(med "raw notify")") µs;" \
    "with SYNC_WAKE_UP: $( [ "$sync" = - ] && echo "not in this kernel" || echo "$(us "$sync") µs");" \
    "getppid native: $(us "$(med "raw native")") µs"
echo "  the emulated open's floor (openat trapped, the supervisor opens, ADDFD + SEND):" \
    "$(us "$(med "raw open addfd")") µs;" \
    "with SYNC_WAKE_UP: $( [ "$open_sync" = - ] && echo "not in this kernel" || echo "$(us "$open_sync") µs");" \
    "the openat native: $(us "$(med "raw open native")") µs"
echo "  The ratios to the floor take the wake-ups the core uses (FSBROKER_SYNC_WAKE_UP)."
echo "  The stages are medians each: they need not add up to the core's median."
