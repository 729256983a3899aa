#!/bin/bash
# hooks_gemini.sh FSBROKER — `fsbroker hooks` for Gemini CLI (TAP).
#
# Feeds the installed hook the JSON Gemini CLI documents on its stdin
# (session_id, transcript_path, cwd, hook_event_name, timestamp; BeforeTool
# adds tool_name and tool_input) and checks what a user relies on: a
# run_shell_command comes back rewritten (hookSpecificOutput.tool_input, its
# dir_path left alone) to run under `fsbroker run --core` and, run where
# Gemini runs it (dir_path), is sandboxed and its change lands in the turn's
# cycle, which restores it; a write_file to .env is denied with the rule; a
# replace's file is backed up first and restorable; each AfterAgent seals
# one cycle and answers {} (a deny would make Gemini retry the turn);
# SessionEnd stops the core; install merges into .gemini/settings.json,
# twice adds nothing twice, uninstall puts the file back byte for byte.
set -u
fsb=$(readlink -f "$1")
n=0 failed=0
tmp=$(mktemp -d)
export HOME=$tmp/home XDG_STATE_HOME=$tmp/state XDG_RUNTIME_DIR=$tmp/run
mkdir -p "$HOME" "$tmp/ws/sub"
mkdir -m 700 "$XDG_RUNTIME_DIR"
unset GEMINI_PROJECT_DIR CLAUDE_PROJECT_DIR
ws=$tmp/ws
sid=g-$$
state=$XDG_STATE_HOME/fsbroker/hosts/gemini-cli-$sid
trap 'ev SessionEnd "" | "$fsb" hooks run gemini-cli >/dev/null 2>&1; rm -rf "$tmp"' EXIT

. "$(dirname "$0")/tap.sh"

if ! command -v jq >/dev/null; then
    echo "1..0 # SKIP jq is not installed (the test reads JSON with it)"
    exit 0
fi

# ev EVENT EXTRA-FIELDS: one hook input as Gemini CLI sends it.
ev() {
    printf '{"session_id":"%s","transcript_path":"%s/t.json","cwd":"%s","hook_event_name":"%s","timestamp":"2026-12-02T05:00:00.000Z"%s}' \
        "$sid" "$tmp" "$ws" "$1" "$2"
}

# hook EVENT EXTRA: runs the installed hook's command as Gemini does (its
# shell, GEMINI_PROJECT_DIR set); stdout in $tmp/answer.
hook() {
    ev "$1" "$2" | GEMINI_PROJECT_DIR=$ws GEMINI_SESSION_ID=$sid GEMINI_CWD=$ws \
        sh -c "$hookcmd" >"$tmp/answer" 2>"$tmp/hook-err"
}
bk() { "$fsb" backup "$@" --state-dir "$state" --session "gm-$sid"; }

# ---- install ----------------------------------------------------------------
proj=$ws
mkdir -p "$proj/.gemini"
printf '{\n  "model": {"name": "gemini-2.5-pro"},\n  "hooks": {"BeforeTool": [{"matcher": "read_file", "hooks": [{"type": "command", "command": "echo mine"}]}]}\n}\n' \
    >"$proj/.gemini/settings.json"
cp "$proj/.gemini/settings.json" "$tmp/orig.json"
s=$proj/.gemini/settings.json
"$fsb" hooks install gemini-cli --project "$proj" >/dev/null
st=$?
ok "$([ $st -eq 0 ] &&
      [ "$(jq -r '.hooks.BeforeTool | map(.matcher) | join(",")' "$s")" = "read_file,run_shell_command,write_file|replace" ] &&
      jq -e '.hooks.AfterAgent[0].hooks[0] | .name == "fsbroker" and .type == "command" and (.command | endswith(" hooks run gemini-cli"))' "$s" >/dev/null &&
      jq -e '.hooks.SessionEnd[0].hooks[0].type == "command"' "$s" >/dev/null &&
      [ "$(jq -r .model.name "$s")" = gemini-2.5-pro ]; echo $?)" \
    "install merges BeforeTool (run_shell_command; write_file|replace), AfterAgent and SessionEnd into .gemini/settings.json, keeping the rest" \
    "$(cat "$s")"
