#!/bin/bash
# hooks.sh FSBROKER — `fsbroker hooks` for Claude Code (TAP).
#
# Feeds the hook the JSON Claude Code documents on its stdin (session_id,
# cwd, hook_event_name, tool_name, tool_input, tool_use_id) and checks what
# a user relies on: the Bash command comes back rewritten to run under
# `fsbroker run --core` and, run as Claude Code would run it, is sandboxed
# (a denyRead file unreadable), in the directory Claude Code runs it from,
# and its changes land in that tool call's backups; a Write to .env is
# denied with the rule; an Edit's file is backed up before the tool writes
# and restorable after it did; each Stop seals
# one cycle (a turn that changed nothing none); SessionEnd stops the
# session's core and --idle-exit stops an unused one; install merges into
# the settings file and uninstall puts it back byte for byte, or takes out
# only its own hooks when the user edited the file since.
set -u
fsb=$(readlink -f "$1")
n=0 failed=0
tmp=$(mktemp -d)
export HOME=$tmp/home XDG_STATE_HOME=$tmp/state XDG_RUNTIME_DIR=$tmp/run
mkdir -p "$HOME" "$tmp/ws"
mkdir -m 700 "$XDG_RUNTIME_DIR"
unset CLAUDE_PROJECT_DIR
ws=$tmp/ws

stop_cores() {
    for s in "$XDG_STATE_HOME"/fsbroker/hosts/claude-code-*/; do
        [ -S "$s/admin.sock" ] || continue
        ev "$(basename "$s" | sed 's/^claude-code-//')" SessionEnd '' | "$fsb" hooks run claude-code
    done
}
trap 'stop_cores >/dev/null 2>&1; rm -rf "$tmp"' EXIT

. "$(dirname "$0")/tap.sh"

# ev SESSION EVENT EXTRA-FIELDS: one hook input as Claude Code sends it.
ev() {
    printf '{"session_id":"%s","transcript_path":"%s/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"%s"%s}' \
        "$1" "$tmp" "$ws" "$2" "$3"
}

hook() { # SESSION EVENT EXTRA → stdout: the hook's answer; status: its exit
    ev "$1" "$2" "$3" | "$fsb" hooks run claude-code >"$tmp/answer" 2>"$tmp/hook-err"
}

if ! command -v jq >/dev/null; then
    echo "1..0 # SKIP jq is not installed (the test reads JSON with it)"
    exit 0
fi

sid=s-$$
state=$XDG_STATE_HOME/fsbroker/hosts/claude-code-$sid
bk() { "$fsb" backup "$@" --state-dir "$state" --session "cc-$sid"; }

# ---- file tools -------------------------------------------------------------
echo 'SECRET=1' >"$ws/.env"
hook "$sid" PreToolUse ',"tool_name":"Write","tool_input":{"file_path":"'"$ws"'/.env","content":"x"},"tool_use_id":"toolu_w1"'
st=$?
ok "$([ $st -eq 0 ] && [ "$(jq -r .hookSpecificOutput.permissionDecision "$tmp/answer")" = deny ] &&
      jq -r .hookSpecificOutput.permissionDecisionReason "$tmp/answer" | grep -qF 'denyRead **/.env'; echo $?)" \
    "a Write to .env is denied, the rule in the reason" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
ok "$([ -S "$state/admin.sock" ]; echo $?)" "the first hook started the session's core" \
    "$(ls "$state" 2>&1)"

echo 'old text' >"$ws/edit.txt"
hook "$sid" PreToolUse ',"tool_name":"Edit","tool_input":{"file_path":"'"$ws"'/edit.txt","old_string":"old","new_string":"new"},"tool_use_id":"toolu_e1"'
st=$?
ok "$([ $st -eq 0 ] && ! grep -q permissionDecision "$tmp/answer"; echo $?)" \
    "an Edit the pack allows is left to Claude Code's own permissions" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
