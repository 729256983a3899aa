#!/usr/bin/env bash
# make demo: the main job first — unmodified programs under `fsbroker run`,
# their changes judged, backed up and undone (tools/demo_run.sh) — then the
# same core as an agent host keeps it, `fsbroker serve`, with its clients and
# control channel (tools/demo_serve.sh).
set -euo pipefail
build=${1:-build}
here=$(dirname "$0")
printf '######## Part 1: fsbroker run\n'
bash "$here/demo_run.sh" "$build"
printf '\n######## Part 2: fsbroker serve, the core an agent host keeps\n'
bash "$here/demo_serve.sh" "$build"
