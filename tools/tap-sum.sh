#!/bin/sh
# tap-sum.sh NAME COMMAND [NAME COMMAND]...
# Runs each command, shows its TAP output, and ends with the one line
# `N passed, N failed, N skipped` summed over every suite. A suite that exits
# non-zero without reporting a failed test counts as one failure (a crash).
passed=0 failed=0 skipped=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
while [ $# -ge 2 ]; do
    name=$1 cmd=$2
    shift 2
    echo "== $name"
    sh -c "$cmd" >"$out" 2>&1
    rc=$?
    cat "$out"
    # A `# SKIP` directive makes a test point a skip, whether it says ok or
    # `not ok` (cmocka 1.1.5 prints the latter).
    s=$(grep -cE '^(not )?ok [0-9]+[^#]*# (SKIP|skip)' "$out" | tr -d ' ')
    p=$(grep -E '^ok [0-9]+' "$out" | grep -cvE '# (SKIP|skip)' | tr -d ' ')
    f=$(grep -E '^not ok [0-9]+' "$out" | grep -cvE '# (SKIP|skip)' | tr -d ' ')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "$name: exited with status $rc without a failed test: counted as one failure"
        f=1
    fi
    echo "== $name: $p passed, $f failed, $s skipped"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
