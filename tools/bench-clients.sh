#!/bin/bash
# tools/bench-clients.sh BUILD — what brokering costs the patched clients,
# measured in this one run on this machine, as ratios against the same
# workloads unbrokered:
#
#   1a. `find T -type f` over a tree of 10,000 files (100 directories of
#       100), through the toybox shim (build/clients/bin/find)
#   1b. `grep -r x T` over the same tree, through the shim
#   2.  `for i in $(seq N); do echo x > f; done` in zsh -f (N = 1,000)
#
# Brokered: FSBROKER_SOCKET and FSBROKER_SESSION_ID name a real `fsbroker
# serve` (the default pack, the tree as its workspace). Stock toybox: the
# same shims and binary with no broker configured, which is how the patched
# toybox runs stock (every brokered call starts with `is a broker
# configured?`; without one it is toybox's own code path). Stock zsh:
# build/clients/zsh-stock, built from the same source without the patch
# (make build/clients/zsh-stock); the patched zsh without a broker when that
# is missing (the row says which).
#
# Each row starts with one untimed run of each configuration (page cache,
# the core's first answers). Then in every round each configuration runs
# once, the order alternating from round to round, so drift on the machine
# reaches both alike; the rows print
# medians and their ratio, never judged. Each row also prints the requests
# the core answered per run (audit lines), and what each added: (brokered −
# stock) ÷ requests. A command that fails prints why in its row.
#
#   BENCH_CLIENT_ROUNDS  rounds (default 7)
#   BENCH_QUICK=1        3 rounds, a tree of 2,000 files, 200 echoes
#
# Everything runs in a temp dir under BUILD (not under /tmp: the default
# pack skips backups of ${tmp}/**, and the echo row would measure none),
# removed at the end.
set -eu
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
fsb=${FSBROKER:-$build/fsbroker}
# The clients are never built with sanitizers: they sit in build/clients.
clients=$top/build/clients
bin=$clients/bin
zsh_brokered=$clients/zsh
zsh_stock=$clients/zsh-stock
. "$top/tools/suite-core.sh"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
    rounds=3 dirs=20 echoes=200
else
    rounds=${BENCH_CLIENT_ROUNDS:-7} dirs=100 echoes=1000
fi
files=$((dirs * 100))

echo "Brokered clients (toybox, zsh) against stock: medians over $rounds rounds; in every"
echo "round each configuration runs once, the order alternating from round to round."
if [ ! -x "$bin/fsbroker-toybox-dispatch" ] || [ ! -x "$zsh_brokered" ]; then
    echo "  skipped: the clients are not built (make toybox zsh)"
    exit 0
fi

root=$(mktemp -d "$build/bench-clients.XXXXXX")
trap 'suite_core_stop >/dev/null 2>&1; rm -rf "$root"' EXIT
trap 'exit 130' INT TERM
ws=$root/ws
mkdir -p "$ws/T" "$ws/z"
# The file the echo row overwrites exists before the session, as a file an
# agent edits does: the first write backs it up, the rest find it backed up
# in the cycle already and are one judged open each.
echo old >"$ws/z/f"

# The tree: 100 directories of 100 files of ~600 bytes; every tenth holds
# an x, the others none (`grep -r x` reads them all either way).
d=0
while [ $d -lt $dirs ]; do
    mkdir "$ws/T/d$d"
    f=0
    while [ $f -lt 100 ]; do
        {
            printf 'file %d/%d: lorem ipsum dolor sit amet, consectetur adipiscing elit\n' $d $f
            printf 'sed do eiusmod tempor incididunt ut labore et dolore magna aliqua\n%.0s' 1 2 3 4 5 6 7 8
            [ $((f % 10)) -eq 0 ] && echo 'x marks the spot'
        } >"$ws/T/d$d/f$f.txt"
        f=$((f + 1))
    done
    d=$((d + 1))
done

