#!/usr/bin/env bash
# The second half of `make demo`: the core as an agent host keeps it
# (`fsbroker serve`), spoken to by its clients and its control channel. Start
# it on the default pack in a temp dir and play a short session — an allowed
# write (fd received), a denied credential read, an ask, its approval, a live
# reload that changes a verdict, then a turn that overwrites a file, renames
# over another and deletes one to the trash (each backed up first), and one
# command that puts the workspace back byte for byte.
set -euo pipefail
build=${1:-build}
fsb=$(realpath "$build/fsbroker")
client=$build/demo-client
demo=$(mktemp -d /tmp/fsbroker-demo.XXXXXX)
mkdir -p "$demo/home/.ssh" "$demo/ws" "$demo/rules" "$demo/tmp"
echo "not a real key" >"$demo/home/.ssh/id_ed25519"
echo "notes" >"$demo/home/notes.txt"
printf '# plan\n- ship it\n' >"$demo/ws/plan.md"
sock=$demo/sock/broker.sock
session=demo

# The operator's pack: the shipped default, plus one rule we will change live.
cat >"$demo/rules/demo.lua" <<'LUA'
return {
  name = "demo",
  include = { "default" },
  denyModify = { "${workspace}/generated/**" },
}
LUA

# XDG_DATA_HOME unset: the demo's trash is $demo/home/.local/share/Trash.
coproc CORE { HOME=$demo/home TMPDIR=$demo/tmp exec env -u XDG_DATA_HOME "$fsb" serve --socket "$sock" \
    --session "$session" --workspace "$demo/ws" --state-dir "$demo/state" \
    --rules "$demo/rules/demo.lua" 2>"$demo/core.log"; }
core_pid=$CORE_PID
cleanup() {
    kill "$core_pid" 2>/dev/null || true
    wait "$core_pid" 2>/dev/null || true
    rm -rf "$demo"
}
trap cleanup EXIT
mkdir -p "$demo/tmp"

control() {   # send one control request, print it and its reply
    echo "  -> $1"
    echo "$1" >&"${CORE[1]}"
    local reply
    while read -r -t 10 reply <&"${CORE[0]}"; do
        case $reply in *'"event"'*) continue ;; esac
        echo "  <- $reply"
        LAST_REPLY=$reply
        return 0
    done
    echo "no reply from the core; its log:" >&2
    cat "$demo/core.log" >&2
    exit 1
}
request() {   # send one client request over the socket
    printf '  -> %s\n' "$(printf '%s' "$1" | tr '\t' ' ')"
    "$client" "$sock" "$1" "${2:-}"
}
say() { printf '\n== %s\n' "$*"; }

read -r -t 10 ready <&"${CORE[0]}" || { cat "$demo/core.log"; exit 1; }
say "the core is up: $ready"
T=$'\t'
ws=$demo/ws

say "1. an allowed write: the core opens the file and passes the fd"
request "fsbroker.read-write${T}$ws/hello.txt${T}$session${T}call-1${T}open=0x241:0644" "hello from the sandbox"$'\n'
echo "     $ws/hello.txt now holds: $(cat "$ws/hello.txt")"

say "2. a denied read of a credential"
request "fsbroker.read${T}$demo/home/.ssh/id_ed25519${T}$session${T}call-1"

say "3. a write outside the workspace, under \$HOME: the pack says ask"
request "fsbroker.read-write${T}$demo/home/notes.txt${T}$session${T}call-2${T}open=0x401:0644"
control '{"id":1,"command":"PromptBlocks"}'
block=$(sed -n 's/.*"blockId":"\([^"]*\)".*/\1/p' <<<"$LAST_REPLY")

say "4. the host approves it once; the same request now gets its fd"
control "{\"id\":2,\"command\":\"Approve\",\"blockId\":\"$block\",\"scope\":\"once\"}"
request "fsbroker.read-write${T}$demo/home/notes.txt${T}$session${T}call-2${T}open=0x401:0644" "approved line"$'\n'
echo "     notes.txt now ends with: $(tail -n 1 "$demo/home/notes.txt")"

say "5. a live reload: writes to generated/ are denied; the operator lifts that rule"
mkdir -p "$ws/generated"
request "fsbroker.read-write${T}$ws/generated/out.c${T}$session${T}call-3${T}open=0x241:0644"
sed -i 's|denyModify = .*|denyModify = { },|' "$demo/rules/demo.lua"
echo "     (pack edited; the core reloads it on save)"
for _ in $(seq 50); do
    sleep 0.1
    grep -q "reloaded pack" "$demo/core.log" && break
done
request "fsbroker.read-write${T}$ws/generated/out.c${T}$session${T}call-3${T}open=0x241:0644" "int x;"$'\n'

say "6. the end of the first turn: the host seals it as cycle 1"
control '{"id":3,"command":"CommitModifyBackup","commitMsg":"first turn"}'

say "7. a second turn: an overwrite, a rename over a file, a delete to the trash"
cp -a "$ws" "$demo/ws.before"
request "fsbroker.read-write${T}$ws/hello.txt${T}$session${T}call-4${T}open=0x241:0644" "overwritten!"$'\n'
request "fsbroker.read-write${T}$ws/out.new${T}$session${T}call-4${T}open=0x241:0644" "int y;"$'\n'
request "{\"id\":1,\"command\":\"HostFileOperation\",\"operation\":\"rename\",\"from\":\"$ws/out.new\",\"to\":\"$ws/generated/out.c\",\"sessionId\":\"$session\",\"toolCallId\":\"call-5\"}"
request "{\"id\":2,\"command\":\"HostFileOperation\",\"operation\":\"delete\",\"path\":\"$ws/plan.md\",\"sessionId\":\"$session\",\"toolCallId\":\"call-6\"}"
echo "     hello.txt: $(cat "$ws/hello.txt"); generated/out.c: $(cat "$ws/generated/out.c");" \
    "plan.md is in the trash: $(ls "$demo/home/.local/share/Trash/files")"
control '{"id":4,"command":"CommitModifyBackup","commitMsg":"second turn"}'
"$fsb" backup list --state-dir "$demo/state" --session "$session"
echo
"$fsb" backup show --last --state-dir "$demo/state" --session "$session"
echo
"$fsb" backup diff --last --state-dir "$demo/state" --session "$session" "$ws/hello.txt" || true

say "8. one command puts the last turn back"
"$fsb" backup restore --last --state-dir "$demo/state" --session "$session"
if diff -r "$demo/ws.before" "$ws" >/dev/null; then
    echo "     the workspace is back byte for byte; the trash holds:" \
        "$(ls -A "$demo/home/.local/share/Trash/files" | wc -l) entries"
else
    echo "     the workspace differs from before the turn:" >&2
    diff -r "$demo/ws.before" "$ws" >&2
    exit 1
fi

say "9. the audit log: one hash-chained line per decision"
tail -n 2 "$demo/state/audit/$session.jsonl" | cut -c1-160
"$fsb" audit verify "$demo/state/audit/$session.jsonl"

say "10. stats, and shutdown"
control '{"id":5,"command":"Stats"}'
control '{"id":6,"command":"Shutdown"}'
wait "$core_pid" && echo "  the core exited cleanly"

