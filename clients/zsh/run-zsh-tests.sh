#!/bin/bash
# run-zsh-tests.sh — zsh's own tests (Test/*.ztst, run by zsh's harness
# Test/ztst.zsh) against a stock zsh and against the brokered zsh under a
# real `fsbroker serve`. Prints the pass/fail/skip counts per test file for
# both runs and both totals.
#
#   clients/zsh/run-zsh-tests.sh [--tap] FSBROKER [TEST...]
#   clients/zsh/run-zsh-tests.sh --build-stock     (only the stock zsh)
#
# FSBROKER is the fsbroker binary (build/fsbroker); TEST names test files
# without .ztst (default: A01grammar A04redirect B01cd C02cond D02glob).
#
# The stock zsh is built here, once, from the same source tree as the
# brokered one (build/src/zsh), with the same configure options and the
# same modules (those of clients/zsh/build.sh: keep both in step), but
# without the patch or the client library: build/clients/zsh-stock (work
# tree build/clients/zsh-stock-build, log build.log there). The brokered
# zsh is build/clients/zsh (make zsh).
#
# Each run gets a fresh workspace holding a copy of Test/ (the tests write
# their *.tmp files in the current directory) and links to the sources'
# Functions/ and Completion/ (the harness's fpath) and Misc/ (D02glob's
# tables), and Src/zsh, a link to
# the zsh under test (some tests start it again as $ZTST_testdir/../Src/zsh). HOME, TMPDIR and
# TMPPREFIX (zsh's here-documents and the harness's own temp files) point
# into the workspace. PATH is the caller's: the external commands the
# tests run (cat, rm, …) are the system's in both runs, so that the one
# difference between them is zsh itself.
#
# The suite tests zsh, not the policy: the brokered run's pack (written
# below) is the default one, which allows every file the tests touch in the
# workspace, plus /nonexistent, where A04redirect redirects on purpose to
# see zsh's "no such file or directory" (the default pack would refuse it
# first: "default deny").
# Logs: build/clients/zsh-tests/{stock,brokered}/<TEST>.log, core.log.
#
# Each test file runs with ZTST_continue=1 (go on after a failed test) and
# ZTST_verbose=1 (one line per test); a test counts as passed on "Test
# successful." or "Test failed, as expected." (a test zsh marks as an
# expected failure), as failed on zsh's "test failed." or "test XPassed.",
# as skipped on "Test case skipped" or a skipped file. A file that exits
# non-zero without a failed test, or runs over 300 s, counts one failure.
#
# Exit 0 when the brokered zsh passes exactly the tests the stock zsh
# passes (the same count and the same tests); 1 otherwise. --tap: one TAP
# test point saying so, the tables as TAP comments.
set -u
tap=0 build_only=0
case "${1:-}" in
--tap) tap=1; shift ;;
--build-stock) build_only=1; shift ;;
esac
top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/build/src/zsh
brokered=$top/build/clients/zsh
stock=$top/build/clients/zsh-stock
logs=$top/build/clients/zsh-tests
. "$top/tools/suite-core.sh"

fail() { # MESSAGE: the suite could not run
    [ $tap -eq 1 ] && { echo "1..1"; echo "not ok 1 - zsh's own tests: $1"; }
    echo "run-zsh-tests: $1" >&2
    exit 1
}

# 1. The stock zsh: clients/zsh/build.sh's configure and modules, no patch.
build_stock() {
    local work=$top/build/clients/zsh-stock-build stamp
    local opts="--disable-dynamic --enable-etcdir=/etc/zsh --disable-gdbm --disable-pcre --disable-cap --with-tcsetpgrp"
    local modules='main\|zle\|compctl\|complete\|zutil\|parameter\|rlimits'
    stamp="$(cksum <"$src/.fetched") $opts $modules"
    [ -x "$stock" ] && [ "$(cat "$work/.stamp" 2>/dev/null)" = "$stamp" ] && return 0
    rm -rf "$work" "$stock"
    cp -a "$src" "$work"
    if ! (cd "$work" && ./configure $opts &&
        sed -i -e "/^name=zsh\/\($modules\) /!s/link=static/link=no/" config.modules &&
        make -j"${CPUS:-2}") >"$work/build.log" 2>&1; then
        tail -n 30 "$work/build.log" >&2
        return 1
    fi
    cp "$work/Src/zsh" "$stock"
    echo "$stamp" >"$work/.stamp"
}
[ -f "$src/.fetched" ] || fail "no zsh source in $src (make zsh fetches it)"
build_stock || fail "the stock zsh did not build (log: build/clients/zsh-stock-build/build.log)"
[ $build_only -eq 1 ] && exit 0

