#!/bin/sh
# Install the Debian packages fsbroker needs to build and test, or name them.
# Does nothing when every package is present.
set -eu
pkgs="build-essential pkg-config lua5.4 liblua5.4-dev lua-lpeg libuv1-dev \
libcjson-dev libssl-dev lua-busted libcmocka-dev luarocks trash-cli \
libseccomp-dev bubblewrap python3 git zsh busybox-static clang libclang-rt-14-dev valgrind \
patch xz-utils bash libncurses-dev rsync python3-venv golang-go scdoc groff-base \
man-db bash-completion jq dpkg-dev debhelper libmicrohttpd-dev libzstd-dev curl \
python3-jsonschema cppcheck lintian socat ripgrep"
# lintian checks the package make deb builds (tests/cli/deb.sh); socat and
# ripgrep are what srt needs in make bench-peers.
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
        missing="$missing $p"
done
# The npm package's suite (clients/node) needs node and npm. A node already on
# PATH (not necessarily Debian's) is kept: Debian's must not shadow it.
command -v node >/dev/null 2>&1 || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "fsbroker: missing Debian packages:$missing" >&2
    echo "fsbroker: run as root: apt-get install$missing" >&2
    exit 1
fi
echo "  DEPS   $missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
