#!/bin/bash
# hooks_codex.sh FSBROKER — `fsbroker hooks` for Codex CLI (TAP).
#
# Feeds the installed hook the JSON Codex CLI documents on its stdin (Claude
# Code's fields: session_id, transcript_path, cwd, hook_event_name,
# tool_name, tool_input, tool_use_id) and checks what a user relies on: a
# Bash command is refused with the exact `fsbroker run --core` line to run
# instead, and that line is allowed, runs sandboxed where Codex runs it and
# its change lands in the turn's cycle, which restores it; any other command
# (the line with something added) is refused; an apply_patch that touches
# .env is blocked whole, naming the path and the rule; an allowed patch's
# files (added, updated, moved, deleted) are backed up first and restorable;
# a malformed patch (a second one after the end included, a `..` after a
# symlink) is blocked
# (fail closed); each Stop seals one cycle;
# install merges into .codex/hooks.json, twice adds nothing twice, uninstall
# puts the file back byte for byte.
set -u
fsb=$(readlink -f "$1")
n=0 failed=0
tmp=$(mktemp -d)
export HOME=$tmp/home XDG_STATE_HOME=$tmp/state XDG_RUNTIME_DIR=$tmp/run
mkdir -p "$HOME" "$tmp/ws/sub"
mkdir -m 700 "$XDG_RUNTIME_DIR"
unset CLAUDE_PROJECT_DIR GEMINI_PROJECT_DIR
ws=$tmp/ws
sid=c-$$
state=$XDG_STATE_HOME/fsbroker/hosts/codex-$sid
stop_core() {
    [ -S "$state/admin.sock" ] || return 0
    printf '{"id":1,"command":"Shutdown"}\n' | timeout 5 python3 -c '
import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read()); s.recv(4096)' "$state/admin.sock"
}
trap 'stop_core >/dev/null 2>&1; rm -rf "$tmp"' EXIT

. "$(dirname "$0")/tap.sh"

if ! command -v jq >/dev/null || ! command -v python3 >/dev/null; then
    echo "1..0 # SKIP jq or python3 is not installed (the test reads JSON with jq, stops the core with python3)"
    exit 0
fi

# ev EVENT EXTRA-FIELDS [CWD]: one hook input as Codex CLI sends it.
ev() {
    printf '{"session_id":"%s","transcript_path":"%s/t.jsonl","cwd":"%s","model":"gpt-5","hook_event_name":"%s"%s}' \
        "$sid" "$tmp" "${3:-$ws}" "$1" "$2"
}
hook() { # EVENT EXTRA [CWD]: the installed hook's command, run by a shell as Codex does
    ev "$@" | sh -c "$hookcmd" >"$tmp/answer" 2>"$tmp/hook-err"
}
decision() { jq -r .hookSpecificOutput.permissionDecision "$tmp/answer" 2>/dev/null; }
reason() { jq -r .hookSpecificOutput.permissionDecisionReason "$tmp/answer" 2>/dev/null; }
bk() { "$fsb" backup "$@" --state-dir "$state" --session "cx-$sid"; }
# patch ID TEXT: an apply_patch call (the patch in tool_input.command).
patch() {
    hook PreToolUse ',"tool_name":"apply_patch","tool_input":{"command":'"$(printf '%s' "$2" | jq -Rs .)"'},"tool_use_id":"'"$1"'"'
}

# ---- install ----------------------------------------------------------------
mkdir -p "$ws/.codex"
printf '{\n  "hooks": {\n    "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]\n  }\n}\n' >"$ws/.codex/hooks.json"
cp "$ws/.codex/hooks.json" "$tmp/orig.json"
h=$ws/.codex/hooks.json
"$fsb" hooks install codex --project "$ws" >/dev/null
st=$?
ok "$([ $st -eq 0 ] &&
      [ "$(jq -r '.hooks.PreToolUse | map(.matcher) | join(",")' "$h")" = "Bash,apply_patch" ] &&
      jq -e '.hooks.Stop[0].hooks[0] | .type == "command" and (.command | endswith(" hooks run codex"))' "$h" >/dev/null &&
      [ "$(jq -r '.hooks.SessionStart[0].hooks[0].command' "$h")" = "echo hi" ]; echo $?)" \
    "install merges PreToolUse (Bash; apply_patch) and Stop into .codex/hooks.json, keeping the rest" "$(cat "$h")"
