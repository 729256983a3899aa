#!/bin/sh
# lint-tap.sh — `make lint` (cppcheck over core/) as one TAP point, for
# make test: its findings are printed as diagnostics when it fails.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "1..1"
if ! command -v cppcheck >/dev/null 2>&1; then
    echo "ok 1 # SKIP cppcheck is not installed (make deps installs it)"
    exit 0
fi
if cppcheck --quiet --enable=warning,portability --error-exitcode=1 \
    -Icore -Icore/store -Icore/linux core >"$out" 2>&1; then
    echo "ok 1 - cppcheck finds nothing in core/"
else
    echo "not ok 1 - cppcheck finds nothing in core/"
    sed 's/^/#   /' "$out"
    exit 1
fi
