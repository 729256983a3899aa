#!/bin/bash
# tools/bench-runtime.sh BUILD — what the Linux runtime (`fsbroker run`) costs,
# measured in this one run on this machine: each workload runs bare, under
# bubblewrap alone with the mount plan `fsbroker run --explain` prints, and
# under `fsbroker run` (reads = "mask", and reads = "broker" once the run
# accepts it; and, for the start-up and the build, with network = "none"
# against the default pack's "host"). In every round each configuration runs once, one after the
# other, in an order that rotates round by round, so drift on the machine
# reaches them alike; medians are printed with their ratios, never judged.
# A command that fails under a configuration prints why in its row; the Lua
# build row says "skipped: <reason>" when its sources cannot be had; only a
# setup that goes wrong stops the benchmark.
#
#   BENCH_PEERS=DIR also run every workload under the peers tools/bench-peers.sh
#                   installed in DIR: @anthropic-ai/sandbox-runtime (srt) and
#                   @openai/codex (codex sandbox)
#   BENCH_QUICK=1   a smoke version (~40 s): fewer rounds, 2,000 files in the
#                   tree instead of 10,000, 20,000 in the big workspace instead
#                   of 100,000; the rows print their counts
#
# Nothing a workload wrote is deleted before the end: on this machine's ext4
# (mounted with discard) the extraction right after deleting 10,000 files
# ran ten times slower, so every run writes into a directory of its own.
#
# Everything runs in a temp dir under BUILD (not under /tmp: the default pack
# skips backups of ${tmp}/**) with its own --state-dir, removed at the end.
# The Lua sources are cached under BUILD/bench-cache/ (see fetch_lua).
set -eu
# Run from `make bench`, the Lua build would inherit the outer make's flags
# bare and under bwrap, but not under fsbroker run (whose environment is the
# pack's list): give all three the same.
unset MAKEFLAGS MFLAGS MAKELEVEL
build=$(cd "${1:-build}" && pwd)
# Absolute: the workloads run it from their own directories.
fsb=$(realpath "${FSBROKER:-$build/fsbroker}")
open_loop=$build/bench/open_loop

if [ "${BENCH_QUICK:-0}" = 1 ]; then
    r_true=5 r_tar=1 r_make=1 r_read=2 r_sed=3 r_open=2
    tree_files=2000 big_files=20000 opens=1000
else
    r_true=30 r_tar=3 r_make=3 r_read=7 r_sed=9 r_open=5
    tree_files=10000 big_files=100000 opens=2000
fi

echo "Linux runtime (fsbroker run): medians over the rounds each row names; in every"
echo "round each configuration runs once, in an order that rotates from round to round."

skip_all() {
    echo "  skipped: $1"
    exit 0
}
command -v bwrap >/dev/null 2>&1 || skip_all "bwrap is not installed (make deps)"
[ -x "$open_loop" ] || skip_all "$open_loop is not built (make bench builds it)"

root=$(mktemp -d "$build/bench-run.XXXXXX")
trap 'rm -rf "$root"' EXIT
trap 'exit 130' INT TERM
state=$root/state
log=$root/log
: >"$log"

die() {
    echo "bench-runtime: $1" >&2
    echo "bench-runtime: the last lines of its log:" >&2
    tail -n 15 "$log" >&2
    exit 1
}

# --- the configurations -------------------------------------------------------

# bwrap options per workspace, shell-quoted as --explain prints them.
declare -A plan scanned

# Ask `fsbroker run --explain` for the mount plan of workspace $1 and keep
# its bwrap options (the indented lines that start with --).
load_plan() {
    local ws=$1 out
    out=$(cd "$ws" && "$fsb" run --state-dir "$state" --workspace "$ws" --session bench \
        --explain 2>>"$log") || die "fsbroker run --explain failed in $ws"
    plan[$ws]=$(printf '%s\n' "$out" | sed -n 's/^  \(--.*\)$/\1/p' | tr '\n' ' ')
    scanned[$ws]=$(printf '%s\n' "$out" | sed -n 's/^mask scan: //p')
}

