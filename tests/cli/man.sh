#!/bin/bash
# man.sh FSBROKER MANDIR — the manual pages against what they are made from
# (TAP).
#
# fsbroker(1) must say what the binary's help says: a section per command of
# `fsbroker --help` and per verb of backup and audit, in which every option
# that command's --help names appears, and an ENVIRONMENT naming every
# variable the source reads (the getenv calls of core/, the client library and
# the toybox dispatcher). fsbroker-pack(5) must hold every section and every
# field of docs/rule-packs.md. Both render with no groff or man warning.
set -u
fsb=$1
mandir=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
n=0 failed=0
txt=$(mktemp) err=$(mktemp) help=$(mktemp)
trap 'rm -f "$txt" "$err" "$help"' EXIT

. "$(dirname "$0")/tap.sh"

# The page as plain text, one paragraph a line as far as 250 columns go,
# and no word hyphenated, so that names are found whole.
render() {
    groff -man -Tutf8 -P-cbou -rHY=0 -rLL=250n "$1" 2>/dev/null
}

# The lines of section TITLE (a line of its own, flush left) up to the next.
section() {
    awk -v t="$1" '$0 == t { on = 1; next } on && /^[^ ]/ { exit } on' "$txt"
}

for page in fsbroker.1 fsbroker-pack.5; do
    f=$mandir/$page
    ok "$([ -s "$f" ]; echo $?)" "$page is built" "$f"
    groff -ww -man -z "$f" >"$err" 2>&1
    ok "$([ $? -eq 0 ] && [ ! -s "$err" ]; echo $?)" "groff -ww -man -z $page warns of nothing" \
        "$(head -3 "$err")"
    MANWIDTH=80 man --warnings -l "$f" >/dev/null 2>"$err"
    ok "$([ $? -eq 0 ] && [ ! -s "$err" ]; echo $?)" "man --warnings -l $page warns of nothing" \
        "$(head -3 "$err")"
done

render "$mandir/fsbroker.1" >"$txt"
commands=$("$fsb" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
ok "$([ "$(echo "$commands" | wc -w)" -ge 10 ]; echo $?)" \
    "fsbroker --help lists the commands" "$commands"
words=""
for c in $commands; do
    words="$words $c"
    case $c in
        backup | audit)
            for v in $("$fsb" help "$c" | sed -n '/^verbs:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
                words="$words $c:$v"
            done
            ;;
    esac
done
ok "$(echo "$words" | grep -q 'backup:restore' && echo "$words" | grep -q 'audit:verify'
      echo $?)" "the verbs of backup and audit are read" "$words"
for w in $words; do
    cmd=${w/:/ }
    title="FSBROKER $(echo "$cmd" | tr a-z A-Z)"
    section "$title" >"$help"
    ok "$([ -s "$help" ]; echo $?)" "fsbroker(1) has a section $title"
    missing=""
    for o in $("$fsb" help $cmd | sed -n '/^options/,/^$/p' | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
        grep -qE -- "$o([^a-z-]|\$)" "$help" || missing="$missing $o"
    done
    ok "$([ -z "$missing" ]; echo $?)" \
        "fsbroker(1) $title names every option of fsbroker $cmd --help" "missing:$missing"
done

all_env=$(grep -ohE '\<(getenv|pick|find_client)\(([a-z_>.-]+, )?"[A-Z][A-Z0-9_]+"' \
    "$src"/core/*.c "$src"/clients/lib/*.c "$src"/clients/toybox/dispatch.c |
    sed 's/.*"\(.*\)"/\1/' | sort -u)
section ENVIRONMENT >"$help"
missing=""
for v in $all_env; do
    grep -qE "^ +$v\$" "$help" || missing="$missing $v"
done
ok "$([ -n "$all_env" ] && [ -z "$missing" ]; echo $?)" \
    "fsbroker(1) ENVIRONMENT describes every variable the source reads" "missing:$missing"
for s in NAME SYNOPSIS DESCRIPTION 'EXIT STATUS' FILES 'SEE ALSO'; do
    ok "$(grep -qx "$s" "$txt"; echo $?)" "fsbroker(1) has $s"
done

render "$mandir/fsbroker-pack.5" >"$txt"
missing=""
while read -r h; do
    grep -qxF "$(echo "$h" | tr -d '`' | tr a-z A-Z)" "$txt" || missing="$missing [$h]"
done < <(sed -n 's/^## //p' "$src/docs/rule-packs.md")
ok "$([ -z "$missing" ]; echo $?)" \
    "fsbroker-pack(5) has a section per section of docs/rule-packs.md" "missing:$missing"
fields=$(sed -n '/^## Fields/,/^## /s/^| `\([a-zA-Z.]*\)` |.*/\1/p' "$src/docs/rule-packs.md")
section FIELDS >"$help"
missing=""
for f in $fields; do
    grep -qE "^ +$f\$" "$help" || missing="$missing $f"
done
ok "$([ "$(echo "$fields" | wc -w)" -ge 15 ] && [ -z "$missing" ]; echo $?)" \
    "fsbroker-pack(5) FIELDS names every field of docs/rule-packs.md" "missing:$missing"
echo "1..$n"
exit $failed
