#!/bin/sh
# node-test.sh [--build-only] FSBROKER — the npm package's suite (clients/node) against the
# real core: npm ci when node_modules is missing or older than the lockfile,
# tsc, then node --test with TAP output.
set -eu
build_only=false
if [ "$1" = --build-only ]; then
    build_only=true
    shift
fi
fsbroker=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../clients/node"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund >&2
    touch node_modules
fi
npx --no-install tsc -p .
$build_only && exit 0
FSBROKER=$fsbroker exec node --test --test-reporter=tap dist/test/*.test.js