# Set the array `argv` to CMD run in workspace $2 under configuration $1.
build_argv() {
    local config=$1 ws=$2
    shift 2
    case $config in
    bare) argv=("$@") ;;
    bwrap) eval "argv=(bwrap ${plan[$ws]} -- \"\$@\")" ;;
    mask) argv=("$fsb" run --state-dir "$state" --workspace "$ws" --session bench -- "$@") ;;
    broker) argv=("$fsb" run --rules "$broker_pack" --state-dir "$state" --workspace "$ws"
        --session bench -- "$@") ;;
    nonet) argv=("$fsb" run --network none --state-dir "$state" --workspace "$ws"
        --session bench -- "$@") ;;
    srt) argv=("$peers/bin/srt" --settings "$root/srt-${ws##*/}.json" -c "$(printf '%q ' "$@")") ;;
    codex) argv=("$peers/bin/codex" sandbox -P "${ws##*/}" -C "$ws" -- "$@") ;;
    esac
}

# timed WORKLOAD CONFIG WS CMD...: run CMD in WS under CONFIG, stdout to
# /dev/null, stderr (the run's summary included) to the log; on success add
# its wall time in microseconds to the samples of WORKLOAD and CONFIG and
# return 0. A command that fails marks WORKLOAD failed under CONFIG, with the
# first line it printed on stderr, and is not run again for that WORKLOAD.
declare -A failed
timed() {
    local workload=$1 config=$2 ws=$3 t0 t1 rc=0
    shift
    [ -z "${failed[$workload $config]:-}" ] || return 1
    build_argv "$@"
    cd "$ws"
    t0=${EPOCHREALTIME/./}
    "${argv[@]}" >/dev/null 2>"$root/stderr" || rc=$?
    t1=${EPOCHREALTIME/./}
    cd "$root"
    cat "$root/stderr" >>"$log"
    if [ $rc != 0 ]; then
        failed[$workload $config]="fails (exit $rc): $(grep -v -m1 '^fsbroker: warning' \
            "$root/stderr" | cut -c1-100)"
        return 1
    fi
    add "$workload" "$config" $((t1 - t0))
}

# Samples in microseconds, keyed "workload config"; med prints the median.
declare -A samples
add() { samples[$1 $2]+=" $3"; }
med() {
    # shellcheck disable=SC2086 # the samples are words
    printf '%s\n' ${samples[$1 $2]} | sort -n | awk '{ a[NR] = $1 }
        END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

label() {
    case $1 in
    bare) echo "bare" ;;
    bwrap) echo "bwrap alone, same mounts" ;;
    mask) echo "fsbroker run, reads = mask" ;;
    broker) echo "fsbroker run, reads = broker" ;;
    nonet) echo "fsbroker run, reads = mask, network = none" ;;
    srt) echo "srt (sandbox-runtime $srt_version)" ;;
    codex) echo "codex sandbox ($codex_version)" ;;
    esac
}

# Why WORKLOAD has no number under CONFIG, or nothing when it has one.
unmeasured() {
    if [ -n "${off[$2]:-}" ]; then
        echo "${off[$2]}"
    elif [ -n "${failed[$1 $2]:-}" ]; then
        echo "${failed[$1 $2]}"
    elif [ -z "${samples[$1 $2]:-}" ]; then
        echo "no sample"
    fi
}

ms() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; }
# a ÷ b, or "-" when either has no number.
ratio() {
    if [ -z "$1" ] || [ -z "$2" ]; then
        echo -
        return
    fi
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
}
header() { printf '\n%-46s %10s %8s %8s\n' "$1" "median ms" "÷ bare" "÷ bwrap"; }

# row WORKLOAD CONFIG: median ms, ÷ bare and (for fsbroker run) ÷ bwrap.
row() {
    local why m b='' w=''
    why=$(unmeasured "$1" "$2")
    if [ -n "$why" ]; then
        printf '  %-44s %s\n' "$(label "$2")" "$why"
        return
    fi
    m=$(med "$1" "$2")
    [ -n "$(unmeasured "$1" bare)" ] || b=$(med "$1" bare)
    [ -n "$(unmeasured "$1" bwrap)" ] || w=$(med "$1" bwrap)
    case $2 in
    bare) printf '  %-44s %10s %8s\n' "$(label "$2")" "$(ms "$m")" 1.00 ;;
    bwrap) printf '  %-44s %10s %8s\n' "$(label "$2")" "$(ms "$m")" "$(ratio "$m" "$b")" ;;
    *) printf '  %-44s %10s %8s %8s\n' "$(label "$2")" "$(ms "$m")" "$(ratio "$m" "$b")" \
        "$(ratio "$m" "$w")" ;;
    esac
}
rows() { for c in $all_configs; do row "$1" "$c"; done; }
# The network = "none" row of WORKLOAD, and its ratio to the same run on the
# host's network (mask).
net_row() {
    row "$1" nonet
    [ -z "$(unmeasured "$1" nonet)" ] && [ -z "$(unmeasured "$1" mask)" ] || return 0
    printf '  %-44s %10s %8s\n' "network = none ÷ host" "" \
        "$(ratio "$(med "$1" nonet)" "$(med "$1" mask)")"
}

