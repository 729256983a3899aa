#!/bin/sh
# run-fuzz.sh BUILD SECONDS TARGET...
# Run each libFuzzer harness BUILD/fuzz_TARGET for SECONDS, starting from the
# committed seeds (tests/fuzz/corpus/TARGET) and past crashes
# (tests/fuzz/regressions/TARGET); new inputs go to BUILD/corpus/TARGET
# (never committed), a crashing input to BUILD/crashes/TARGET-*. One line
# per target with its executions and exec/s, then `N passed, N failed`
# (passed: no crash, no hang, no leak, no sanitizer report).
build=$1 seconds=$2
shift 2
passed=0 failed=0
mkdir -p "$build/crashes"
for t in "$@"; do
    corpus="$build/corpus/$t" log="$build/$t.log"
    mkdir -p "$corpus" "tests/fuzz/regressions/$t"
    # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: the
    # harness's memory, sanitizers included.
    "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" \
        "$corpus" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ -z "$crash" ]; then
        passed=$((passed + 1))
        echo "ok   fuzz_$t: ${execs:-?} runs, ${speed:-?} exec/s, ${cov:-cov: ?}, no crash ($log)"
    else
        failed=$((failed + 1))
        echo "FAIL fuzz_$t: exited $rc after ${execs:-?} runs; input: ${crash:-none written} ($log)"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 5 | sed 's/^/     /'
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
