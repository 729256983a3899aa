#!/bin/bash
# install.sh FSBROKER — make install and make uninstall (TAP).
#
# `make install DESTDIR=T PREFIX=/usr` puts every file a user runs or reads
# in its place, and the installed fsbroker, run from / with no
# FSBROKER_LUA_DIR (the Makefile exports one for the build tree), prints its
# version, finds the default pack (`check`) and its manual page (`man`).
# DESTDIR installs are not meant to run where they lie, so the run test uses
# `make install PREFIX=T/prefix`: `fsbroker run` finds fsbroker-init under
# libexec/, a restore undoes what it changed, and `fsbroker shell` finds the
# patched zsh when make zsh built it (skipped otherwise, and skipped when
# the build tree's own fsbroker cannot sandbox on this machine). Then `make
# uninstall` with the same variables leaves no file of its own, keeps a file
# it did not put there, and removes only directories it made.
set -u
fsb=$(readlink -f "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(dirname "$fsb")
n=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(cat "$src/VERSION")

. "$(dirname "$0")/tap.sh"

# make in the source tree, quietly; BUILD as the binary under test has it.
mk() {
    local sanitize=""
    case $build in
        */san-*) sanitize=$(basename "$build" | sed 's/^san-//; s/-/,/g') ;;
    esac
    make -C "$src" --no-print-directory SANITIZE="$sanitize" "$@" >"$tmp/make.log" 2>&1
}

# The installed binary, from /, as a user runs it.
installed() { # ROOT ARGS...
    local root=$1
    shift
    (cd / && env -u FSBROKER_LUA_DIR -u FSBROKER_ZSH -u FSBROKER_CLIENTS_BIN \
        "$root/bin/fsbroker" "$@")
}

dest=$tmp/dest
mkdir "$dest"
mk install DESTDIR="$dest" PREFIX=/usr
ok $? "make install DESTDIR=T PREFIX=/usr" "$(tail -5 "$tmp/make.log")"
u=$dest/usr
missing=""
for f in bin/fsbroker libexec/fsbroker/fsbroker-init share/fsbroker/lua/policy/init.lua \
    share/fsbroker/lua/rules/default.lua share/fsbroker/lua/rules/credentials.lua \
    share/man/man1/fsbroker.1 share/man/man5/fsbroker-pack.5 \
    share/bash-completion/completions/fsbroker share/zsh/vendor-completions/_fsbroker \
    share/doc/fsbroker/README.md share/doc/fsbroker/LICENSE share/doc/fsbroker/CHANGELOG.md \
    share/doc/fsbroker/docs/rule-packs.md share/fsbroker/install-manifest; do
    [ -f "$u/$f" ] || missing="$missing $f"
done
ok "$([ -z "$missing" ]; echo $?)" "every file a user runs or reads is installed" "missing:$missing"
ok "$([ ! -e "$u/bin/fsbroker-init" ]; echo $?)" "fsbroker-init is not in bin/"
if [ -x "$src/build/clients/zsh" ]; then
    ok "$([ -x "$u/libexec/fsbroker/clients/zsh" ]; echo $?)" \
        "the patched zsh is installed under libexec/fsbroker/clients"
else
    skip "the patched zsh is installed under libexec/fsbroker/clients" "make zsh has not run"
fi
if [ -x "$src/build/clients/toybox" ]; then
    ok "$([ -x "$u/libexec/fsbroker/clients/toybox" ] &&
          [ -L "$u/libexec/fsbroker/clients/bin/cat" ] &&
          [ -x "$u/libexec/fsbroker/clients/bin/fsbroker-toybox-dispatch" ]; echo $?)" \
        "the brokered toybox, its dispatcher and shims are installed"
else
    skip "the brokered toybox, its dispatcher and shims are installed" "make toybox has not run"
fi
r=$(installed "$u" --version 2>&1)
ok "$([ "$r" = "fsbroker $version" ]; echo $?)" "the installed fsbroker --version, from /" "$r"
mkdir "$tmp/ws"
r=$(installed "$u" check --workspace "$tmp/ws" --op write "$tmp/ws/a.c" 2>&1)
st=$?
ok "$([ "$st" -eq 0 ] && echo "$r" | grep -q allow; echo $?)" \
    "the installed fsbroker check finds the default pack under share/fsbroker/lua" \
    "status $st: $(echo "$r" | head -3)"