"$fsb" hooks install gemini-cli --project "$proj" >/dev/null
ok "$([ "$(jq '.hooks.BeforeTool | length' "$s")" = 3 ] && [ "$(jq '.hooks.AfterAgent | length' "$s")" = 1 ]; echo $?)" \
    "a second install adds nothing twice" "$(cat "$s")"
hookcmd=$(jq -r '.hooks.BeforeTool[1].hooks[0].command' "$s")

# ---- file tools -------------------------------------------------------------
echo 'SECRET=1' >"$ws/.env"
hook BeforeTool ',"tool_name":"write_file","tool_input":{"file_path":"'"$ws"'/.env","content":"x"}'
st=$?
ok "$([ $st -eq 0 ] && [ "$(jq -r .decision "$tmp/answer")" = deny ] &&
      jq -r .reason "$tmp/answer" | grep -qF 'denyRead **/.env' && [ "$(cat "$ws/.env")" = SECRET=1 ]; echo $?)" \
    "a write_file to .env is denied, the rule in the reason" "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"

echo 'old text' >"$ws/edit.txt"
hook BeforeTool ',"tool_name":"replace","tool_input":{"file_path":"edit.txt","old_string":"old","new_string":"new","instruction":"change it"}'
st=$?
ok "$([ $st -eq 0 ] && [ "$(jq -c . "$tmp/answer")" = '{}' ]; echo $?)" \
    "a replace the pack allows (a path relative to the workspace) is answered {}" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
echo 'new text' >"$ws/edit.txt"       # the replace tool writes
hook AfterAgent ',"prompt":"p","prompt_response":"r","stop_hook_active":false'
st=$?
ok "$([ $st -eq 0 ] && [ "$(jq -c . "$tmp/answer")" = '{}' ] && [ "$(bk list --json | jq length)" = 1 ]; echo $?)" \
    "AfterAgent answers {} and seals one cycle" "status $st: $(cat "$tmp/answer" "$tmp/hook-err"; bk list 2>&1)"
bk restore 1 "$ws/edit.txt" >"$tmp/out" 2>&1
ok "$([ "$(cat "$ws/edit.txt")" = 'old text' ]; echo $?)" \
    "backup restore puts the replaced file back" "$(cat "$tmp/out")"
hook AfterAgent ',"prompt":"p","prompt_response":"r","stop_hook_active":false'
ok "$([ "$(bk list --json | jq length)" = 1 ]; echo $?)" "a turn that changed nothing seals no cycle" "$(bk list 2>&1)"

# ---- run_shell_command ------------------------------------------------------
hook BeforeTool ',"tool_name":"run_shell_command","tool_input":{"command":"echo made >\"it'"'"'s.txt\"; cat ../.env","description":"make a file","dir_path":"sub"}'
st=$?
cmd=$(jq -r .hookSpecificOutput.tool_input.command "$tmp/answer" 2>/dev/null)
ok "$([ $st -eq 0 ] && [ "$(jq -r '.hookSpecificOutput.tool_input | keys | join(",")' "$tmp/answer")" = command ] &&
      case $cmd in *" run --core '$state' --tool-call 'gm-"*"' -- /bin/bash -c "*) true ;; *) false ;; esac; echo $?)" \
    "run_shell_command is rewritten to run --core with a tool call id of its own, only command overridden (dir_path kept)" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
