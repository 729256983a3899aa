#!/bin/sh
# build.sh — build the brokered zsh from Debian's zsh source.
#
#   clients/zsh/build.sh SRCDIR WORKDIR WRAPPERS CLIENTLIB OUT
#
# SRCDIR     the unpacked upstream source (tools/fetch-source.sh zsh ...),
#            never changed: the patch is applied to a fresh copy
# WORKDIR    where that copy is made, configured and built
# WRAPPERS   the compiled clients/zsh/fsbroker_zsh.c (fsbroker's Makefile
#            builds it with the project's warnings)
# CLIENTLIB  build/clients/libfsbclient.a
# OUT        the binary to write (build/clients/zsh)
#
# Steps: copy SRCDIR, apply zsh-fsbroker.patch, add Src/fsbroker_zsh.h,
# run zsh's configure (static modules, no optional libraries), keep only the
# modules an interactive shell needs (zsh/main, zsh/zle with zsh/compctl and
# zsh/complete, which zle loads, zsh/zutil, zsh/parameter, zsh/rlimits),
# run zsh's own make. The wrappers and the client library are linked through
# LIBS. A second run with the same patch, header and this script only runs
# make again (a changed WRAPPERS or CLIENTLIB relinks); anything else starts
# afresh. zsh's output goes to WORKDIR/build.log, shown when the build fails
# or with V=1.
set -eu
[ $# -eq 5 ] || { echo "usage: $0 SRCDIR WORKDIR WRAPPERS CLIENTLIB OUT" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
abspath() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
src=$1
work=$2
wrappers=$(abspath "$3")
lib=$(abspath "$4")
out=$5

[ -f "$src/Src/zsh.mdd" ] || { echo "$0: $src is not a zsh source tree" >&2; exit 1; }
# What the configured tree depends on: a change to any of them starts afresh.
stamp=$(cat "$0" "$here/zsh-fsbroker.patch" "$here/fsbroker_zsh.h" "$src/.fetched" \
        2>/dev/null | cksum | cut -d' ' -f1)-$wrappers-$lib
log="$work/build.log"

if [ "$(cat "$work/.fsbroker-stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$work"
    mkdir -p "$(dirname "$work")"
    cp -a "$src" "$work"
    (cd "$work" && patch -p1 --quiet --no-backup-if-mismatch) <"$here/zsh-fsbroker.patch"
    cp "$here/fsbroker_zsh.h" "$work/Src/"
    # Debian's paths for the global startup files (/etc/zsh/zshenv, ...);
    # tcsetpgrp is asserted, not probed (the probe needs a terminal).
    if ! (cd "$work" &&
        LIBS="$wrappers $lib" ./configure --disable-dynamic --enable-etcdir=/etc/zsh \
            --disable-gdbm --disable-pcre --disable-cap --with-tcsetpgrp &&
        # Only the modules a shell needs, linked in (zle loads compctl, which
        # needs complete; zutil has zstyle; no zsh/files: its rm and mv
        # builtins would bypass the shims).
        sed -i -e '/^name=zsh\/\(main\|zle\|compctl\|complete\|zutil\|parameter\|rlimits\) /!s/link=static/link=no/' \
            config.modules
        ) >"$log" 2>&1; then
        cat "$log" >&2
        echo "$0: configuring zsh failed (log: $log)" >&2
        exit 1
    fi
    echo "$stamp" >"$work/.fsbroker-stamp"
fi

# The wrappers and the library are not zsh's sources: relink every time.
rm -f "$work/Src/zsh"
if ! (cd "$work" && make -j"${CPUS:-2}") >>"$log" 2>&1; then
    cat "$log" >&2
    echo "$0: the zsh build failed (log: $log)" >&2
    exit 1
fi
[ "${V:-}" = 1 ] && cat "$log"
cp "$work/Src/zsh" "$out.tmp"
mv "$out.tmp" "$out"
