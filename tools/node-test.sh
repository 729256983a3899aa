#!/bin/sh
# node-test.sh FSBROKER — the npm package's suite (clients/node) against the
# real core: npm ci when node_modules is missing or older than the lockfile,
# tsc, then node --test with TAP output.
set -eu
fsbroker=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/../clients/node"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund >&2
    touch node_modules
fi
npx --no-install tsc -p .
FSBROKER=$fsbroker exec node --test --test-reporter=tap dist/test/*.test.js