# --- the workspaces -------------------------------------------------------------

# make_tree DIR N: N small text files in directories of 100; every 50th file
# holds the word grep looks for.
make_tree() {
    local dir=$1 n=$2 i d
    for ((i = 0; i < n; i++)); do
        d=$dir/d$((i / 100))
        ((i % 100)) || mkdir -p "$d"
        {
            printf 'file %d of the benchmark tree\n' "$i"
            printf 'line %d: the quick brown fox jumps over the lazy dog\n' {1..12}
            ((i % 50)) || printf 'a needle in file %d\n' "$i"
        } >"$d/f$((i % 100)).txt"
    done
}

mkdir -p "$root/src"
mkdir -m 0700 "$state"
make_tree "$root/src/tree" "$tree_files"
tar cf "$root/src/tree.tar" -C "$root/src" tree

ws_true=$root/ws-true		# start-up and the open loop: one file
ws_tar=$root/ws-tar		# the archive; extracted into out/
ws_read=$root/ws-read		# the tree, read by find/cat and grep
ws_small=$root/ws-small		# sed: 10 files
ws_big=$root/ws-big		# sed: $big_files files
ws_make=$root/ws-make		# the Lua sources, copied in before each build
mkdir -p "$ws_true" "$ws_tar" "$ws_read" "$ws_small" "$ws_big" "$ws_make"
echo alpha >"$ws_true/open.txt"
cp "$root/src/tree.tar" "$ws_tar/archive.tar"
cp -a "$root/src/tree" "$ws_read/"
for i in 1 2 3 4 5 6 7 8 9; do echo "file $i" >"$ws_small/other-$i.txt"; done
for ((i = 0; i < big_files / tree_files; i++)); do
    mkdir "$ws_big/copy$i"
    tar xf "$root/src/tree.tar" -C "$ws_big/copy$i"
done
for ws in "$ws_small" "$ws_big"; do echo alpha >"$ws/notes.txt"; done

# Does the runtime start here at all? And does it take reads = "broker"?
(cd "$ws_true" && "$fsb" run --state-dir "$state" --workspace "$ws_true" --session bench \
    -- true) 2>"$root/probe" ||
    skip_all "fsbroker run -- true fails here: $(tail -n 1 "$root/probe")"
broker_pack=$root/bench-broker.lua
cat >"$broker_pack" <<'EOF'
-- bench-broker: the default pack with every open routed through the supervisor
return { name = "bench-broker", include = { "default" }, reads = "broker" }
EOF
declare -A off
rc=0
(cd "$ws_true" && "$fsb" run --rules "$broker_pack" --state-dir "$state" --workspace "$ws_true" \
    --session bench -- true) 2>"$root/probe" || rc=$?
if [ $rc = 125 ]; then
    off[broker]="not yet: $(tail -n 1 "$root/probe" | sed 's/^fsbroker run: //')"
elif [ $rc != 0 ]; then
    off[broker]="fails (exit $rc): $(tail -n 1 "$root/probe")"
fi
all_configs="bare bwrap mask broker"
# network = "none" (a network namespace of its own): only in the start-up and
# the build, against mask (the default pack: network = "host").
rc=0
(cd "$ws_true" && "$fsb" run --network none --state-dir "$state" --workspace "$ws_true" \
    --session bench -- true) 2>"$root/probe" || rc=$?
[ $rc = 0 ] || off[nonet]="fails (exit $rc): $(tail -n 1 "$root/probe")"

