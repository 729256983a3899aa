#!/bin/sh
# deb.sh BUILD VERSION — make deb: build/fsbroker_VERSION_ARCH.deb with
# dpkg-deb from what make install puts under DESTDIR=build/deb/... PREFIX=/usr
# (tools/install.sh, so the package holds what make install installs, the
# patched zsh and toybox included when they were built).
#
# Depends: what dpkg-shlibdeps finds the package's binaries link (libuv1,
# libcjson1, liblua5.4-0, lua-lpeg, libssl3, libc6, and libtinfo6 with the
# zsh), and what fsbroker runs: bubblewrap (fsbroker run) and diffutils
# (backup diff). The manual pages are gzipped, the copyright is the LICENSE,
# a changelog.gz points to CHANGELOG.md, md5sums are listed and the binaries
# stripped, as Debian's policy asks; make uninstall's manifest is left out
# (dpkg keeps its own list). DEB_MAINTAINER ("Name <address>") names the
# maintainer; the default's address is no real one, which lintian reports
# (bogus-mail-host, bogus-mail-host-in-debian-changelog).
set -eu
build=$1
version=$2
work=build/deb
root=$work/debian/fsbroker
arch=$(dpkg --print-architecture)
out=build/fsbroker_${version}_$arch.deb

rm -rf "$work"
mkdir -p "$work/debian"
DESTDIR=$root PREFIX=/usr BUILD=$build CLIENTS=build/clients MANDIR_BUILD=build/man \
    sh tools/install.sh install >/dev/null
rm -f "$root/usr/share/fsbroker/install-manifest"
gzip -9n "$root/usr/share/man/man1/fsbroker.1" "$root/usr/share/man/man5/fsbroker-pack.5"
{
    echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    echo "Upstream-Name: fsbroker"
    echo
    echo "Files: *"
    echo "Copyright: 2026 the fsbroker authors"
    echo "License: MIT"
    sed 's/^$/./; s/^/ /' LICENSE
} >"$root/usr/share/doc/fsbroker/copyright"
rm -f "$root/usr/share/doc/fsbroker/LICENSE"
# A native package's changelog.gz is in Debian's format; it points to
# CHANGELOG.md, which stays the one record of the changes.
maintainer=${DEB_MAINTAINER:-the fsbroker authors <fsbroker@localhost>}
when=$(git log -1 --format=%ct 2>/dev/null || date +%s)
{
    echo "fsbroker ($version) unstable; urgency=medium"
    echo
    echo "  * Release $version: see /usr/share/doc/fsbroker/CHANGELOG.md."
    echo
    echo " -- $maintainer  $(LC_ALL=C date -R -u -d "@$when")"
} | gzip -9n >"$root/usr/share/doc/fsbroker/changelog.gz"
find "$root" -type d -exec chmod 0755 {} +

# dpkg-shlibdeps reads debian/control for the package's name.
printf 'Source: fsbroker\n\nPackage: fsbroker\nArchitecture: any\n' >"$work/debian/control"
bins=$(cd "$work" && find debian/fsbroker -type f -perm -0100 -exec sh -c \
    'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
# shellcheck disable=SC2086
shlibs=$(cd "$work" && dpkg-shlibdeps -O $bins 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "deb.sh: dpkg-shlibdeps found no libraries" >&2; exit 1; }
# Debian ships binaries stripped (the symbols would go to a -dbgsym
# package, which this is not).
# shellcheck disable=SC2086
(cd "$work" && strip --strip-unneeded --remove-section=.comment --remove-section=.note $bins)

mkdir "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: fsbroker
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $shlibs, bubblewrap, diffutils
Section: admin
Priority: optional
Description: file-access broker for the commands a coding agent runs
 fsbroker runs a command in a sandbox (bubblewrap, Landlock, a seccomp
 supervisor) where every file change is judged by a Lua rule pack, backed
 up first and audited; one command restores what the command changed.
 fsbroker serve is the same core for an agent host.
EOF
(cd "$root" && find usr -type f -exec md5sum {} + | sort -k2 >DEBIAN/md5sums)
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "  DEB     $out"
