#!/bin/sh
# install.sh install|uninstall — make install and make uninstall.
#
# Environment (the Makefile passes each): DESTDIR, PREFIX, BUILD (the build
# dir of fsbroker and fsbroker-init), CLIENTS (build/clients: the patched
# zsh and toybox, installed when they were built), MANDIR_BUILD (build/man).
#
# install copies every file a user runs or reads into DESTDIR/PREFIX:
#   bin/fsbroker
#   libexec/fsbroker/fsbroker-init             (fsbroker looks there, beside bin/)
#   libexec/fsbroker/clients/zsh, toybox, bin/ (the dispatcher and its shims)
#   share/fsbroker/lua/policy, rules           (fsbroker looks there, beside bin/)
#   share/man/man1/fsbroker.1, man5/fsbroker-pack.5
#   share/bash-completion/completions/fsbroker
#   share/zsh/vendor-completions/_fsbroker
#   share/doc/fsbroker/README.md, CHANGELOG.md, LICENSE, docs/
# and writes share/fsbroker/install-manifest: one line per file it put there
# ("f PATH") and per directory it made ("d PATH"), PATH without DESTDIR.
# uninstall removes the files the manifest names, the manifest, then the
# directories it names, deepest first, each only when it is empty: what was
# there before install, or was put there since, stays.
set -eu
mode=$1
: "${PREFIX:?}" "${BUILD:?}" "${CLIENTS:?}" "${MANDIR_BUILD:?}"
DESTDIR=${DESTDIR:-}
case $PREFIX in
    /*) ;;
    *) echo "install.sh: PREFIX must be an absolute path, not '$PREFIX'" >&2; exit 2 ;;
esac
root=$DESTDIR$PREFIX
manifest_rel=share/fsbroker/install-manifest
manifest=$root/$manifest_rel

if [ "$mode" = uninstall ]; then
    if [ ! -f "$manifest" ]; then
        echo "install.sh: no $manifest: nothing installed there by make install" >&2
        exit 1
    fi
    # Files first, then the manifest, then the directories deepest first.
    sed -n 's/^f //p' "$manifest" | while IFS= read -r p; do
        rm -f "$DESTDIR$p"
    done
    dirs=$(sed -n 's/^d //p' "$manifest" | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-)
    rm -f "$manifest"
    echo "$dirs" | while IFS= read -r d; do
        [ -n "$d" ] && rmdir "$DESTDIR$d" 2>/dev/null || true
    done
    echo "  UNINSTALL $root"
    exit 0
fi

[ "$mode" = install ] || { echo "usage: install.sh install|uninstall" >&2; exit 2; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT

# mkdirs DIR: make DIR and its missing parents, noting each one made.
mkdirs() {
    case $1 in "$root" | "$root"/*) ;; *) return 0 ;; esac
    [ -d "$1" ] && return 0
    mkdirs "$(dirname "$1")"
    mkdir -m 0755 "$1"
    echo "d ${1#"$DESTDIR"}" >>"$list"
}

# put SRC DEST MODE: one file (a symlink stays a symlink).
put() {
    mkdirs "$(dirname "$root/$2")"
    if [ -L "$1" ]; then
        ln -sfn "$(readlink "$1")" "$root/$2"
    else
        install -m "$3" "$1" "$root/$2"
    fi
    echo "f $PREFIX/$2" >>"$list"
}

# The root itself may be new (a DESTDIR install): its parents are noted too.
mkdirs_root() {
    d=$root
    missing=""
    while [ ! -d "$d" ]; do
        missing="$d $missing"
        d=$(dirname "$d")
    done
    for d in $missing; do
        mkdir -m 0755 "$d"
        case $d in "$DESTDIR"?*) echo "d ${d#"$DESTDIR"}" >>"$list" ;; esac
    done
}
mkdirs_root

put "$BUILD/fsbroker" bin/fsbroker 0755
put "$BUILD/fsbroker-init" libexec/fsbroker/fsbroker-init 0755
for f in lua/policy/*.lua; do put "$f" "share/fsbroker/$f" 0644; done
for f in lua/rules/*.lua; do put "$f" "share/fsbroker/$f" 0644; done
put "$MANDIR_BUILD/fsbroker.1" share/man/man1/fsbroker.1 0644
put "$MANDIR_BUILD/fsbroker-pack.5" share/man/man5/fsbroker-pack.5 0644
put completions/fsbroker.bash share/bash-completion/completions/fsbroker 0644
put completions/_fsbroker share/zsh/vendor-completions/_fsbroker 0644
for f in README.md CHANGELOG.md LICENSE; do put "$f" "share/doc/fsbroker/$f" 0644; done
for f in docs/*.md; do put "$f" "share/doc/fsbroker/$f" 0644; done
# The patched clients, when make zsh and make toybox built them: the same
# layout as build/clients, which fsbroker and the dispatcher find their way
# in (clients/zsh; clients/bin/* beside clients/toybox).
if [ -x "$CLIENTS/zsh" ]; then
    put "$CLIENTS/zsh" libexec/fsbroker/clients/zsh 0755
fi
if [ -x "$CLIENTS/toybox" ] && [ -x "$CLIENTS/bin/fsbroker-toybox-dispatch" ]; then
    put "$CLIENTS/toybox" libexec/fsbroker/clients/toybox 0755
    for f in "$CLIENTS"/bin/*; do
        put "$f" "libexec/fsbroker/clients/bin/${f##*/}" 0755
    done
fi

# An earlier install's manifest is kept in: uninstall must still remove
# what that one put there and this one did not.
mkdirs "$(dirname "$manifest")"
if [ -f "$manifest" ]; then
    cat "$manifest" >>"$list"
fi
sort -u "$list" | grep -vxF "f $PREFIX/$manifest_rel" >"$manifest.tmp"
mv "$manifest.tmp" "$manifest"
chmod 0644 "$manifest"
echo "  INSTALL $root ($(grep -c '^f ' "$manifest") files)"
