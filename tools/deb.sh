#!/bin/bash
# deb.sh VERSION — make deb: build/fsbroker_VERSION_ARCH.deb, built by
# dpkg-buildpackage (debhelper) from debian/, in a copy of the source tree
# (build/deb/fsbroker-VERSION: the files git tracks, and those it would
# track, as they are in the work tree) so that the package's clean and build
# never touch this tree's build/. The unpacked zsh and toybox sources
# (build/src, from make zsh toybox) go into the copy too when they are here:
# debian/rules then builds the patched clients into the package.
#
# DEB_MAINTAINER ("Name <address>") names the maintainer in the copy's
# debian/control and debian/changelog; the default's address is no real one,
# which lintian reports (bogus-mail-host, bogus-mail-host-in-debian-changelog).
set -euo pipefail
version=$1
work=build/deb
src=$work/fsbroker-$version
arch=$(dpkg --print-architecture)
out=build/fsbroker_${version}_$arch.deb

[ "$(dpkg-parsechangelog -S Version)" = "$version" ] || {
    echo "deb.sh: debian/changelog says $(dpkg-parsechangelog -S Version), VERSION $version" >&2
    exit 1
}
rm -rf "$work"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$src"
for c in zsh toybox; do
    if [ -f "build/src/$c/.fetched" ]; then
        mkdir -p "$src/build/src"
        cp -a "build/src/$c" "$src/build/src/"
        [ -d build/src/dl ] && [ ! -d "$src/build/src/dl" ] && cp -a build/src/dl "$src/build/src/"
    fi
done
if [ -n "${DEB_MAINTAINER:-}" ]; then
    sed -i "s|^Maintainer: .*|Maintainer: $DEB_MAINTAINER|" "$src/debian/control"
    sed -i "s|^ -- [^>]*>| -- $DEB_MAINTAINER|" "$src/debian/changelog"
fi
# The package builds with its own flags (debian/rules), not those of the
# make that called this one: a WERROR=1 given to it would turn the
# hardening flags' warnings into a failed package.
(cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u WERROR -u SANITIZE dpkg-buildpackage -us -uc -b) \
    >"$work/build.log" 2>&1 || {
    tail -20 "$work/build.log" >&2
    echo "deb.sh: dpkg-buildpackage failed; the whole log is $work/build.log" >&2
    exit 1
}
cp "$work/fsbroker_${version}_$arch.deb" "$out"
echo "  DEB     $out"