r=$(installed "$u" check --rules credentials --op read "$HOME/.ssh/id_rsa" 2>&1)
ok "$([ $? -eq 1 ]; echo $?)" "the installed fsbroker check --rules credentials denies ~/.ssh" \
    "$(echo "$r" | head -3)"
r=$(MANPATH=$u/share/man man -w fsbroker fsbroker-pack 2>&1)
ok "$([ "$(echo "$r" | grep -c "^$u/share/man/")" -eq 2 ]; echo $?)" \
    "man finds fsbroker(1) and fsbroker-pack(5) installed" "$r"
MANPATH=$u/share/man MANWIDTH=80 man --warnings fsbroker 2>"$tmp/err" >"$tmp/out"
ok "$([ $? -eq 0 ] && [ ! -s "$tmp/err" ] && grep -q 'FSBROKER RUN' "$tmp/out"; echo $?)" \
    "man fsbroker renders without warnings" "$(head -3 "$tmp/err")"

# A file of someone else's beside ours survives, and so does its directory.
echo other >"$u/share/doc/other-package"
mk uninstall DESTDIR="$dest" PREFIX=/usr
ok $? "make uninstall DESTDIR=T PREFIX=/usr" "$(tail -5 "$tmp/make.log")"
left=$(cd "$dest" && find . ! -type d | sort)
ok "$([ "$left" = "./usr/share/doc/other-package" ]; echo $?)" \
    "make uninstall removes every file it installed and no other" "left: $left"
dirs=$(cd "$dest" && find . -mindepth 1 -type d | sort | tr '\n' ' ')
ok "$([ "$dirs" = "./usr ./usr/share ./usr/share/doc " ]; echo $?)" \
    "make uninstall removes the directories it made once empty, no others" "left: $dirs"

# A prefix of its own, to run from.
p=$tmp/prefix
mk install PREFIX="$p"
ok $? "make install PREFIX=T/prefix" "$(tail -5 "$tmp/make.log")"
ws=$tmp/ws
echo before >"$ws/kept.txt"
if ! (cd "$ws" && "$fsb" run --state-dir "$tmp/probe-state" -- true) >/dev/null 2>"$tmp/err"; then
    why="fsbroker run cannot sandbox here: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
    skip "the installed fsbroker run, from /, finds fsbroker-init and backs up" "$why"
    skip "the installed fsbroker backup restore puts the workspace back" "$why"
    skip "the installed fsbroker shell finds the patched zsh" "$why"
else
    installed "$p" run --workspace "$ws" --state-dir "$tmp/state" \
        -- sh -c 'echo after >kept.txt; echo new >made.txt' >"$tmp/out" 2>"$tmp/err"
    st=$?
    ok "$([ "$st" -eq 0 ] && [ "$(cat "$ws/kept.txt")" = after ] &&
          grep -q 'cycle 1 sealed' "$tmp/err"; echo $?)" \
        "the installed fsbroker run, from /, finds fsbroker-init and backs up" \
        "status $st: $(grep -v 'warning: pack file' "$tmp/err" | head -3)"
    installed "$p" backup restore --last --state-dir "$tmp/state" --workspace "$ws" \
        >"$tmp/out" 2>"$tmp/err"
    st=$?
    ok "$([ "$st" -eq 0 ] && [ "$(cat "$ws/kept.txt")" = before ] && [ ! -e "$ws/made.txt" ]
          echo $?)" "the installed fsbroker backup restore puts the workspace back" \
        "status $st: $(head -3 "$tmp/err")"
    if [ -x "$p/libexec/fsbroker/clients/zsh" ]; then
        installed "$p" shell --workspace "$ws" --state-dir "$tmp/state" \
            -- -c 'echo zsh >"$1"' zsh "$ws/shell.txt" >"$tmp/out" 2>"$tmp/err"
        st=$?
        ok "$([ "$st" -eq 0 ] && [ "$(cat "$ws/shell.txt" 2>/dev/null)" = zsh ]; echo $?)" \
            "the installed fsbroker shell finds the patched zsh" \
            "status $st: $(grep -v 'warning: pack file' "$tmp/err" | head -3)"
    else
        skip "the installed fsbroker shell finds the patched zsh" "make zsh has not run"
    fi
fi
mk uninstall PREFIX="$p"
ok $? "make uninstall PREFIX=T/prefix" "$(tail -5 "$tmp/make.log")"
ok "$([ ! -e "$p" ]; echo $?)" "make uninstall removes the prefix it made" \
    "left: $(find "$p" 2>/dev/null | head -5 | tr '\n' ' ')"
echo "1..$n"
exit $failed
