#!/bin/sh
# tools/bench-peers.sh BUILD — the runtime benchmark (tools/bench-runtime.sh)
# with two peers added to every workload: @anthropic-ai/sandbox-runtime
# (`srt --settings FILE -c CMD`, from the workspace, filesystem.allowWrite =
# the workspace) and @openai/codex (`codex sandbox -P PROFILE -C WS -- CMD`,
# a [permissions.PROFILE.filesystem] profile that reads / and writes the
# workspace). Never run in CI: it installs both from npm into BUILD/peers/
# (not committed; delete it to get the latest versions) and needs the
# network once. A peer that cannot run here is printed with the reason.
#
#   BENCH_QUICK=1   the smoke version, as for make bench
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
peers=$(cd "$build" && pwd)/peers

echo "Peers, installed into $peers:"
mkdir -p "$peers/bin"
if [ ! -x "$peers/node_modules/.bin/srt" ] || [ ! -x "$peers/node_modules/.bin/codex" ]; then
    if command -v npm >/dev/null 2>&1; then
        npm install --prefix "$peers" --no-audit --no-fund \
            @anthropic-ai/sandbox-runtime @openai/codex >"$peers/npm.log" 2>&1 ||
            echo "  npm install failed; see $peers/npm.log"
    else
        echo "  npm is not installed: neither peer can be installed"
    fi
fi

# srt is a node program; codex's npm entry is a node wrapper around a static
# binary, which is run directly so that node's start-up is not counted
# against it. codex sandbox looks its helper codex-linux-sandbox up in PATH:
# the same binary, which dispatches on its own name.
ln -sf ../node_modules/.bin/srt "$peers/bin/srt"
codex=
for c in "$peers"/node_modules/@openai/codex-linux-*/vendor/*/bin/codex; do
    [ -x "$c" ] && codex=$c && break
done
if [ -n "$codex" ]; then
    ln -sf "$codex" "$peers/bin/codex"
    ln -sf "$codex" "$peers/bin/codex-linux-sandbox"
    # srt wants ripgrep; codex ships one.
    rg=${codex%/bin/codex}/codex-path/rg
    command -v rg >/dev/null 2>&1 || [ ! -x "$rg" ] || ln -sf "$rg" "$peers/bin/rg"
fi
command -v socat >/dev/null 2>&1 || echo "  srt needs socat (apt-get install socat)"
echo

BENCH_PEERS=$peers bash "$top/tools/bench-runtime.sh" "$build"