# The peers, when asked for: each workspace gets an srt settings file that
# lets it write there (and only there), and a codex permission profile named
# after it in a CODEX_HOME of this run.
peers=${BENCH_PEERS:-}
if [ -n "$peers" ]; then
    all_configs="$all_configs srt codex"
    export PATH="$peers/bin:$PATH"	# codex sandbox runs codex-linux-sandbox from PATH
    export CODEX_HOME=$root/codex-home
    mkdir -p "$CODEX_HOME"
    srt_version=$("$peers/bin/srt" --version 2>/dev/null || echo "?")
    codex_version=$("$peers/bin/codex" --version 2>/dev/null || echo "?")
    for ws in "$ws_true" "$ws_tar" "$ws_read" "$ws_small" "$ws_big" "$ws_make"; do
        printf '{"filesystem":{"denyRead":[],"allowWrite":["%s"],"denyWrite":[]},' "$ws" \
            >"$root/srt-${ws##*/}.json"
        echo '"network":{"allowedDomains":[],"deniedDomains":[]}}' >>"$root/srt-${ws##*/}.json"
        printf '[permissions.%s.filesystem]\n"/" = "read"\n"%s" = "write"\n\n' \
            "${ws##*/}" "$ws" >>"$CODEX_HOME/config.toml"
    done
    for c in srt codex; do
        [ -x "$peers/bin/$c" ] || { off[$c]="cannot run: $peers/bin/$c is missing"; continue; }
        build_argv "$c" "$ws_true" sh -c 'echo ok >probe.txt'
        rc=0
        (cd "$ws_true" && "${argv[@]}") >"$root/probe" 2>&1 || rc=$?
        [ $rc = 0 ] && [ -f "$ws_true/probe.txt" ] ||
            off[$c]="cannot run here (exit $rc): $(tail -n 1 "$root/probe" | cut -c1-100)"
        rm -f "$ws_true/probe.txt"
    done
fi
configs=
for c in $all_configs; do [ -n "${off[$c]:-}" ] || configs="$configs $c"; done
net_configs=$configs
[ -n "${off[nonet]:-}" ] || net_configs="$configs nonet"

