#!/bin/bash
# completion.sh FSBROKER — the bash and zsh completion scripts (TAP).
#
# bash: completions/fsbroker.bash is sourced in a fresh `bash -c`,
# COMP_WORDS and COMP_CWORD are set as bash sets them for a command line,
# _fsbroker is called and COMPREPLY checked: a command, a backup verb, an
# option of run, the choices of --approvals, the shipped packs for --rules,
# backup list's options (not restore's), hooks' verbs and hosts, file names
# for check, and the cycle numbers of a session made here with `fsbroker
# run` (skipped when run cannot sandbox on this machine).
# zsh: completions/_fsbroker parses (zsh -n) and compinit registers it for
# fsbroker; then, with compadd and _describe replaced by functions printing
# what they are given, it offers a command, a backup verb, run's options
# and the hosts of hooks.
# Skipped with a reason when zsh is not installed.
set -u
fsb=$(readlink -f "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
n=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/tap.sh"

# COMPREPLY, one a line, for the command line "$@" (the last word is the one
# being completed), run from directory $dir.
dir=$tmp
bash_complete() {
    (cd "$dir" && bash --norc --noprofile -c '
        f=$1; shift
        source "$f" || exit 1
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _fsbroker
        printf "%s\n" "${COMPREPLY[@]}"' _ "$src/completions/fsbroker.bash" "$@")
}

# has WORD LIST: WORD is a line of LIST.
has() { printf '%s\n' "$2" | grep -qxF -- "$1"; }

r=$(bash_complete "$fsb" ba)
ok "$([ "$r" = backup ]; echo $?)" "bash: fsbroker ba completes to backup" "$r"
r=$(bash_complete "$fsb" '')
ok "$(has run "$r" && has backup "$r" && has help "$r"; echo $?)" \
    "bash: fsbroker offers the commands" "$r"
r=$(bash_complete "$fsb" backup res)
ok "$([ "$r" = restore ]; echo $?)" "bash: fsbroker backup res completes to restore" "$r"
r=$(bash_complete "$fsb" backup red)
ok "$([ "$r" = redo ]; echo $?)" "bash: fsbroker backup red completes to redo" "$r"
r=$(bash_complete "$fsb" run --wo)
ok "$([ "$r" = --workspace ]; echo $?)" "bash: fsbroker run --wo completes to --workspace" "$r"
r=$(bash_complete "$fsb" run --approvals '')
ok "$([ "$(echo $r)" = "deferred inline" ]; echo $?)" \
    "bash: fsbroker run --approvals offers deferred and inline" "$r"
r=$(bash_complete "$fsb" check --rules '')
ok "$(has default "$r" && has credentials "$r"; echo $?)" \
    "bash: fsbroker check --rules offers the shipped packs" "$r"
r=$(bash_complete "$fsb" backup list --)
ok "$(has --all "$r" && has --json "$r" && ! has --force "$r"; echo $?)" \
    "bash: fsbroker backup list -- offers list's options, not restore's" "$r"
r=$(bash_complete "$fsb" help backup '')
ok "$(has prune "$r" && has undo "$r"; echo $?)" "bash: fsbroker help backup offers the verbs" "$r"
r=$(bash_complete "$fsb" hooks '')
ok "$([ "$(echo $r)" = "install uninstall run" ]; echo $?)" "bash: fsbroker hooks offers its verbs" "$r"
r=$(bash_complete "$fsb" hooks install --project /tmp '')
ok "$([ "$(echo $r)" = "claude-code gemini-cli codex" ]; echo $?)" \
    "bash: fsbroker hooks install --project DIR offers the hosts" "$r"
mkdir "$tmp/ws"
touch "$tmp/ws/alpha.c" "$tmp/ws/beta.c"
dir=$tmp/ws
r=$(bash_complete "$fsb" check al)
ok "$([ "$r" = alpha.c ]; echo $?)" "bash: fsbroker check al completes the file name alpha.c" "$r"
touch "$tmp/ws/my file.c"
r=$(bash_complete "$fsb" delete my)
ok "$([ "$r" = "my file.c" ]; echo $?)" \
    "bash: a file name with a space is one completion (fsbroker delete my)" "$r"

# Two cycles in a state dir of our own, then their numbers.
if "$fsb" run --state-dir "$tmp/state" --workspace "$tmp/ws" --session s1 \
        -- sh -c 'echo 1 >alpha.c' >/dev/null 2>"$tmp/err" &&
    "$fsb" run --state-dir "$tmp/state" --workspace "$tmp/ws" --session s1 \
        -- sh -c 'echo 2 >alpha.c' >/dev/null 2>>"$tmp/err"; then
    r=$(bash_complete "$fsb" backup restore --state-dir "$tmp/state" --session s1 '')
    ok "$(has 1 "$r" && has 2 "$r"; echo $?)" \
        "bash: fsbroker backup restore offers the session's cycles" "$r"
else
    skip "bash: fsbroker backup restore offers the session's cycles" \
        "fsbroker run cannot sandbox here: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
fi

if ! command -v zsh >/dev/null 2>&1; then
    skip "zsh: _fsbroker parses and compinit loads it" "zsh is not installed"
else
    zsh -n "$src/completions/_fsbroker" 2>"$tmp/err"
    ok "$([ $? -eq 0 ] && [ ! -s "$tmp/err" ]; echo $?)" "zsh: zsh -n _fsbroker parses" \
        "$(head -3 "$tmp/err")"
    mkdir "$tmp/fpath"
    cp "$src/completions/_fsbroker" "$tmp/fpath/"
    r=$(zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit
        compinit -u -d "$1/.zcompdump" && print -r -- "$_comps[fsbroker]"' _ "$tmp/fpath" 2>&1)
    ok "$([ "$r" = _fsbroker ]; echo $?)" "zsh: compinit loads _fsbroker for fsbroker" "$r"
    # What _fsbroker hands compadd and _describe for the command line "$@".
    zsh_complete() {
        zsh -f -c '
            compadd() {
                while (( $# )); do
                    case $1 in
                        -a) shift; print -l -- ${(P)1} ;;
                        -X|-t) shift ;;
                        -*) ;;
                        *) print -r -- $1 ;;
                    esac
                    shift
                done
            }
            _describe() {
                local -a a
                while [[ $1 == -* ]]; do [[ $1 == -t ]] && shift; shift; done
                a=("${(@P)2}"); print -l -- ${a%%:*}
            }
            f=$1; shift
            words=("$@"); CURRENT=$#; PREFIX=$words[CURRENT]
            source "$f"' _ "$src/completions/_fsbroker" "$@" 2>&1
    }
    r=$(zsh_complete "$fsb" ba)
    ok "$(has backup "$r" && has run "$r"; echo $?)" "zsh: fsbroker offers the commands" "$r"
    r=$(zsh_complete "$fsb" backup re)
    ok "$(has restore "$r" && has prune "$r"; echo $?)" "zsh: fsbroker backup offers the verbs" "$r"
    r=$(zsh_complete "$fsb" run --wo)
    ok "$(has --workspace "$r" && has --approvals "$r"; echo $?)" \
        "zsh: fsbroker run -- offers run's options" "$r"
    r=$(zsh_complete "$fsb" run --approvals '')
    ok "$([ "$(echo $r)" = "deferred inline" ]; echo $?)" \
        "zsh: fsbroker run --approvals offers deferred and inline" "$r"
    r=$(zsh_complete "$fsb" hooks uninstall '')
    ok "$([ "$(echo $r)" = "claude-code gemini-cli codex" ]; echo $?)" \
        "zsh: fsbroker hooks uninstall offers the hosts" "$r"
fi
echo "1..$n"
exit $failed
