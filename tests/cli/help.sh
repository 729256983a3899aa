#!/bin/bash
# help.sh FSBROKER — every command's --help and its unknown options (TAP).
#
# The commands come from the dispatch table in core/main.c, the backup verbs
# from the verb table in core/cli_backup.c, and each command's long options
# from the getopt_long table in its own source file: a new command, verb or
# option without help text fails here. For each command (and verb):
#   --help exits 0 with its text on stdout alone, starting "usage: fsbroker
#   CMD"; -h and `fsbroker help CMD` print the same text; the text names
#   every long option the parser takes and every environment variable the
#   code reads, its exit statuses, environment and docs, in 80 columns; no two commands share a text; an unknown option,
#   long or short (in a cluster too), exits with the command's usage status
#   and names itself and the --help to read, a flag given a value says so; a
#   backup verb refuses the other verbs' options the same way.
# Then every variable the source reads in --help and `help environment`,
# and --version and `version --json` against VERSION.
set -u
fsb=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
n=0 failed=0
out=$(mktemp) err=$(mktemp) seen=$(mktemp)
trap 'rm -f "$out" "$err" "$seen"' EXIT

. "$(dirname "$0")/tap.sh"

# "name code" per line: the long options of the getopt_long table(s) in FILE.
long_opts() {
    sed -n "s/^[[:space:]]*{ \"\([a-z][a-z-]*\)\", [a-z]*_argument, NULL, '\(.\)' },\$/\1 \2/p" "$1"
}

