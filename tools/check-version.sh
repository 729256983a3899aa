#!/bin/sh
# check-version.sh [FSBROKER] — the version lives in VERSION alone; every
# other place that states it must say the same (docs/decisions.md, "One
# version"). TAP: one test point per place; not ok names the file and both
# versions. With FSBROKER, the binary's --version and --version --json too.
cd "$(dirname "$0")/.." || exit 1
want=$(cat VERSION)
n=0 bad=0

check() { # WHAT GOT
    n=$((n + 1))
    if [ "$2" = "$want" ]; then
        echo "ok $n - $1 says $want"
    else
        echo "not ok $n - $1 says '$2', VERSION says '$want'"
        bad=1
    fi
}

if [ -n "$1" ]; then echo "1..8"; else echo "1..6"; fi
case $want in
    [0-9]*.[0-9]*.[0-9]*) check "VERSION (MAJOR.MINOR.PATCH)" "$want" ;;
    *) check "VERSION (MAJOR.MINOR.PATCH)" "not a version: $want" ;;
esac
check clients/node/package.json \
    "$(sed -n 's/^  "version": "\(.*\)",$/\1/p' clients/node/package.json)"
check clients/node/package-lock.json \
    "$(sed -n '/^  "packages"/,$!s/^  "version": "\(.*\)",$/\1/p' clients/node/package-lock.json)"
check clients/node/src/mcp.ts \
    "$(sed -n 's/.*new McpServer({ name: "fsbroker", version: "\([^"]*\)".*/\1/p' clients/node/src/mcp.ts)"
# A rock's version is VERSION-REVISION, and luarocks wants it in the file name.
rocks=$(ls rockspec/*.rockspec)
rv=$(sed -n 's/^version = "\(.*\)-[0-9]*"$/\1/p' $rocks)
[ "$rocks" = "rockspec/fsbroker-policy-$rv-1.rockspec" ] || rv="$rv (file $rocks)"
check "the rockspec" "$rv"
# The newest entry of debian/changelog: the Debian package's version.
check debian/changelog "$(sed -n '1s/^fsbroker (\([^)]*\)).*/\1/p' debian/changelog)"
if [ -n "$1" ]; then
    check "$1 --version" "$("$1" --version | sed -n 's/^fsbroker //p')"
    check "$1 version --json" \
        "$("$1" version --json | sed -n 's/^{"version": "\(.*\)"}$/\1/p')"
fi
exit $bad
