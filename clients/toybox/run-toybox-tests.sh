#!/bin/bash
# run-toybox-tests.sh — toybox's own tests (tests/<applet>.test) of the
# shimmed applets, run through the shims (build/clients/bin) twice: stock
# (no broker configured: the patched binary then behaves as stock toybox)
# and brokered (under a real `fsbroker serve` whose workspace is the
# directory the tests write in). Prints PASS/FAIL counts per applet for
# both runs and both totals.
#
#   clients/toybox/run-toybox-tests.sh [--tap] FSBROKER [APPLET...]
#
# FSBROKER is the fsbroker binary (build/fsbroker). The tests run in the
# toybox build tree, build/clients/toybox-build (toybox's scripts/test.sh
# with TEST_HOST=1, so that each command is the one PATH finds: the shim).
# Logs: build/clients/toybox-tests/{stock,brokered,core}.log.
#
# The suite tests toybox, not the policy: the brokered run's pack
# (written below) is the default pack plus what the suite does on purpose,
# so that no test fails because of a refusal.
#
# Exit 0 when the brokered run passes exactly the tests the stock run
# passes (the same count and the same names); 1 otherwise. --tap: one TAP
# test point saying so, the tables as TAP comments.
set -u
tap=0
if [ "${1:-}" = --tap ]; then tap=1; shift; fi
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 [--tap] FSBROKER [APPLET...]" >&2; exit 1; }
fsbroker=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
applets=${*:-cat chmod cp dd find grep head ln ls mkdir mv readlink realpath rm rmdir sed tail tee touch truncate unlink wc}
tree=$top/build/clients/toybox-build
bin=$top/build/clients/bin
logs=$top/build/clients/toybox-tests
. "$top/tools/suite-core.sh"

fail() { # MESSAGE: the suite could not run
    [ $tap -eq 1 ] && { echo "1..1"; echo "not ok 1 - toybox's own tests: $1"; }
    echo "run-toybox-tests: $1" >&2
    exit 1
}
[ -x "$fsbroker" ] && [ -f "$tree/generated/config.h" ] && [ -x "$bin/fsbroker-toybox-dispatch" ] ||
    fail "build first (make all toybox)"
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
(unset FSBROKER_SOCKET FSBROKER_SESSION_ID FSBROKER_TOOL_CALL_ID
 run_suite "$logs/stock.log")

# 2. Brokered: a core whose workspace holds the tests' directory
# (generated/testdir). Its pack is the default one plus what the suite does
# on purpose outside what the default allows:
#   - `rmdir -p abspath` makes and removes /test/2/3 (outside the workspace:
#     "default deny"): /test is changeable;
#   - `ln -f file hlink` replaces a second name of a file (the default
#     `hardlinks = "ask"` would wait for approval): hard links are allowed;
#   - dd's tests write files over the backup size limit (the default
#     `onTooLarge = "ask"`): they are changed without a backup.
dir=$(mktemp -d /tmp/fsbtt.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/rules" "$tree/generated/testdir"
cat >"$dir/rules/toybox-tests.lua" <<'PACK'
return {
  name = "toybox-tests",
  include = { "default" },
  fsProfile = { modify = { "/test/**" } },
  hardlinks = "allow",
  backup = { onTooLarge = "allow" },
}
PACK
suite_core_start "$fsbroker" "$dir/core" "$dir/rules/toybox-tests.lua" "$tree/generated" \
    toybox-tests "$logs/core.log" || fail "the core did not start (log: $logs/core.log)"
FSBROKER_SOCKET=$SUITE_CORE_SOCKET FSBROKER_SESSION_ID=toybox-tests \
    FSBROKER_TOOL_CALL_ID=toybox-tests run_suite "$logs/brokered.log"
suite_core_stop
audit_lines=$(cat "$SUITE_CORE_AUDIT"/*.jsonl 2>/dev/null | wc -l)

# 3. Counts. A result line is "PASS: name" / "FAIL: name" / "SKIP: ...".
say() { if [ $tap -eq 1 ]; then echo "# $*"; else echo "$*"; fi; }
count() { grep -cE "^$1: $2( |\$)" "$3"; }
say "$(printf '%-10s %14s %14s' applet "stock pass/fail" "brokered p/f")"
for a in $tests; do
    say "$(printf '%-10s %9s/%-4s %9s/%-4s' "$a" \
        "$(count PASS "$a" "$logs/stock.log")" "$(count FAIL "$a" "$logs/stock.log")" \
        "$(count PASS "$a" "$logs/brokered.log")" "$(count FAIL "$a" "$logs/brokered.log")")"
done
sp=$(grep -c '^PASS: ' "$logs/stock.log")
sf=$(grep -c '^FAIL: ' "$logs/stock.log")
bp=$(grep -c '^PASS: ' "$logs/brokered.log")
bf=$(grep -c '^FAIL: ' "$logs/brokered.log")
grep '^PASS: ' "$logs/stock.log" | sed 's/^PASS: //' | sort >"$logs/stock.pass"
grep '^PASS: ' "$logs/brokered.log" | sed 's/^PASS: //' | sort >"$logs/brokered.pass"
# Tests that pass in one run only ("-" stock only, "+" brokered only).
{ comm -23 "$logs/stock.pass" "$logs/brokered.pass" | sed 's/^/- /'
  comm -13 "$logs/stock.pass" "$logs/brokered.pass" | sed 's/^/+ /'; } >"$logs/differences"
say "audit lines written by the brokered run: $audit_lines"
if [ -s "$logs/differences" ]; then
    say "passing in one run only (-: stock only, +: brokered only):"
    while IFS= read -r line; do say "  $line"; done <"$logs/differences"
fi
say "toybox tests stock: $sp passed, $sf failed"
say "toybox tests brokered: $bp passed, $bf failed"
ok=0
[ "$sp" -eq "$bp" ] && [ ! -s "$logs/differences" ] && [ "$sp" -gt 0 ] && ok=1
if [ $tap -eq 1 ]; then
    echo "1..1"
    [ $ok -eq 1 ] && printf 'ok' || printf 'not ok'
    echo " 1 - toybox's own tests of $(echo $tests | wc -w) applets: stock $sp passed, brokered $bp passed"
fi
[ $ok -eq 1 ]