echo 'new text' >"$ws/edit.txt"       # the Edit tool writes
hook "$sid" PreToolUse ',"tool_name":"NotebookEdit","tool_input":{"notebook_path":"'"$ws"'/n.ipynb","new_source":"x"},"tool_use_id":"toolu_n1"'
ok $? "a NotebookEdit of a new file is allowed" "$(cat "$tmp/answer" "$tmp/hook-err")"

hook "$sid" Stop ',"stop_hook_active":false'
ok $? "Stop answers" "$(cat "$tmp/hook-err")"
cycles=$(bk list --json | jq 'length')
ok "$([ "$cycles" = 1 ]; echo $?)" "Stop sealed one cycle" "$(bk list 2>&1)"
ok "$(bk show 1 --json | jq -e '.paths[] | select(.toolCallId == "toolu_e1" and (.path | endswith("/edit.txt")))' >/dev/null; echo $?)" \
    "the Edit's file is in the cycle under its tool call" "$(bk show 1 2>&1 | tail -5)"
bk restore 1 "$ws/edit.txt" >"$tmp/out" 2>&1
ok "$([ "$(cat "$ws/edit.txt")" = 'old text' ]; echo $?)" \
    "backup restore puts the Edit's file back" "$(cat "$tmp/out")"

hook "$sid" Stop ',"stop_hook_active":false'
after=$(bk list --json | jq 'length')
ok "$([ "$after" = 1 ]; echo $?)" "a turn that changed nothing seals no cycle" "$(bk list 2>&1)"

# ---- Bash -------------------------------------------------------------------
hook "$sid" PreToolUse ',"tool_name":"Bash","tool_input":{"command":"echo made >\"it'"'"'s.txt\"; cat .env","description":"make a file","timeout":60000},"tool_use_id":"toolu_b1"'
st=$?
cmd=$(jq -r .hookSpecificOutput.updatedInput.command "$tmp/answer" 2>/dev/null)
ok "$([ $st -eq 0 ] && [ "$(jq -r .hookSpecificOutput.permissionDecision "$tmp/answer")" = allow ] &&
      [ "$(jq -r .hookSpecificOutput.updatedInput.timeout "$tmp/answer")" = 60000 ] &&
      case $cmd in *" run --core "*"--tool-call 'toolu_b1'"*) true ;; *) false ;; esac; echo $?)" \
    "Bash is rewritten to run --core with the tool call's id, the other fields kept" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
if ! (cd "$ws" && "$fsb" run --state-dir "$tmp/probe" -- true) >/dev/null 2>"$tmp/err"; then
    why="fsbroker run cannot sandbox here: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
    skip "the rewritten command runs sandboxed" "$why"
    skip "its change is in the tool call's backups" "$why"
else
    (cd "$ws" && bash -c "$cmd") >"$tmp/out" 2>"$tmp/err"
    st=$?
    ok "$([ "$(cat "$ws/it's.txt" 2>/dev/null)" = made ] && grep -q 'Permission denied' "$tmp/err" &&
          ! grep -q SECRET "$tmp/out"; echo $?)" \
        "the rewritten command runs sandboxed: its file made, .env unreadable" \
        "status $st: $(head -5 "$tmp/err")"
    # Regression: the sandbox starts in the workspace, so a command Claude
    # Code runs from a subdirectory (its shell after a cd) ran at the top.
    mkdir -p "$ws/deep/er"
    hook "$sid" PreToolUse ',"tool_name":"Bash","tool_input":{"command":"echo here >where.txt"},"tool_use_id":"toolu_b3"'
    (cd "$ws/deep/er" && bash -c "$(jq -r .hookSpecificOutput.updatedInput.command "$tmp/answer")") >/dev/null 2>"$tmp/err"
    ok "$([ -f "$ws/deep/er/where.txt" ] && [ ! -e "$ws/where.txt" ]; echo $?)" \
        "the rewritten command runs in the directory Claude Code runs it from, not the workspace's top" \
        "$(head -3 "$tmp/err")"
    hook "$sid" Stop ',"stop_hook_active":false'
    ok "$([ "$(bk list --json | jq length)" = 2 ] &&
          bk show --last --json | jq -e '.paths[] | select(.toolCallId == "toolu_b1" and .op == "create" and (.path | endswith("/it'"'"'s.txt")))' >/dev/null; echo $?)" \
        "its change is in the tool call's backups, sealed by the next Stop" "$(bk show --last 2>&1 | tail -4)"
