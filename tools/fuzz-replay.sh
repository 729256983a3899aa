#!/bin/sh
# fuzz-replay.sh DIR TARGET...
# Run each fuzz harness's replay driver (DIR/fuzz_TARGET, built without
# libFuzzer) over its seed corpus and its regressions, printing TAP. A
# driver that crashes ends with a non-zero status: the suite fails.
dir=$1
shift
status=0
for t in "$@"; do
    echo "# fuzz_$t"
    "$dir/fuzz_$t" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" || status=1
done
exit $status
