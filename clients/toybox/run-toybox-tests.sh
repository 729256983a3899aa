#!/bin/bash
# run-toybox-tests.sh — toybox's own tests (tests/<applet>.test) of the
# shimmed applets, run through the shims (build/clients/bin) twice: without
# a broker (stock behaviour) and under a real `fsbroker serve` whose
# workspace is the directory the tests write in. Prints PASS/FAIL counts per
# applet for both runs, and the tests that pass stock but fail brokered.
#
#   clients/toybox/run-toybox-tests.sh FSBROKER [APPLET...]
#
# FSBROKER is the fsbroker binary (build/fsbroker). The tests run in the
# toybox build tree, build/clients/toybox-build (toybox's scripts/test.sh
# with TEST_HOST=1, so that each command is the one PATH finds: the shim).
# Logs: build/clients/toybox-tests/{stock,brokered}.log.
#
# Exit 0 when every test that passes stock also passes brokered, but for
# the refusals of the default pack listed in toybox-tests.expected.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
fsbroker=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
applets=${*:-cat chmod cp dd find grep head ln ls mkdir mv readlink realpath rm rmdir sed tail tee touch truncate unlink wc}
tree=$top/build/clients/toybox-build
bin=$top/build/clients/bin
logs=$top/build/clients/toybox-tests
[ -x "$fsbroker" ] && [ -f "$tree/generated/config.h" ] && [ -x "$bin/fsbroker-toybox-dispatch" ] || {
    echo "run-toybox-tests: build first (make all toybox)" >&2
    exit 1
}
mkdir -p "$logs"

# Only the applets that have a test file.
tests=""
for a in $applets; do
    [ -f "$tree/tests/$a.test" ] && tests="$tests $a"
done

run_suite() { # LOG
    (cd "$tree" && PATH="$bin:$PATH" TEST_HOST=1 VERBOSE=all LC_ALL=C \
        bash scripts/test.sh $tests) >"$1" 2>&1 </dev/null
}

# 1. Stock: no broker configured.
(unset FSBROKER_SOCKET FSBROKER_SESSION_ID; run_suite "$logs/stock.log")

# 2. Brokered: a core whose workspace holds the tests' directory, with the
# default pack, except that a file over the backup size limit (dd's tests
# write some) is changed without a backup instead of waiting for approval.
dir=$(mktemp -d /tmp/fsbtt.XXXXXX)
mkdir -p "$dir/home" "$dir/tmp" "$dir/rules" "$tree/generated/testdir"
cp "$top"/lua/rules/*.lua "$dir/rules/"
cat >"$dir/rules/toybox-tests.lua" <<'EOF'
return { name = "toybox-tests", include = { "default" }, backup = { onTooLarge = "allow" } }
EOF
coproc CORE { HOME=$dir/home TMPDIR=$dir/tmp exec "$fsbroker" serve \
    --socket "$dir/sock/broker.sock" --session toybox-tests \
    --rules "$dir/rules/toybox-tests.lua" \
    --workspace "$tree/generated" --state-dir "$dir/state" 2>"$logs/core.log"; }
core_pid=$CORE_PID
if ! read -r -t 10 ready <&"${CORE[0]}" || [ "${ready#*\"ready\"}" = "$ready" ]; then
    echo "run-toybox-tests: the core did not start:" >&2
    cat "$logs/core.log" >&2
    kill "$core_pid" 2>/dev/null
    rm -rf "$dir"
    exit 1
fi
FSBROKER_SOCKET=$dir/sock/broker.sock FSBROKER_SESSION_ID=toybox-tests \
    FSBROKER_TOOL_CALL_ID=toybox-tests run_suite "$logs/brokered.log"
echo '{"id":1,"command":"Shutdown"}' >&"${CORE[1]}"
for _ in $(seq 50); do kill -0 "$core_pid" 2>/dev/null || break; sleep 0.1; done
kill "$core_pid" 2>/dev/null
wait "$core_pid" 2>/dev/null
audit_lines=$(cat "$dir"/state/audit/*.jsonl 2>/dev/null | wc -l)
rm -rf "$dir"

# 3. Counts. A result line is "PASS: name" / "FAIL: name" / "SKIP: ...".
count() { grep -cE "^$1: $2( |\$)" "$3"; }
printf '%-10s %14s %14s\n' applet "stock pass/fail" "brokered p/f"
regressions=0
for a in $tests; do
    sp=$(count PASS "$a" "$logs/stock.log")
    sf=$(count FAIL "$a" "$logs/stock.log")
    bp=$(count PASS "$a" "$logs/brokered.log")
    bf=$(count FAIL "$a" "$logs/brokered.log")
    printf '%-10s %9s/%-4s %9s/%-4s\n' "$a" "$sp" "$sf" "$bp" "$bf"
done
sp=$(grep -c '^PASS: ' "$logs/stock.log")
sf=$(grep -c '^FAIL: ' "$logs/stock.log")
tp=$(grep -c '^PASS: ' "$logs/brokered.log")
tf=$(grep -c '^FAIL: ' "$logs/brokered.log")
grep '^PASS: ' "$logs/stock.log" | sed 's/^PASS: //' | sort -u >"$logs/stock.pass"
grep '^FAIL: ' "$logs/brokered.log" | sed 's/^FAIL: //' | sort -u >"$logs/brokered.fail"
comm -12 "$logs/stock.pass" "$logs/brokered.fail" >"$logs/regressions"
# Refusals of the default pack that the suite meets on purpose.
grep -v '^#' "$top/clients/toybox/toybox-tests.expected" | sort -u >"$logs/expected"
comm -23 "$logs/regressions" "$logs/expected" >"$logs/unexpected"
regressions=$(wc -l <"$logs/regressions")
unexpected=$(wc -l <"$logs/unexpected")
echo "audit lines written by the brokered run: $audit_lines"
if [ "$regressions" -gt 0 ]; then
    echo "passing stock, failing brokered ($regressions; refused by the pack on purpose: those in toybox-tests.expected):"
    sed 's/^/  /' "$logs/regressions"
fi
echo "toybox tests stock: $sp passed, $sf failed"
echo "toybox tests brokered: $tp passed, $tf failed ($regressions only under the broker, $unexpected unexpected)"
[ "$unexpected" -eq 0 ]
