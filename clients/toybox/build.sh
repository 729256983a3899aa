#!/bin/sh
# build.sh — build the brokered toybox from Debian's toybox source.
#
#   clients/toybox/build.sh SRCDIR WORKDIR CLIENTLIB OUT
#
# SRCDIR     the unpacked upstream source (tools/fetch-source.sh toybox ...),
#            never changed: the patch is applied to a fresh copy
# WORKDIR    where that copy is made and built (removed first)
# CLIENTLIB  build/clients/libfsbclient.a, linked into toybox
# OUT        the binary to write (build/clients/toybox)
#
# Steps: copy SRCDIR, apply toybox-fsbroker.patch, add lib/fsbroker.[ch]
# (clients/toybox/lib), configure the applets of toybox.miniconfig, run
# toybox's own make. CC, CFLAGS (added to toybox's) and V=1 are honoured.
set -eu
[ $# -eq 4 ] || { echo "usage: $0 SRCDIR WORKDIR CLIENTLIB OUT" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
src=$1
work=$2
lib=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
out=$4
libdir=$(cd "$here/../lib" && pwd)

[ -f "$src/toys.h" ] || { echo "$0: $src is not a toybox source tree" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$(dirname "$work")"
cp -a "$src" "$work"
(cd "$work" && patch -p1 --quiet --no-backup-if-mismatch) <"$here/toybox-fsbroker.patch"
cp "$here/lib/fsbroker.h" "$here/lib/fsbroker.c" "$work/lib/"
cp "$here/toybox.miniconfig" "$work/fsbroker.miniconfig"

# toybox's output (and the warnings of its own code) go to build.log,
# shown when the build fails or with V=1.
log="$work/build.log"
if ! (cd "$work" &&
    make allnoconfig KCONFIG_ALLCONFIG=fsbroker.miniconfig &&
    # The client library's header; its archive goes after toybox's objects.
    make toybox CPUS="${CPUS:-2}" NOSTRIP=1 CFLAGS="${CFLAGS:-} -I$libdir" LDFLAGS="$lib"
    ) >"$log" 2>&1; then
    cat "$log" >&2
    echo "$0: the toybox build failed (log: $log)" >&2
    exit 1
fi
[ "${V:-}" = 1 ] && cat "$log"
cp "$work/toybox" "$out.tmp"
mv "$out.tmp" "$out"
