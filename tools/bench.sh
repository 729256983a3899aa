#!/bin/sh
# tools/bench.sh BUILD — run the benchmarks in bench/ against BUILD/fsbroker,
# all in this one run on this machine, and print their tables. Timings are
# reported, never judged: only a benchmark that cannot run fails.
#
#   BENCH_ITERATIONS  round trips per row (default 20000)
#   BENCH_SECONDS     seconds per in-process case (default 0.5)
#   BENCH_BACKUP_RUNS runs of each 64 MiB backup case (default 7; the 1 MiB
#                     and 4 KiB grants run 3x and 5x as many)
#   BENCH_LOAD_CLIENTS, BENCH_LOAD_REQUESTS  the mixed load (bench/load.c):
#                     clients and requests per client (default 64 x 100000,
#                     about 25 minutes on 2 vCPUs; 64 x 1000 with BENCH_QUICK)
#   BENCH_QUICK=1     the mixed load and the Linux runtime part
#                     (tools/bench-runtime.sh) as a smoke version of about 40 s,
#                     the backup costs (tools/bench-store.sh) in one round
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${FSBROKER:-$build/fsbroker}
# The bench programs sit in BUILD/bench, where the core's lookup of
# <exe>/../lua would miss the engine; name it.
export FSBROKER_LUA_DIR="${FSBROKER_LUA_DIR:-$top/lua}"

work=$(mktemp -d /tmp/fsb-bench-pack.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

# A pack with 200 deny globs on top of the default one, none of which
# matches the benchmark's request (<workspace>/src/main.c): the cost of
# checking them all is what the rows with "200-rule pack" add.
pack=$work/bench200.lua
{
    echo '-- bench200: the default pack plus 200 deny globs that never match'
    echo 'return {'
    echo '  name = "bench200",'
    echo '  include = { "default" },'
    echo '  denyRead = {'
    i=1
    while [ $i -le 100 ]; do
        case $((i % 4)) in
            0) echo "    \"~/.bench-secret-$i/**\"," ;;
            1) echo "    \"**/*.bench-key-$i\"," ;;
            2) echo "    \"\${workspace}/generated-$i/**\"," ;;
            3) echo "    \"/opt/bench-$i/{etc,var}/**/*.conf\"," ;;
        esac
        i=$((i + 1))
    done
    echo '  },'
    echo '  denyModify = {'
    while [ $i -le 200 ]; do
        case $((i % 4)) in
            0) echo "    \"**/.bench-lock-$i\"," ;;
            1) echo "    \"\${workspace}/vendor-$i/**\"," ;;
            2) echo "    \"~/.config/bench-$i/*.json\"," ;;
            3) echo "    \"**/bench-$i/**/[a-z]*.lock\"," ;;
        esac
        i=$((i + 1))
    done
    echo '  },'
    echo '}'
} >"$pack"

echo "fsbroker benchmarks: $(uname -sr), $(nproc) CPU(s), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo
"$build/bench/roundtrip" "$bin" "$pack" "${BENCH_ITERATIONS:-20000}"
echo
"$build/bench/decide" "$pack" "${BENCH_SECONDS:-0.5}"
echo
# One routed write-open, create and rename under fsbroker run, stage by
# stage, against the raw notification round trip (tools/bench-stages.sh).
bash "$top/tools/bench-stages.sh" "$build"
echo
"$build/bench/backup" "$bin" "${BENCH_BACKUP_RUNS:-7}"
echo
# The mixed load under reloads with a raising pack (docs/SECURITY.md,
# "Faults and load"): fails only on a wrong or missing answer or a crash.
echo "Mixed load: reads allowed/denied/errored, write grants with backups, host renames, a reload every 100 ms"
if [ -n "${BENCH_QUICK:-}" ]; then load_requests=1000; else load_requests=100000; fi
FSBROKER="$bin" "$build/bench/load" "${BENCH_LOAD_CLIENTS:-64}" "${BENCH_LOAD_REQUESTS:-$load_requests}"
echo
# The Linux runtime: `fsbroker run` against bare and bwrap-alone runs of the
# same commands (BENCH_QUICK=1: a smoke version of it).
bash "$top/tools/bench-runtime.sh" "$build"
echo
# The everyday commands (chmod -R, mv, rm -rf, sed -i, git checkout, npm ci)
# under fsbroker run against bare, with store bytes and fsyncs per workload.
bash "$top/tools/bench-workloads.sh" "$build"
# Backups per change kind under `fsbroker run`: time, bytes copied, syncs
# per change (tools/bench-store.sh).
bash "$top/tools/bench-store.sh" "$build"
echo
# The brokered clients (toybox, zsh) against stock ones (tools/bench-clients.sh).
bash "$top/tools/bench-clients.sh" "$build"
echo
# The npm package (clients/node): core.run and fsbroker-mcp's write_file
# against `fsbroker run --core` by hand and a plain fs.writeFile.
if command -v node >/dev/null 2>&1; then
    sh "$top/tools/node-test.sh" --build-only "$bin" >/dev/null &&
        node "$top/clients/node/bench/overhead.mjs" "$bin" "${BENCH_NODE_CALLS:-50}"
else
    echo "node package: skipped (no node on PATH)"
fi