fi

ev "$sid" PreToolUse ',"tool_name":"Bash","tool_input":{"command":"true"},"tool_use_id":"toolu_b2"' |
    "$fsb" hooks run claude-code --ask-bash >"$tmp/answer" 2>"$tmp/hook-err"
ok "$([ "$(jq -r .hookSpecificOutput.permissionDecision "$tmp/answer")" = ask ] &&
      jq -e '.hookSpecificOutput.updatedInput.command | contains(" run --core ")' "$tmp/answer" >/dev/null; echo $?)" \
    "--ask-bash keeps Claude Code's prompt for the rewritten command" "$(cat "$tmp/answer" "$tmp/hook-err")"

# ---- the session's core ends ------------------------------------------------
hook "$sid" SessionEnd ',"reason":"exit"'
gone=1
for _ in $(seq 100); do
    [ -S "$state/admin.sock" ] || { gone=0; break; }
    sleep 0.1
done
ok $gone "SessionEnd stops the session's core" "$(tail -3 "$state/core.log")"

hook "$sid-idle" PreToolUse ',"tool_name":"Bash","tool_input":{"command":"true"},"tool_use_id":"toolu_i1"'
ev "$sid-idle2" PreToolUse ',"tool_name":"Write","tool_input":{"file_path":"'"$ws"'/i.txt","content":"x"},"tool_use_id":"toolu_i2"' |
    "$fsb" hooks run claude-code --idle-exit 1 >/dev/null 2>&1
idle=$XDG_STATE_HOME/fsbroker/hosts/claude-code-$sid-idle2
gone=1
for _ in $(seq 100); do
    [ -S "$idle/admin.sock" ] || { gone=0; break; }
    sleep 0.1
done
ok $gone "--idle-exit stops a core nothing connects to" "$(tail -3 "$idle/core.log" 2>&1)"

ev "$sid-nocore" PreToolUse ',"tool_name":"Write","tool_input":{"file_path":"'"$ws"'/x.txt","content":"x"},"tool_use_id":"toolu_x1"' |
    XDG_STATE_HOME=/dev/null/state "$fsb" hooks run claude-code >"$tmp/answer" 2>"$tmp/hook-err"
st=$?
ok "$([ $st -eq 2 ] && grep -q 'cannot start or reach' "$tmp/hook-err"; echo $?)" \
    "a hook that cannot start its core blocks the tool (exit 2)" "status $st: $(cat "$tmp/hook-err")"
ev "$sid-nocore" PreToolUse ',"tool_name":"Bash","tool_input":{"command":"true"},"tool_use_id":"toolu_x2"' |
    XDG_STATE_HOME=/dev/null/state "$fsb" hooks run claude-code >"$tmp/answer" 2>"$tmp/hook-err"
st=$?
ok "$([ $st -eq 2 ] && [ ! -s "$tmp/answer" ]; echo $?)" \
    "so does a Bash hook: no rewritten command that could run unbrokered" "status $st: $(cat "$tmp/answer")"

cat >"$tmp/ask.lua" <<'PACK'
return {
	name = "hooks-ask",
	fsProfile = { read = { "/**" }, modify = { "/dev/null" } },
	ask = { modify = { "${workspace}/**" } },
}
PACK
mkdir -p "$ws/asked"
ev "$sid-ask" PreToolUse ',"tool_name":"Write","tool_input":{"file_path":"'"$ws"'/asked/a.txt","content":"x"},"tool_use_id":"toolu_a1"' |
    "$fsb" hooks run claude-code --rules "$tmp/ask.lua" >"$tmp/answer" 2>"$tmp/hook-err"
