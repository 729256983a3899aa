#!/bin/sh
# fetch-source.sh — unpack the source of a Debian source package, for the
# clients fsbroker patches (toybox, zsh).
#
#   tools/fetch-source.sh PACKAGE DESTDIR
#
# The upstream tarball comes from Debian's archive through apt, with an apt
# configuration of its own: a private sources.list holding one deb-src line,
# a private list directory and a private cache, so the machine's own apt
# lists and caches are never read or changed. apt checks the tarball against
# the Sources index, which the archive's signed InRelease vouches for.
#
# Only the upstream tarball is fetched (`--tar-only`), not Debian's packaging:
# we build with toybox's and zsh's own build systems and patches of our own.
#
# DESTDIR receives the unpacked tree (the tarball's top directory stripped).
# The downloaded tarball is kept in DESTDIR/../dl/, so a second build, or a
# new DESTDIR after `rm -rf DESTDIR`, does not download again. An existing
# DESTDIR holding .fetched is left as it is.
#
# Environment:
#   FSBROKER_SRC_SUITE   the Debian suite (default: bookworm)
#   FSBROKER_SRC_MIRROR  the archive URL (default: the first Debian archive
#                        named in /etc/apt/sources.list{,.d}, else
#                        http://deb.debian.org/debian)
#
# Exit 0 when DESTDIR holds the source; 1 with a message naming what failed.
set -eu

usage() {
    echo "usage: $0 PACKAGE DESTDIR" >&2
    exit 1
}
[ $# -eq 2 ] || usage
pkg=$1
dest=$2
suite=${FSBROKER_SRC_SUITE:-bookworm}
me="fetch-source"

if [ -f "$dest/.fetched" ]; then
    exit 0
fi

# The archive this machine really uses: a URI of a deb or deb-src entry
# whose path ends in /debian (not debian-security, not a third party),
# in either the one-line or the deb822 format.
find_mirror() {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
             /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        sed -n -e 's/#.*//' \
               -e 's/^[[:space:]]*deb\(-src\)\{0,1\}[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\).*/\3/p' \
               -e 's/^[[:space:]]*URIs:[[:space:]]*//p' "$f" |
            tr ' ' '\n' | grep -E '^https?://[^ ]*/debian/?$' | head -n 1
    done | head -n 1 | sed 's,/$,,'
}

mirror=${FSBROKER_SRC_MIRROR:-$(find_mirror || true)}
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

command -v apt-get >/dev/null 2>&1 || {
    echo "$me: apt-get not found: the source of $pkg comes from Debian's archive" >&2
    exit 1
}

parent=$(dirname "$dest")
mkdir -p "$parent"
parent=$(cd "$parent" && pwd)
dl="$parent/dl/$pkg"
mkdir -p "$dl"

tarball() {
    ls "$dl"/"${pkg}"_*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -n 1
}

if [ -z "$(tarball)" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/fsb-fetch.XXXXXX")
    trap 'rm -rf "$work"' EXIT INT TERM
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    signed=""
    [ -r "$keyring" ] && signed="[signed-by=$keyring] "
    echo "deb-src ${signed}$mirror $suite main" >"$work/sources.list"
    # As root apt downloads as the _apt user, which cannot write a private
    # directory under build/: the download is checked against the signed
    # index either way.
    set -- -o Dir::Etc::SourceList="$work/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$work/lists" \
        -o Dir::Cache="$work/cache" \
        -o APT::Sandbox::User="$(id -un)" \
        -o Acquire::Retries=2 -q
    echo "  FETCH   $pkg from $mirror $suite (private apt lists in $work)"
    if ! apt-get "$@" update >"$work/update.log" 2>&1 ||
        grep -q '^\(W\|E\): \(Failed to fetch\|Some index files failed\)' "$work/update.log"; then
        echo "$me: cannot read the source index of $mirror $suite:" >&2
        sed 's/^/    /' "$work/update.log" >&2
        echo "$me: is the mirror reachable? (set FSBROKER_SRC_MIRROR to use another)" >&2
        exit 1
    fi
    if ! (cd "$dl" && apt-get "$@" source --download-only --tar-only "$pkg") \
        >"$work/source.log" 2>&1 || [ -z "$(tarball)" ]; then
        echo "$me: cannot download the source of $pkg from $mirror $suite:" >&2
        sed 's/^/    /' "$work/source.log" >&2
        exit 1
    fi
fi

tar=$(tarball)
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
tar -xf "$tar" -C "$dest.tmp" --strip-components=1
echo "$(basename "$tar")" >"$dest.tmp/.fetched"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "  UNPACK  $(basename "$tar") -> $dest"