[ $# -ge 1 ] || { echo "usage: $0 [--tap] FSBROKER [TEST...]" >&2; exit 1; }
fsbroker=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
tests=${*:-A01grammar A04redirect B01cd C02cond D02glob}
[ -x "$fsbroker" ] && [ -x "$brokered" ] || fail "build first (make all zsh)"
for t in $tests; do
    [ -f "$src/Test/$t.ztst" ] || fail "no test file $src/Test/$t.ztst"
done

dir=$(mktemp -d /tmp/fsbzt.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# A workspace for one run: WS/Test (a copy), WS/Functions, WS/Completion,
# WS/Misc (D02glob's glob tables), and WS/Src/zsh, the zsh under test (tests run $ZTST_testdir/../Src/zsh).
make_workspace() { # WS ZSH
    mkdir -p "$1/home" "$1/tmp" "$1/Src"
    ln -s "$2" "$1/Src/zsh"
    cp -a "$src/Test" "$1/Test"
    ln -s "$src/Functions" "$1/Functions"
    ln -s "$src/Completion" "$1/Completion"
    ln -s "$src/Misc" "$1/Misc"
}

run_suite() { # ZSH WS LOGDIR
    local zsh=$1 ws=$2 out=$3 t rc
    rm -rf "$out"
    mkdir -p "$out"
    for t in $tests; do
        (cd "$ws/Test" && HOME=$ws/home TMPDIR=$ws/tmp TMPPREFIX=$ws/tmp/zsh \
            ZTST_continue=1 ZTST_verbose=1 \
            timeout -k 5 300 "$zsh" +Z -f ./ztst.zsh "./$t.ztst") \
            >"$out/$t.log" 2>&1 </dev/null
        echo "exit $?" >"$out/$t.status"
    done
}

# 2. Stock.
make_workspace "$dir/stock" "$stock"
(unset FSBROKER_SOCKET FSBROKER_SESSION_ID FSBROKER_TOOL_CALL_ID
 run_suite "$stock" "$dir/stock" "$logs/stock")

# 3. Brokered, under the default pack.
make_workspace "$dir/brokered" "$brokered"
mkdir -p "$dir/rules"
cat >"$dir/rules/zsh-tests.lua" <<'PACK'
return {
  name = "zsh-tests",
  include = { "default" },
  fsProfile = { modify = { "/nonexistent/**" } },
}
PACK
mkdir -p "$logs"
suite_core_start "$fsbroker" "$dir/core" "$dir/rules/zsh-tests.lua" "$dir/brokered" \
    zsh-tests "$logs/core.log" || fail "the core did not start (log: $logs/core.log)"
FSBROKER_SOCKET=$SUITE_CORE_SOCKET FSBROKER_SESSION_ID=zsh-tests \
    FSBROKER_TOOL_CALL_ID=zsh-tests run_suite "$brokered" "$dir/brokered" "$logs/brokered"
suite_core_stop
audit_lines=$(cat "$SUITE_CORE_AUDIT"/*.jsonl 2>/dev/null | wc -l)

# 4. Counts. passed.list holds "<file>: <test message>" per passed test.
tally() { # LOGDIR TEST -> "passed failed skipped"; appends to LOGDIR/passed.list
    local log=$1/$2.log p f s rc
    awk -v t="$2" '/^Running test: /{ m = substr($0, 15) }
        /^Test successful\.$/ || /^Test failed, as expected\.$/ { print t ": " m }' \
        "$log" >>"$1/passed.list"
    p=$(grep -cE '^Test (successful|failed, as expected)\.$' "$log")
    f=$(grep -cE ': test (failed|XPassed)\.$' "$log")
    s=$(grep -cE '^Test case skipped|: skipped \(' "$log")
    rc=$(sed 's/^exit //' "$1/$2.status")
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    echo "$p $f $s"
}
say() { if [ $tap -eq 1 ]; then echo "# $*"; else echo "$*"; fi; }
say "$(printf '%-12s %20s %20s' test "stock pass/fail/skip" "brokered p/f/s")"
: >"$logs/stock/passed.list"
: >"$logs/brokered/passed.list"
sp=0 sf=0 ss=0 bp=0 bf=0 bs=0
for t in $tests; do
    read -r p1 f1 s1 <<<"$(tally "$logs/stock" "$t")"
    read -r p2 f2 s2 <<<"$(tally "$logs/brokered" "$t")"
    say "$(printf '%-12s %12s/%s/%-5s %12s/%s/%-5s' "$t" "$p1" "$f1" "$s1" "$p2" "$f2" "$s2")"
    sp=$((sp + p1)) sf=$((sf + f1)) ss=$((ss + s1))
    bp=$((bp + p2)) bf=$((bf + f2)) bs=$((bs + s2))
done
sort -o "$logs/stock/passed.list" "$logs/stock/passed.list"
sort -o "$logs/brokered/passed.list" "$logs/brokered/passed.list"
{ comm -23 "$logs/stock/passed.list" "$logs/brokered/passed.list" | sed 's/^/- /'
  comm -13 "$logs/stock/passed.list" "$logs/brokered/passed.list" | sed 's/^/+ /'; } \
    >"$logs/differences"
say "audit lines written by the brokered run: $audit_lines"
if [ -s "$logs/differences" ]; then
    say "passing in one run only (-: stock only, +: brokered only):"
    while IFS= read -r line; do say "  $line"; done <"$logs/differences"
fi
say "zsh tests stock: $sp passed, $sf failed, $ss skipped"
say "zsh tests brokered: $bp passed, $bf failed, $bs skipped"
ok=0
[ "$sp" -eq "$bp" ] && [ ! -s "$logs/differences" ] && [ "$sp" -gt 0 ] && ok=1
if [ $tap -eq 1 ]; then
    echo "1..1"
    [ $ok -eq 1 ] && printf 'ok' || printf 'not ok'
    echo " 1 - zsh's own tests ($(echo $tests)): stock $sp passed, brokered $bp passed"
fi
[ $ok -eq 1 ]
