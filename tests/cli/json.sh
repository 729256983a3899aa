#!/bin/bash
# json.sh FSBROKER — every --json output against its definition in
# docs/schema/fsbroker.schema.json (TAP), validated by tools/json-check.py
# (python3-jsonschema, from make deps).
#
# A workspace gets three cycles through `fsbroker run` (a write, a create, a
# delete, a rename); then each command a program reads prints its JSON, and
# each must be valid: lists are arrays (an empty one too, with exit 0), and
# every error, with --json, is the one `error` object on stdout with the
# exit status the command gives it without --json.
set -u
fsb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
schema=$src/docs/schema/fsbroker.schema.json
n=0 failed=0
root=$(mktemp -d "$(dirname "$fsb")/json-test.XXXXXX")
trap 'rm -rf "$root"' EXIT
export HOME=$root/home XDG_STATE_HOME=$root/state
unset XDG_DATA_HOME XDG_RUNTIME_DIR
mkdir -p "$HOME" "$root/ws" "$root/empty"

ok() { # CONDITION-STATUS DESCRIPTION [DETAIL FILE]
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        [ -n "${3:-}" ] && sed 's/^/#   /' "$3" | head -20
        failed=1
    fi
}

if ! python3 -c 'import jsonschema' 2>/dev/null; then
    echo "1..1"
    echo "ok 1 # SKIP python3-jsonschema is not installed (make deps installs it)"
    exit 0
fi

# valid DEF EXPECTED-STATUS DESCRIPTION -- CMD...: CMD's stdout is valid
# against DEF and CMD exits EXPECTED-STATUS.
valid() {
    local def=$1 want=$2 what=$3 rc
    shift 4
    (cd "$root/ws" && "$@") >"$root/out" 2>"$root/err"
    rc=$?
    if [ "$rc" != "$want" ]; then
        printf 'exit status %s, not %s\n' "$rc" "$want" >"$root/why"
        cat "$root/err" >>"$root/why"
        ok 1 "$what" "$root/why"
        return
    fi
    python3 "$src/tools/json-check.py" "$schema" "$def" "$root/out" >"$root/why" 2>&1
    ok $? "$what" "$root/why"
}

echo one >"$root/ws/a.txt"
echo two >"$root/ws/b.txt"
"$fsb" run --workspace "$root/ws" -- sh -c 'echo more >>a.txt; echo new >c.txt' 2>/dev/null
"$fsb" run --workspace "$root/ws" -- sh -c 'rm b.txt; mv c.txt d.txt' 2>/dev/null
"$fsb" run --workspace "$root/ws" --summary-fd 3 -- sh -c 'echo x >e.txt; echo s >.env' \
    3>"$root/summary.json" 2>/dev/null

echo "1..24"
valid version 0 "version --json" -- "$fsb" version --json
valid backupList 0 "backup list --json" -- "$fsb" backup list --json
valid backupListAll 0 "backup list --all --json" -- "$fsb" backup list --all --json
valid backupShow 0 "backup show --json" -- "$fsb" backup show 2 --json
valid backupDiff 1 "backup diff --json (differences: exit 1, as without --json)" -- \
    "$fsb" backup diff 1 --json
valid backupDiff 1 "backup diff --stat --json" -- "$fsb" backup diff 1 --stat --json
valid backupLog 0 "backup log --json" -- "$fsb" backup log "$root/ws/a.txt" --json
valid backupRestore 0 "backup restore --dry-run --json" -- "$fsb" backup restore 3 --dry-run --json
valid check 0 "check --json (an allow: exit 0)" -- "$fsb" check --workspace . --json --op write a.txt
valid check 1 "check --json (a deny: exit 1)" -- "$fsb" check --workspace . --json --op write .env
python3 "$src/tools/json-check.py" "$schema" runSummary "$root/summary.json" >"$root/why" 2>&1
ok $? "run --summary-fd" "$root/why"

valid backupDu 0 "backup du --json" -- "$fsb" backup du --json
valid backupPrune 0 "backup prune --dry-run --json" -- "$fsb" backup prune --keep 1 --dry-run --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(0 if o["removed"] == [1, 2] and o["dryRun"] else 1)' \
    "$root/out" 2>"$root/why"
ok $? "… names the cycles it would remove" "$root/out"

# An empty store is an empty list, and no error.
valid backupList 0 "backup list --json of a session with no cycles is []" -- \
    "$fsb" backup list --json --workspace "$root/empty"
grep -qx '\[\]' "$root/out"
ok $? "… and prints exactly []" "$root/out"

# Errors: the one shape on stdout, the status kept.
printf 'return { name = "bad", fsProfile = { modify = { 3 } } }\n' >"$root/bad.lua"
valid error 2 "check --json of a broken pack" -- "$fsb" check --rules "$root/bad.lua" --json a.txt
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; sys.exit(0 if e["code"] == "pack" and e["field"] == "fsProfile.modify[1]" and e["file"].endswith("bad.lua") else 1)' \
    "$root/out" 2>"$root/why"
ok $? "… names its file and field" "$root/out"
valid error 2 "check --json of an unknown op" -- "$fsb" check --json --op frob a.txt
valid error 2 "backup show --json of a cycle that is not there" -- "$fsb" backup show 99 --json
valid error 2 "backup log --json of no path" -- "$fsb" backup log --json
valid error 2 "backup list --json of a session that does not exist" -- \
    "$fsb" backup list --json --session nosuch
valid error 2 "backup restore --json of a tool call the cycle does not have" -- \
    "$fsb" backup restore 1 --tool-call nosuch --dry-run --json
valid error 2 "backup undo --json with no restore to undo" -- "$fsb" backup undo --json
exit $failed