(cd "$ws" && "$fsb" hooks install codex) >/dev/null
ok "$([ "$(jq '.hooks.PreToolUse | length' "$h")" = 2 ] && [ "$(jq '.hooks.Stop | length' "$h")" = 1 ]; echo $?)" \
    "a second install adds nothing twice" "$(cat "$h")"
hookcmd=$(jq -r '.hooks.PreToolUse[0].hooks[0].command' "$h")

# ---- apply_patch ------------------------------------------------------------
echo 'SECRET=1' >"$ws/.env"
printf 'one\ntwo\n' >"$ws/keep.txt"
patch call_p1 "$(printf '*** Begin Patch\n*** Update File: keep.txt\n@@\n-one\n+ONE\n two\n*** Update File: .env\n@@\n-SECRET=1\n+SECRET=2\n*** End Patch\n')"
st=$?
ok "$([ $st -eq 0 ] && [ "$(decision)" = deny ] && reason | grep -qF "$ws/.env" &&
      reason | grep -qF 'denyRead **/.env' && reason | grep -q 'whole patch'; echo $?)" \
    "an apply_patch touching .env is blocked whole, naming the path and the rule" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"

printf 'gone\n' >"$ws/old.txt"
printf 'moving\n' >"$ws/sub/from.txt"
p2=$(printf "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: new.txt\n+fresh\n*** Update File: keep.txt\n@@\n-one\n+ONE\n two\n*** Update File: sub/from.txt\n*** Move to: sub/to.txt\n@@\n-moving\n+moved\n*** Delete File: ./sub/../old.txt\n*** End Patch\nEOF\n")
patch call_p2 "$p2"
st=$?
ok "$([ $st -eq 0 ] && [ ! -s "$tmp/answer" ]; echo $?)" \
    "an apply_patch the pack allows (add, update, move, delete) is left to Codex's own approvals" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
# what apply_patch then does
echo fresh >"$ws/new.txt"; printf 'ONE\ntwo\n' >"$ws/keep.txt"
echo moved >"$ws/sub/to.txt"; rm "$ws/sub/from.txt" "$ws/old.txt"
hook Stop ',"stop_hook_active":false'
st=$?
ok "$([ $st -eq 0 ] && [ "$(bk list --json | jq length)" = 1 ] &&
      [ "$(bk show 1 --json | jq '[.paths[] | select(.toolCallId == "call_p2")] | length')" -ge 3 ]; echo $?)" \
    "Stop seals one cycle holding the patch's files under its tool call" \
    "status $st: $(cat "$tmp/hook-err"; bk show 1 2>&1 | tail -6)"
bk restore 1 >"$tmp/out" 2>&1
ok "$([ "$(cat "$ws/keep.txt")" = "$(printf 'one\ntwo')" ] && [ "$(cat "$ws/old.txt")" = gone ] &&
      [ "$(cat "$ws/sub/from.txt")" = moving ]; echo $?)" \
    "backup restore puts the updated, deleted and moved files back" "$(cat "$tmp/out")"
hook Stop ',"stop_hook_active":false'
ok "$([ "$(bk list --json | jq length)" = 1 ]; echo $?)" "a turn that changed nothing seals no cycle" "$(bk list 2>&1)"

# A `..` after a symlink names another file than its text says: refused.
ln -s "$tmp" "$ws/outside"
for bad in 'no patch at all' \
           "$(printf '*** Begin Patch\n*** Update File: keep.txt\n@@\n-one\n+x\n')" \
           "$(printf '*** Begin Patch\n*** Frobnicate File: keep.txt\n*** End Patch\n')" \
           "$(printf '*** Begin Patch\nstray line\n*** End Patch\n')" \
           "$(printf '*** Begin Patch\n*** Move to: x.txt\n*** End Patch\n')" \
           "$(printf '*** Begin Patch\n*** End Patch\n')" \
           "$(printf '*** Begin Patch\n*** Update File: keep.txt\n@@\n-one\n+x\n*** End Patch\n*** Begin Patch\n*** Delete File: .env\n*** End Patch\n')" \
           "$(printf '*** Begin Patch\n*** Delete File: outside/../keep.txt\n*** End Patch\n')"; do
    cp "$ws/keep.txt" "$tmp/keep.before"
    patch call_bad "$bad"
    st=$?
    if ! { [ $st -eq 0 ] && [ "$(decision)" = deny ] && reason | grep -q 'not applied'; }; then
        ok 1 "a malformed patch is blocked: $(printf '%s' "$bad" | head -c 60 | tr '\n' '|')" \
            "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
        continue
    fi
    ok 0 "a malformed patch is blocked: $(printf '%s' "$bad" | head -c 60 | tr '\n' '|')"