hook BeforeTool ',"tool_name":"run_shell_command","tool_input":{"command":"true"}'
cmd2=$(jq -r .hookSpecificOutput.tool_input.command "$tmp/answer" 2>/dev/null)
ok "$([ "${cmd2#*--tool-call }" != "${cmd#*--tool-call }" ] &&
      [ "$(echo "$cmd2" | sed "s/.*--tool-call '\([^']*\)'.*/\1/")" != "$(echo "$cmd" | sed "s/.*--tool-call '\([^']*\)'.*/\1/")" ]; echo $?)" \
    "each shell call gets its own tool call id" "$cmd / $cmd2"
if ! (cd "$ws" && "$fsb" run --state-dir "$tmp/probe" -- true) >/dev/null 2>"$tmp/err"; then
    why="fsbroker run cannot sandbox here: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
    skip "the rewritten command runs sandboxed where dir_path says" "$why"
    skip "its change lands in the turn's cycle and restores" "$why"
else
    # Gemini runs the command in dir_path under the workspace root.
    (cd "$ws/sub" && bash -c "$cmd") >"$tmp/out" 2>"$tmp/err"
    st=$?
    ok "$([ "$(cat "$ws/sub/it's.txt" 2>/dev/null)" = made ] && grep -q 'Permission denied' "$tmp/err" &&
          ! grep -q SECRET "$tmp/out"; echo $?)" \
        "the rewritten command runs sandboxed where dir_path says: its file made in sub/, .env unreadable" \
        "status $st: $(head -5 "$tmp/err")"
    hook AfterAgent ',"prompt":"p","prompt_response":"r","stop_hook_active":false'
    ok "$([ "$(bk list --json | jq length)" = 2 ] &&
          bk show --last --json | jq -e '.paths[] | select((.toolCallId | startswith("gm-")) and .op == "create" and (.path | endswith("/sub/it'"'"'s.txt")))' >/dev/null &&
          bk restore 2 >/dev/null 2>&1 && [ ! -e "$ws/sub/it's.txt" ]; echo $?)" \
        "its change lands in the turn's cycle, sealed by AfterAgent, and restoring the cycle removes it" \
        "$(bk show --last 2>&1 | tail -4)"
fi

# ---- failures block ---------------------------------------------------------
ev BeforeTool ',"tool_name":"run_shell_command","tool_input":{"command":"true"}' |
    XDG_STATE_HOME=/dev/null/state "$fsb" hooks run gemini-cli >"$tmp/answer" 2>"$tmp/hook-err"
st=$?
ok "$([ $st -eq 2 ] && [ ! -s "$tmp/answer" ] && grep -q 'cannot start or reach' "$tmp/hook-err"; echo $?)" \
    "a shell hook that cannot start its core blocks the tool (exit 2), no command to run unbrokered" \
    "status $st: $(cat "$tmp/answer" "$tmp/hook-err")"
echo '{"hook_event_name":"BeforeTool"}' | "$fsb" hooks run gemini-cli >/dev/null 2>&1
ok "$([ $? -eq 2 ]; echo $?)" "input that is not a Gemini CLI hook event blocks (exit 2)"

# ---- the end ----------------------------------------------------------------
hook SessionEnd ',"reason":"exit"'
gone=1
for _ in $(seq 100); do
    [ -S "$state/admin.sock" ] || { gone=0; break; }
    sleep 0.1
done
ok $gone "SessionEnd stops the session's core" "$(tail -3 "$state/core.log")"

"$fsb" hooks uninstall gemini-cli --project "$proj" >/dev/null
ok "$(cmp -s "$tmp/orig.json" "$s"; echo $?)" "uninstall puts .gemini/settings.json back byte for byte" \
    "$(diff "$tmp/orig.json" "$s" | head -5)"
"$fsb" hooks install gemini-cli --user >/dev/null && [ -f "$HOME/.gemini/settings.json" ] &&
    "$fsb" hooks uninstall gemini-cli --user >/dev/null
ok "$([ ! -e "$HOME/.gemini/settings.json" ]; echo $?)" "--user installs into ~/.gemini/settings.json, uninstall removes what it created"

echo "1..$n"
exit $failed