st=$?
ok "$([ $st -eq 0 ] && [ "$(jq -r .hookSpecificOutput.permissionDecision "$tmp/answer")" = deny ] &&
      jq -r .hookSpecificOutput.permissionDecisionReason "$tmp/answer" | grep -q 'needs an approval.*cannot wait'; echo $?)" \
    "a Write the pack asks about is refused, saying a file tool cannot wait for an approval" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err"; tail -3 "$XDG_STATE_HOME/fsbroker/hosts/claude-code-$sid-ask/core.log" 2>/dev/null)"

hook 'bad/session' Stop ''
ok "$([ $? -eq 2 ]; echo $?)" "a session id that is not a plain name is refused (exit 2)"
echo 'not json' | "$fsb" hooks run claude-code >/dev/null 2>&1
ok "$([ $? -eq 2 ]; echo $?)" "input that is not a hook event blocks (exit 2)"

# ---- install and uninstall --------------------------------------------------
proj=$tmp/proj
mkdir -p "$proj/.claude"
printf '{\n  "permissions": {"allow": ["Bash(ls:*)"]},\n  "hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "echo mine"}]}]},\n  "model": "x"\n}\n' \
    >"$proj/.claude/settings.json"
cp "$proj/.claude/settings.json" "$tmp/orig.json"
"$fsb" hooks install claude-code --project "$proj" >/dev/null
st=$?
s=$proj/.claude/settings.json
ok "$([ $st -eq 0 ] &&
      [ "$(jq -r '.hooks.PreToolUse | map(.matcher) | join(",")' "$s")" = "Read,Bash,Write|Edit|MultiEdit|NotebookEdit" ] &&
      jq -e '.hooks.Stop[0].hooks[0].command | endswith(" hooks run claude-code")' "$s" >/dev/null &&
      jq -e '.hooks.SessionEnd[0].hooks[0].type == "command"' "$s" >/dev/null &&
      [ "$(jq -c .permissions "$s")" = '{"allow":["Bash(ls:*)"]}' ] && [ "$(jq -r .model "$s")" = x ]; echo $?)" \
    "install merges PreToolUse (Bash; Write|Edit|MultiEdit|NotebookEdit), Stop and SessionEnd, keeping the rest" \
    "$(cat "$s")"
(cd "$proj" && "$fsb" hooks install claude-code --ask-bash) >/dev/null
ok "$([ "$(jq '.hooks.PreToolUse | length' "$s")" = 3 ] &&
      jq -e '.hooks.PreToolUse[1].hooks[0].command | endswith(" hooks run claude-code --ask-bash")' "$s" >/dev/null; echo $?)" \
    "a second install replaces its hooks (here with --ask-bash), adds nothing twice" "$(cat "$s")"
"$fsb" hooks uninstall claude-code --project "$proj" >/dev/null
ok "$(cmp -s "$tmp/orig.json" "$s"; echo $?)" "uninstall puts the settings file back byte for byte" \
    "$(diff "$tmp/orig.json" "$s" | head -5)"
"$fsb" hooks install claude-code --settings "$s" >/dev/null
jq '.theme = "dark"' "$s" >"$tmp/edited" && cat "$tmp/edited" >"$s"
"$fsb" hooks uninstall claude-code --settings "$s" >/dev/null
ok "$([ "$(jq -S -c . "$s")" = "$(jq -S -c '.theme = "dark"' "$tmp/orig.json")" ]; echo $?)" \
    "uninstall after an edit takes out only its own hooks" "$(cat "$s")"
mkdir "$tmp/fresh"
"$fsb" hooks install claude-code --project "$tmp/fresh" >/dev/null &&
    "$fsb" hooks uninstall claude-code --project "$tmp/fresh" >/dev/null
ok "$([ ! -e "$tmp/fresh/.claude/settings.json" ]; echo $?)" \
    "uninstall removes a settings file install created"
"$fsb" hooks install no-such-host >/dev/null 2>&1
ok "$([ $? -eq 2 ]; echo $?)" "another host is a usage error naming the docs"

echo "1..$n"
exit $failed