done

# ---- Bash -------------------------------------------------------------------
hook PreToolUse ',"tool_name":"Bash","tool_input":{"command":"echo made >\"it'"'"'s.txt\"; cat ../.env"},"tool_use_id":"call_b1"' "$ws/sub"
st=$?
line=$(reason | sed -n '$p')
ok "$([ $st -eq 0 ] && [ "$(decision)" = deny ] && ! jq -e .hookSpecificOutput.updatedInput "$tmp/answer" >/dev/null &&
      case $line in *" run --core '$state' --tool-call 'call_b1' -- /bin/bash -c "*) true ;; *) false ;; esac; echo $?)" \
    "a Bash command is refused, the reason giving the run --core line to run instead" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
hook PreToolUse ',"tool_name":"Bash","tool_input":{"command":'"$(printf '%s' "$line" | jq -Rs .)"'},"tool_use_id":"call_b2"' "$ws/sub"
ok "$([ "$(decision)" = allow ]; echo $?)" "that line, run by the model, is allowed" "$(cat "$tmp/answer" "$tmp/hook-err")"
for tamper in "$line; rm -rf ~" "true; $line" "${line/--tool-call/--session x --tool-call}" \
              "$(printf '%s' "$line" | sed 's/fsbroker-cwd/fsbroker-cwd x/')"; do
    hook PreToolUse ',"tool_name":"Bash","tool_input":{"command":'"$(printf '%s' "$tamper" | jq -Rs .)"'},"tool_use_id":"call_b3"' "$ws/sub"
    [ "$(decision)" = deny ] || break
done
ok "$([ "$(decision)" = deny ]; echo $?)" "the line with anything added or changed is refused" "$tamper: $(cat "$tmp/answer")"
if ! (cd "$ws" && "$fsb" run --state-dir "$tmp/probe" -- true) >/dev/null 2>"$tmp/err"; then
    why="fsbroker run cannot sandbox here: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
    skip "the line runs sandboxed where Codex runs it" "$why"
    skip "its change lands in the turn's cycle and restores" "$why"
else
    (cd "$ws/sub" && sh -c "$line") >"$tmp/out" 2>"$tmp/err"
    st=$?
    ok "$([ "$(cat "$ws/sub/it's.txt" 2>/dev/null)" = made ] && grep -q 'Permission denied' "$tmp/err" &&
          ! grep -q SECRET "$tmp/out"; echo $?)" \
        "the line runs sandboxed where Codex runs it: its file made in sub/, .env unreadable" \
        "status $st: $(head -5 "$tmp/err")"
    hook Stop ',"stop_hook_active":false'
    ok "$([ "$(bk list --json | jq length)" = 2 ] &&
          bk show --last --json | jq -e '.paths[] | select(.toolCallId == "call_b1" and .op == "create" and (.path | endswith("/sub/it'"'"'s.txt")))' >/dev/null &&
          bk restore 2 >/dev/null 2>&1 && [ ! -e "$ws/sub/it's.txt" ]; echo $?)" \
        "its change lands in the turn's cycle under the tool call, sealed by Stop, and restores" \
        "$(bk show --last 2>&1 | tail -4)"
fi
ev PreToolUse ',"tool_name":"Bash","tool_input":{"command":"true"},"tool_use_id":"call_x"' |
    XDG_STATE_HOME=/dev/null/state "$fsb" hooks run codex >"$tmp/answer" 2>"$tmp/hook-err"
st=$?
ok "$([ $st -eq 2 ] && grep -q 'cannot start or reach' "$tmp/hook-err"; echo $?)" \
    "a hook that cannot start its core blocks the tool (exit 2)" "status $st: $(cat "$tmp/hook-err")"

# ---- uninstall --------------------------------------------------------------
"$fsb" hooks uninstall codex --project "$ws" >/dev/null
ok "$(cmp -s "$tmp/orig.json" "$h"; echo $?)" "uninstall puts .codex/hooks.json back byte for byte" \
    "$(diff "$tmp/orig.json" "$h" | head -5)"

echo "1..$n"
exit $failed