# The configurations in the order round $1 runs them: the list rotated by
# one each round, so that none always runs first (after the setup's writes)
# or always right after the same neighbour.
round_order() {
    local -a list
    read -r -a list <<<"${2:-$configs}"
    local k n=${#list[@]}
    for ((k = 0; k < n; k++)); do echo "${list[(k + $1) % n]}"; done
}

for ws in "$ws_true" "$ws_tar" "$ws_read" "$ws_small" "$ws_big" "$ws_make"; do
    load_plan "$ws"
done

echo "  bare: the command as it is; bwrap alone: bubblewrap with the options"
echo "  \`fsbroker run --explain\` prints (no fsbroker-init: no Landlock, no filter);"
echo "  fsbroker run: the default pack, backups on. Workspaces under $root."

# --- 1. start-up ------------------------------------------------------------------

# /bin/true, not the shell's builtin: every configuration starts a program.
for ((r = 0; r < r_true; r++)); do
    for c in $(round_order "$r" "$net_configs"); do timed true "$c" "$ws_true" /bin/true || true; done
done
header "1. \`true\` (start-up), $r_true rounds"
rows true
net_row true
echo "  (aim: fsbroker run ≤ 15 ms)"

# --- 2. tar x -------------------------------------------------------------------------

# tar_rounds WORKLOAD TAR-OPTION...: extract the archive into a new directory.
tar_rounds() {
    local workload=$1 r c out
    shift
    for ((r = 0; r < r_tar; r++)); do
        for c in $(round_order "$r"); do
            out=out-$workload-$r-$c
            mkdir "$ws_tar/$out" && sync
            timed "$workload" "$c" "$ws_tar" tar xf archive.tar -C "$out" "$@" || continue
            [ "$(find "$ws_tar/$out" -type f | wc -l)" = "$tree_files" ] ||
                die "tar x under $c did not extract $tree_files files"
        done
    done
}
tar_rounds tar
header "2. \`tar x\` of $tree_files files, $r_tar rounds"
rows tar
# When plain tar x fails somewhere (it restores times, owners and modes
# through calls the runtime may not emulate yet), measure the extraction
# without them too, so that the row has a number.
if [ -n "${failed[tar mask]:-}${failed[tar broker]:-}" ]; then
    tar_rounds tar-plain --touch --no-same-owner --no-same-permissions
    echo "   the same with --touch --no-same-owner --no-same-permissions:"
    rows tar-plain
fi
echo "  (aim: fsbroker run ÷ bare ≤ 1.15)"

# --- 3. make -j2 of Lua 5.4 ---------------------------------------------------------

# Lua 5.4 from Debian's source package, fetched the way clients get their
# sources (DESIGN §8): a private sources.list with one deb-src line, private
# apt lists and cache, so the machine's own apt state is never touched.
# Unpacked with --skip-patches: Debian's patches move the build to libtool
# and autoreconf; upstream's Makefile is the one a developer runs.
cache=$build/bench-cache/lua5.4
lua_tree=$cache/lua
fetch_lua() {
    local apt=$cache/apt dsc
    local -a opts=(-q -o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=-"
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
    command -v apt-get >/dev/null 2>&1 || { echo "no apt-get on this machine"; return 1; }
    command -v dpkg-source >/dev/null 2>&1 || { echo "no dpkg-source (dpkg-dev)"; return 1; }
    rm -rf "$cache"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$cache/download"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
        "http://deb.debian.org/debian bookworm main" >"$apt/sources.list"
    if ! apt-get "${opts[@]}" --error-on=any update >"$cache/fetch.log" 2>&1 ||
        ! (cd "$cache/download" && apt-get "${opts[@]}" source --download-only lua5.4) \
            >>"$cache/fetch.log" 2>&1; then
        echo "apt-get could not fetch lua5.4's source: $(grep -m1 -E '^(E|W): ' "$cache/fetch.log" ||
            tail -n 1 "$cache/fetch.log")"
        return 1
    fi
    dsc=$(find "$cache/download" -name 'lua5.4_*.dsc' | head -n 1)
    dpkg-source --skip-patches -x "$dsc" "$cache/unpacked" >>"$cache/fetch.log" 2>&1 || {
        echo "dpkg-source -x failed: $(tail -n 1 "$cache/fetch.log")"
        return 1
    }
    mv "$cache/unpacked" "$lua_tree"
    rm -rf "$apt"
}
make_skip=
[ -f "$lua_tree/src/lua.c" ] || make_skip=$(fetch_lua) || true
[ -n "$make_skip" ] || [ -f "$lua_tree/src/lua.c" ] ||
    make_skip="the Lua sources are not under $lua_tree"
# shellcheck disable=SC2016 # $V is Lua's Makefile's, literally
lua_version=$(sed -n 's/^R= \$V\.\([0-9]*\)$/5.4.\1/p' "$lua_tree/Makefile" 2>/dev/null || true)
header "3. clean \`make -j2\` of Lua ${lua_version:-5.4}, $r_make rounds"
if [ -n "$make_skip" ]; then
    echo "  skipped: $make_skip"
else
    for ((r = 0; r < r_make; r++)); do
        for c in $(round_order "$r" "$net_configs"); do
            cp -a "$lua_tree" "$ws_make/lua-$r-$c" && sync
            timed make "$c" "$ws_make" make -s -j2 -C "lua-$r-$c" linux || continue
            [ -x "$ws_make/lua-$r-$c/src/lua" ] || die "make under $c built no lua"
        done
    done
    rows make
    net_row make
fi
echo "  (aim: fsbroker run ÷ bare ≤ 1.05)"

# --- 4. reading the tree -----------------------------------------------------------

find "$ws_read" -type f -exec cat {} + >/dev/null	# warm the page cache
for ((r = 0; r < r_read; r++)); do
    for c in $(round_order "$r"); do
        timed cat "$c" "$ws_read" find tree -type f -exec cat {} + || true
        timed grep "$c" "$ws_read" grep -r needle tree || true
    done
done
header "4a. \`find -exec cat {} +\`, $tree_files files, $r_read rounds"
rows cat
header "4b. \`grep -r\` over the same $tree_files files"
rows grep
echo "  (aim: fsbroker run ÷ bare ≤ 1.05 with reads = mask)"

# --- 5. sed -i in a small and a big workspace ---------------------------------------

n=0
for ((r = 0; r < r_sed; r++)); do
    for c in $(round_order "$r"); do
        for ws in "$ws_small" "$ws_big"; do
            n=$((n + 1))
            printf 'alpha %d\n' "$n" >"$ws/notes.txt"	# new content: a new backup
            sync
            timed "sed-$ws" "$c" "$ws" sed -i s/alpha/beta/ notes.txt || continue
            [ "$(cut -d' ' -f1 "$ws/notes.txt")" = beta ] || die "sed -i under $c changed nothing"
        done
    done
done
if [ -n "${samples[sed-$ws_small mask]:-}" ] &&
    [ -z "$(find "$state/sessions/bench" -path '*objects*' -type f | head -n 1)" ]; then
    die "fsbroker run backed nothing up for sed -i: the row would measure no backup"
fi
printf '\n%-46s %10s %10s %9s\n' "5. one \`sed -i\`, backup on, $r_sed rounds" \
    "10 files" "$big_files" "big÷small"
for c in $all_configs; do
    why=$(unmeasured "sed-$ws_small" "$c")
    [ -n "$why" ] || why=$(unmeasured "sed-$ws_big" "$c")
    if [ -n "$why" ]; then
        printf '  %-44s %s\n' "$(label "$c")" "$why"
        continue
    fi
    s=$(med "sed-$ws_small" "$c")
    b=$(med "sed-$ws_big" "$c")
    printf '  %-44s %7s ms %7s ms %9s\n' "$(label "$c")" "$(ms "$s")" "$(ms "$b")" \
        "$(ratio "$b" "$s")"
done
echo "  (medians; the run's mask scan of the big workspace: ${scanned[$ws_big]};"
echo "   aim: the cost does not grow with the workspace, big÷small ≈ 1)"

# --- 6. emulated write-open ÷ native open -------------------------------------------

for ((r = 0; r < r_open; r++)); do
    for c in $(round_order "$r"); do
        [ -z "${failed[open $c]:-}" ] || continue
        printf 'round %d %s\n' "$r" "$c" >"$ws_true/open.txt"	# new content: a new backup
        build_argv "$c" "$ws_true" "$open_loop" open.txt "$opens"
        if ! out=$(cd "$ws_true" && "${argv[@]}" 2>"$root/stderr"); then
            failed[open $c]="fails: $(grep -v -m1 '^fsbroker: warning' "$root/stderr")"
            continue
        fi
        cat "$root/stderr" >>"$log"
        add open "$c" "$(printf '%s\n' "$out" | sed -n 's/.*median_ns=\([0-9]*\).*/\1/p')"
        add open-first "$c" "$(printf '%s\n' "$out" | sed -n 's/.*first_ns=\([0-9]*\).*/\1/p')"
    done
done
printf '\n%-46s %10s %8s\n' "6. open(O_WRONLY|O_TRUNC) of an existing file," "µs/open" "÷ bare"
echo "   $opens opens a run, $r_open rounds"
base=
[ -n "$(unmeasured open bare)" ] || base=$(med open bare)
for c in $all_configs; do
    why=$(unmeasured open "$c")
    if [ -n "$why" ]; then
        printf '  %-44s %s\n' "$(label "$c")" "$why"
        continue
    fi
    m=$(med open "$c")
    printf '  %-44s %10s %8s\n' "$(label "$c"), steady" "$(ms "$m")" "$(ratio "$m" "$base")"
    if [ "$c" = mask ] || [ "$c" = broker ]; then
        m=$(med open-first "$c")
        printf '  %-44s %10s %8s\n' "$(label "$c"), first" "$(ms "$m")" "$(ratio "$m" "$base")"
    fi
done
echo "  (medians of each run's median open; \"first\" is the first open of a run,"
echo "   which backs the file up; aim: emulated ÷ native ≤ 4)"

# --- 7. the mask scan alone ---------------------------------------------------------

# `fsbroker run --explain` loads the pack and builds the mount plan, the mask
# scan included, and starts nothing: the big workspace's time less the small
# one's is the scan of the extra entries. The two alternate round by round.
for ((r = 0; r < r_sed; r++)); do
    for ws in "$ws_small" "$ws_big"; do
        cd "$ws"
        t0=${EPOCHREALTIME/./}
        "$fsb" run --state-dir "$state" --workspace "$ws" --session bench --explain \
            >/dev/null 2>>"$log" || die "fsbroker run --explain failed in $ws"
        t1=${EPOCHREALTIME/./}
        cd "$root"
        add "explain-$ws" mask $((t1 - t0))
    done
done
s=$(med "explain-$ws_small" mask)
b=$(med "explain-$ws_big" mask)
n_small=${scanned[$ws_small]%% *}
n_big=${scanned[$ws_big]%% *}
printf '\n%-46s %10s %10s %12s\n' "7. the mask scan: \`fsbroker run --explain\`," "10 files" \
    "$big_files" "µs/entry"
printf '  %-44s %7s ms %7s ms %12s\n' "$r_sed rounds, alternating" "$(ms "$s")" "$(ms "$b")" \
    "$(awk -v s="$s" -v b="$b" -v ns="$n_small" -v nb="$n_big" \
        'BEGIN { if (nb > ns) printf "%.1f", (b - s) / (nb - ns); else print "-" }')"
echo "  (medians; the scan looked at $n_small and $n_big entries; it reads every entry"
echo "   up to its bound, and a workspace beyond the bound refuses the run)"