# The source file defining a command's function (fsb_cli_NAME, or main.c).
file_of() {
    local f
    f=$(grep -l "^int fsb_cli_$1(int argc, char \*\*argv)" "$src"/core/*.c)
    echo "${f:-$src/core/main.c}"
}

# The environment variables a command reads: the names its file passes to
# getenv (or to the helpers that call it, pick and find_client), and those of
# what it calls for its configuration: core/config.c's (fsb_config_build),
# the state dir's (fsb_default_state_dir: HOME, XDG_STATE_HOME),
# core/run_sandbox.c's (fsb_run_find_on_path) and the client library's
# (fsbc_configure).
env_of() {
    local f=$1 files=$1
    grep -q 'fsb_config_build(' "$f" && files="$files $src/core/config.c"
    grep -q 'fsb_default_state_dir(' "$f" && echo HOME XDG_STATE_HOME
    grep -q 'fsb_run_find_on_path(' "$f" && files="$files $src/core/run_sandbox.c"
    grep -q 'fsbc_configure(' "$f" && files="$files $src/clients/lib/fsbc_conn.c"
    grep -ohE '\<(getenv|pick|find_client)\(([a-z_>.-]+, )?"[A-Z][A-Z0-9_]+"' $files |
        sed 's/.*"\(.*\)"/\1/'
}

# The status a command gives a usage error: as docs/decisions.md
# ("Usage errors keep each command's documented exit status") says.
usage_status() {
    case $1 in
        run | shell) echo 125 ;;
        delete) echo 1 ;;
        *) echo 2 ;;
    esac
}

# check_help "CMD [VERB]" "ENV..." OPTIONS...: the checks above for one
# command.
check_help() {
    local cmd=$1 env=$2 o st missing=""
    shift 2
    "$fsb" $cmd --help >"$out" 2>"$err"
    st=$?
    ok $((st != 0)) "fsbroker $cmd --help exits 0" "status $st"
    ok "$([ -s "$out" ] && [ ! -s "$err" ]; echo $?)" \
        "fsbroker $cmd --help prints on stdout alone" "stderr: $(head -c 200 "$err")"
    ok "$(head -1 "$out" | grep -q "^usage: fsbroker $cmd\( \|\$\)"; echo $?)" \
        "fsbroker $cmd --help starts with 'usage: fsbroker $cmd'" "$(head -1 "$out")"
    ok "$("$fsb" $cmd -h 2>&1 | cmp -s - "$out"; echo $?)" "fsbroker $cmd -h prints the same"
    ok "$("$fsb" help $cmd 2>&1 | cmp -s - "$out"; echo $?)" \
        "fsbroker help $cmd prints the same"
    for o in "$@"; do
        grep -qE -- "--$o([^a-z-]|\$)" "$out" || missing="$missing --$o"
    done
    ok "$([ -z "$missing" ]; echo $?)" \
        "fsbroker $cmd --help names each of its $# options" "missing:$missing"
    missing=""
    for o in $env; do
        sed -n '/^environment:/,/^docs:/p' "$out" | grep -qw "$o" || missing="$missing $o"
    done
    ok "$([ -z "$missing" ]; echo $?)" \
        "fsbroker $cmd --help names the environment variables it reads" "missing:$missing"
    ok "$(grep -q '^exit: ' "$out" && grep -q '^environment: ' "$out" &&
          grep -q '^docs: ' "$out"; echo $?)" \
        "fsbroker $cmd --help names its exit statuses, environment and docs"
    ok "$(! awk 'length > 80 { bad = 1 } END { exit !bad }' "$out"; echo $?)" \
        "fsbroker $cmd --help fits 80 columns" "$(awk 'length > 80' "$out" | head -1)"
    ok "$(! grep -qxF "$(md5sum <"$out")" "$seen"; echo $?)" \
        "fsbroker $cmd --help is a text of its own"
    md5sum <"$out" >>"$seen"
    "$fsb" $cmd --frobnicate x >/dev/null 2>"$err"
    st=$?
    ok "$([ "$st" -eq "$(usage_status "${cmd%% *}")" ]; echo $?)" \
        "fsbroker $cmd --frobnicate exits $(usage_status "${cmd%% *}")" "status $st"
    ok "$(grep -qF "fsbroker $cmd: unknown option --frobnicate; see fsbroker $cmd --help" \
          "$err"; echo $?)" "fsbroker $cmd --frobnicate names itself" "$(head -c 300 "$err")"
    # A flag given a value, where the command's getopt parses it.
    case $cmd in
        backup | audit | help) ;;
        *)
            "$fsb" $cmd --help=1 >/dev/null 2>"$err"
            st=$?
            ok "$([ "$st" -eq "$(usage_status "${cmd%% *}")" ] &&
                  grep -qF "fsbroker $cmd: --help takes no value; see fsbroker $cmd --help" \
                      "$err"; echo $?)" \
                "fsbroker $cmd --help=1 says --help takes no value" "status $st: $(head -c 300 "$err")"
            ;;
    esac
    # A short one, where getopt leaves it inside its cluster.
    "$fsb" $cmd -Zh >/dev/null 2>"$err"
    st=$?
    ok "$([ "$st" -eq "$(usage_status "${cmd%% *}")" ] &&
          grep -qF "fsbroker $cmd: unknown option -Z; see fsbroker $cmd --help" "$err"
          echo $?)" "fsbroker $cmd -Zh names -Z" "status $st: $(head -c 300 "$err")"
}

commands=$(sed -n 's/^[[:space:]]*{ "\([a-z]*\)", \(fsb_\)*cli_[a-z]* },$/\1/p' "$src/core/main.c")
ok "$([ "$(echo "$commands" | wc -l)" -ge 10 ]; echo $?)" \
    "the command table of core/main.c is read" "$commands"
"$fsb" --help >"$out" 2>&1
missing=""
for c in $commands; do
    grep -q "^  $c " "$out" || missing="$missing $c"
done
ok "$([ -z "$missing" ]; echo $?)" "fsbroker --help lists every command" "missing:$missing"
ok "$("$fsb" help | cmp -s - "$out"; echo $?)" "fsbroker help prints fsbroker --help"
md5sum <"$out" >>"$seen"

for c in $commands; do
    case $c in
        help) check_help help "" help ;;
        audit) check_help audit "" help ;;
        backup) check_help backup "$(env_of "$src/core/cli_backup.c" | sort -u)" \
            state-dir session workspace help ;;
        *) check_help "$c" "$(env_of "$(file_of "$c")" | sort -u)" \
            $(long_opts "$(file_of "$c")" | cut -d' ' -f1) ;;
    esac
done

# audit's verb: the options of core/cli_audit.c.
check_help "audit verify" "" $(long_opts "$src/core/cli_audit.c" | cut -d' ' -f1)

# backup's verbs: each takes the options its entry in the verb table names
# (short codes of the option table) and refuses the rest as unknown.
bopts=$(long_opts "$src/core/cli_backup.c")
verbs=$(sed -n 's/^[[:space:]]*{ "\([a-z]*\)", [a-z]*_usage, "\([a-zA-Z]*\)" },$/\1 \2/p' \
    "$src/core/cli_backup.c")
ok "$([ "$(echo "$verbs" | wc -l)" -eq 10 ]; echo $?)" \
    "the verb table of core/cli_backup.c is read" "$verbs"
while read -r verb codes; do
    takes="" others=""
    while read -r name code; do
        case $codes in
            *"$code"*) takes="$takes $name" ;;
            *) others="$others $name" ;;
        esac
    done <<<"$bopts"
    check_help "backup $verb" "$(env_of "$src/core/cli_backup.c" | sort -u)" $takes
    wrong=""
    for o in $others; do
        # Alone, and with a value both ways: the message names the option.
        for form in "--$o" "--$o=1" "--$o 1"; do
            "$fsb" backup "$verb" $form >/dev/null 2>"$err"
            st=$?
            [ "$st" -eq 2 ] && grep -qF "fsbroker backup $verb: unknown option --$o;" "$err" ||
                wrong="$wrong $form($st: $(head -c 80 "$err"))"
        done
    done
    ok "$([ -z "$wrong" ]; echo $?)" \
        "fsbroker backup $verb refuses the other verbs' options as unknown" "accepted:$wrong"
done <<<"$verbs"

# `help CMD WORD` of a command without verbs runs nothing: it would be
# `run WORD --help`, WORD run sandboxed (`echo --help` prints "--help").
"$fsb" help run echo >"$out" 2>"$err"
st=$?
ok "$([ "$st" -eq 2 ] && [ ! -s "$out" ]; echo $?)" \
    "fsbroker help run echo refuses (2) and runs nothing" \
    "status $st, stdout: $(head -c 100 "$out"), stderr: $(head -c 200 "$err")"
"$fsb" help backup restore extra >/dev/null 2>&1
ok "$([ $? -eq 2 ]; echo $?)" "fsbroker help backup restore extra refuses (2)"

# Every variable the source reads (core, the client library, the toybox
# dispatcher) is in `fsbroker --help` and described by `fsbroker help
# environment`, the text fsbroker(1)'s ENVIRONMENT is made from.
all_env=$(grep -ohE '\<(getenv|pick|find_client)\(([a-z_>.-]+, )?"[A-Z][A-Z0-9_]+"' \
    "$src"/core/*.c "$src"/core/linux/*.c "$src"/core/store/*.c "$src"/clients/lib/*.c \
    "$src"/clients/toybox/dispatch.c |
    sed 's/.*"\(.*\)"/\1/' | sort -u)
ok "$([ "$(echo "$all_env" | wc -l)" -ge 15 ]; echo $?)" \
    "the getenv calls of the source are read" "$all_env"
"$fsb" --help >"$out" 2>&1
"$fsb" help environment >"$err" 2>&1
st=$?
missing="" undescribed=""
for v in $all_env; do
    sed -n '/^environment:/,/^docs:/p' "$out" | grep -qw "$v" || missing="$missing $v"
    grep -qE "^  $v( |\$)" "$err" || undescribed="$undescribed $v"
done
ok "$([ -z "$missing" ]; echo $?)" \
    "fsbroker --help names every environment variable the source reads" "missing:$missing"
ok "$([ "$st" -eq 0 ] && [ -z "$undescribed" ]; echo $?)" \
    "fsbroker help environment describes every environment variable the source reads" \
    "status $st, missing:$undescribed"
ok "$(! awk 'length > 80 { bad = 1 } END { exit !bad }' "$err"; echo $?)" \
    "fsbroker help environment fits 80 columns" "$(awk 'length > 80' "$err" | head -1)"

version=$(cat "$src/VERSION")
ok "$([ "$("$fsb" --version)" = "fsbroker $version" ]; echo $?)" \
    "fsbroker --version prints fsbroker $version" "$("$fsb" --version 2>&1)"
ok "$([ "$("$fsb" version --json)" = "{\"version\": \"$version\"}" ] &&
      [ "$("$fsb" --version --json)" = "{\"version\": \"$version\"}" ]; echo $?)" \
    "fsbroker version --json and --version --json print {\"version\": \"$version\"}"
echo "1..$n"
exit $failed