echo 'return { name = "bench-clients", include = { "default" } }' >"$root/bench-clients.lua"
suite_core_start "$fsb" "$root/core" "$root/bench-clients.lua" "$ws" bench-clients \
    "$root/core.log" || exit 1
audit_lines() { cat "$SUITE_CORE_AUDIT"/*.jsonl 2>/dev/null | wc -l; }

if [ -x "$zsh_stock" ]; then
    zsh_stock_label="build/clients/zsh-stock, unpatched"
else
    zsh_stock=$zsh_brokered
    zsh_stock_label="patched zsh, no broker"
fi

# run stock|brokered CMD...: the command's wall time in µs on stdout, or
# "fail <exit> <first stderr line>".
run() {
    local mode=$1 t0 t1 rc
    shift
    rc=0
    t0=$EPOCHREALTIME
    if [ "$mode" = stock ]; then
        (cd "$ws" && exec env -u FSBROKER_SOCKET -u FSBROKER_SESSION_ID \
            -u FSBROKER_TOOL_CALL_ID "$@") >/dev/null 2>"$root/err" || rc=$?
    else
        (cd "$ws" && FSBROKER_SOCKET=$SUITE_CORE_SOCKET FSBROKER_SESSION_ID=bench-clients \
            FSBROKER_TOOL_CALL_ID=bench exec "$@") >/dev/null 2>"$root/err" || rc=$?
    fi
    t1=$EPOCHREALTIME
    if [ $rc -ne 0 ]; then
        echo "fail $rc $(head -n 1 "$root/err")"
        return
    fi
    echo $(( (${t1/./} - ${t0/./}) ))
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
    else printf "%d\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms() { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }

printf '  %-36s %11s %11s %7s %9s %12s\n' "" "stock ms" "brokered ms" "ratio" \
    "requests" "µs/request"

# row LABEL STOCKCMD -- BROKEREDCMD: the two commands alternate for $rounds
# rounds; prints the medians, the ratio, the requests per brokered run.
row() {
    local label=$1 stockcmd=() brokcmd=() r s b sm bm before req fail=""
    shift
    while [ "$1" != -- ]; do stockcmd+=("$1"); shift; done
    shift
    brokcmd=("$@")
    : >"$root/s" ; : >"$root/b"
    # One untimed run of each first: the tree in the page cache, the
    # core's first answers (pack warm, the file backed up) behind us.
    run stock "${stockcmd[@]}" >/dev/null
    run brokered "${brokcmd[@]}" >/dev/null
    for r in $(seq "$rounds"); do
        if [ $((r % 2)) -eq 1 ]; then
            s=$(run stock "${stockcmd[@]}")
            before=$(audit_lines); b=$(run brokered "${brokcmd[@]}"); req=$(( $(audit_lines) - before ))
        else
            before=$(audit_lines); b=$(run brokered "${brokcmd[@]}"); req=$(( $(audit_lines) - before ))
            s=$(run stock "${stockcmd[@]}")
        fi
        case "$s" in fail*) fail="stock: $s"; break ;; esac
        case "$b" in fail*) fail="brokered: $b"; break ;; esac
        echo "$s" >>"$root/s"
        echo "$b" >>"$root/b"
    done
    if [ -n "$fail" ]; then
        printf '  %-36s fails (%s)\n' "$label" "$fail"
        return
    fi
    sm=$(median <"$root/s")
    bm=$(median <"$root/b")
    printf '  %-36s %11s %11s %7s %9s %12s\n' "$label" "$(ms "$sm")" "$(ms "$bm")" \
        "$(awk -v a="$bm" -v b="$sm" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }')" "$req" \
        "$(awk -v a="$bm" -v b="$sm" -v n="$req" 'BEGIN { if (n > 0) printf "%.0f", (a - b) / n; else print "-" }')"
}

row "1a. find T -type f, $files files" "$bin/find" T -type f -- "$bin/find" T -type f
row "1b. grep -r x T, $files files" "$bin/grep" -r x T -- "$bin/grep" -r x T
loop="for i in \$(seq $echoes); do echo x > z/f; done"
row "2. zsh: echo x > f, $echoes times" "$zsh_stock" -f -c "$loop" -- "$zsh_brokered" -f -c "$loop"
echo "  (stock toybox: the same binary with no broker configured; stock zsh: $zsh_stock_label."
echo "   requests: audit lines the core wrote per brokered run, backups included)"

# The same rows inside `fsbroker run` (the default pack, reads = "mask"):
# the run sets FSBROKER_READS=sandbox, so the clients open reads without a
# request. One run per row; inside it the two configurations alternate as
# above, timed in the sandbox (the run's start-up and mask scan are not in
# the rows). Stock: the same commands without the broker's variables (the
# shims then run toybox's own code; zsh-stock's redirections are caught by
# the supervisor like any program's). requests: the lines the run's core
# wrote per brokered run, its own start and end records left out.
inner='cd "$1"; rounds=$2; shift 2; s=(); while [ "$1" != -- ]; do s+=("$1"); shift; done; shift
t() { local t0=$EPOCHREALTIME; "$@" >/dev/null 2>&1 || { echo "fail $? $*"; exit 1; }; local t1=$EPOCHREALTIME; echo $(( ${t1/./} - ${t0/./} )); }
st() { t env -u FSBROKER_SOCKET -u FSBROKER_SESSION_ID -u FSBROKER_TOOL_CALL_ID -u FSBROKER_READS "$@"; }
st "${s[@]}" >/dev/null; t "$@" >/dev/null
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then a=$(st "${s[@]}"); b=$(t "$@"); else b=$(t "$@"); a=$(st "${s[@]}"); fi
  echo "$a $b"
done'
run_audit() { cat "$root/run-state/audit/bench-run.jsonl" 2>/dev/null | grep -c '"phase":"ipc-token' || true; }
run_row() {
    local label=$1 out before req sm bm
    shift
    before=$(run_audit)
    if ! out=$("$fsb" run --state-dir "$root/run-state" --workspace "$ws" --session bench-run \
            -- bash -c "$inner" bench "$ws" "$rounds" "$@" 2>"$root/err"); then
        printf '  %-36s fails: %s\n' "$label" "$(grep -v '^fsbroker run:' "$root/err" | head -n 1)$(echo "$out" | grep fail | head -n 1)"
        return
    fi
    req=$(( ($(run_audit) - before) / (rounds + 1) ))
    sm=$(echo "$out" | awk '{ print $1 }' | median)
    bm=$(echo "$out" | awk '{ print $2 }' | median)
    printf '  %-36s %11s %11s %7s %9s %12s\n' "$label" "$(ms "$sm")" "$(ms "$bm")" \
        "$(awk -v a="$bm" -v b="$sm" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }')" "$req" \
        "$(awk -v a="$bm" -v b="$sm" -v n="$req" 'BEGIN { if (n > 0) printf "%.0f", (a - b) / n; else print "-" }')"
}
echo "Inside fsbroker run (reads = mask; timed in the sandbox, the run's start-up left out):"
if ! "$fsb" run --state-dir "$root/run-state" --workspace "$root/core" --session bench-probe \
        -- true >/dev/null 2>"$root/err"; then
    echo "  skipped: fsbroker run cannot start here: $(head -n 1 "$root/err")"
    exit 0
fi
run_row "1a. find T -type f, in the run" "$bin/find" T -type f -- "$bin/find" T -type f
run_row "1b. grep -r x T, in the run" "$bin/grep" -r x T -- "$bin/grep" -r x T
run_row "2. zsh: echo x > f, in the run" "$zsh_stock" -f -c "$loop" -- "$zsh_brokered" -f -c "$loop"
echo "  (stock zsh's redirections are write-opens the supervisor emulates; the brokered"
echo "   zsh asks the core on its socket instead)"
