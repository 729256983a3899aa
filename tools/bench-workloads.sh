#!/bin/bash
# tools/bench-workloads.sh BUILD — what the everyday commands cost under
# `fsbroker run` on the default pack against the same command bare, in this
# one run on this machine (issue "Everyday agent commands"): chmod -R and
# touch -d over 1,000 files, mv of a 3,000-file directory, rm -rf of a
# 3,000-file tree, sed -i over 1,000 files, git checkout of another branch in
# a 1,000-file repository, rsync -a --delete of a 1,000-file tree into its
# changed copy, npm ci of a lockfile with TypeScript from a warm cache. Each
# round runs bare and under fsbroker run with each backup.durability
# ("strict", "batched": the default pack with that one setting) on fresh
# copies of one template, in an order that rotates round by round; medians
# and their ratio to bare are printed, never judged. Per workload and mode
# also: the bytes the run added to the backup store, and the syncs the whole
# run made (fsync, fdatasync, syncfs; strace -f, when strace is installed)
# minus the bare command's, in all and per file the command changes (1,000
# or 3,000: each workload is one kind of change).
#
#   BENCH_QUICK=1   2 rounds instead of 5
#   BENCH_ONLY="mv git rsync"   only these workloads (of chmod touch mv rm
#                   sed git rsync npm; BENCH_WORKLOADS is the same)
set -eu
unset MAKEFLAGS MFLAGS MAKELEVEL
build=$(cd "${1:-build}" && pwd)
# Absolute: the workloads run it from their own directories.
fsb=$(realpath "${FSBROKER:-$build/fsbroker}")
rounds=5
[ "${BENCH_QUICK:-0}" = 1 ] && rounds=2

# Under the checkout, not under ${tmp}: the default pack backs this up.
root=$(mktemp -d "$build/bench-workloads.XXXXXX")
trap 'rm -rf "$root"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$root/home" "$root/tmp" "$root/state" "$root/packs"
chmod 0700 "$root/tmp" "$root/state"
for mode in strict batched; do
    printf 'return { name = "bench-%s", include = { "default" },\n  backup = { durability = "%s" } }\n' \
        "$mode" "$mode" >"$root/packs/$mode.lua"
done
export HOME=$root/home TMPDIR=$root/tmp
unset XDG_STATE_HOME XDG_CONFIG_HOME XDG_CACHE_HOME XDG_DATA_HOME XDG_RUNTIME_DIR
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.invalid GIT_CONFIG_NOSYSTEM=1
export GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.invalid
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

echo "Everyday commands under fsbroker run (default pack, backup.durability strict and"
echo "batched) ÷ bare: medians of $rounds rounds, bare and the two modes in rotating order;"
echo "store bytes and syncs (fsync+fdatasync+syncfs, minus bare's) are those of one run."

small_tree() {
    mkdir -p "$1"
    for i in $(seq 1 "$2"); do
        mkdir -p "$1/d$((i % 20))"
        printf 'line one foo %s\nline two\n' "$i" >"$1/d$((i % 20))/f$i.txt"
    done
}

setup_chmod() { small_tree src 1000; }
cmd_chmod='chmod -R go-w src'
setup_touch() { small_tree src 1000; }
cmd_touch='find src -type f -exec touch -d "2020-01-02 03:04:05" {} +'
setup_mv() { small_tree a 3000; }
cmd_mv='mv a b'
setup_rm() { small_tree node_modules 3000; }
cmd_rm='rm -rf node_modules'
setup_sed() { small_tree src 1000; }
cmd_sed='find src -name "*.txt" -exec sed -i s/foo/bar/ {} +'
setup_git() {
    git init -q -b main . && small_tree src 1000 && git add -A && git commit -qm one
    git checkout -q -b other && find src -name 'f1*.txt' -exec sed -i s/two/TWO/ {} + &&
        git commit -qam two && git checkout -q main
}
cmd_git='git checkout -q other'
setup_rsync() {
    small_tree src 1000 && cp -a src dst &&
        find src -name 'f1*.txt' -exec sed -i s/two/TWO/ {} + &&
        rm -f src/d3/* && small_tree src/new 200
}
cmd_rsync='rsync -a --delete src/ dst/'
setup_npm() {
    printf '{"name":"b","version":"1.0.0","private":true,"devDependencies":{"typescript":"4.9.5"}}\n' >package.json
    npm install -q >/dev/null 2>&1
}
cmd_npm='npm ci -q'

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }

fsyncs() { # the sync calls `strace -f -c` counted in file $1
    awk '$NF ~ /^(fsync|fdatasync|syncfs|sync_file_range)$/ {n += $4} END {print n + 0}' "$1"
}

# How many files each workload changes: syncs per change.
files_chmod=1000 files_touch=1000 files_mv=3000 files_rm=3000 files_sed=1000
files_git=1000 files_rsync=580 files_npm=0

run_in() { # run_in MODE W CMD [strace output]: CMD under fsbroker run in $d/ws
    local pre=()
    [ -n "${4:-}" ] && pre=(strace -f -c -o "$4")
    (cd "$d/ws" && "${pre[@]}" "$fsb" run --rules "$root/packs/$1.lua" --workspace "$d/ws" \
        --state-dir "$root/state" --session "b-$2-$1" -- sh -c "$3")
}

printf '  %-30s %-8s %9s %9s %6s %12s %7s %9s\n' workload mode bare run ratio "store bytes" \
    syncs "per file"
for w in ${BENCH_ONLY:-${BENCH_WORKLOADS:-chmod touch mv rm sed git rsync npm}}; do
    d=$root/$w
    mkdir -p "$d/tpl"
    if [ "$w" = npm ] && ! command -v npm >/dev/null 2>&1; then
        printf '  %-34s skipped: npm is not installed\n' "$w"
        continue
    fi
    if ! (cd "$d/tpl" && "setup_$w") >"$d/setup.log" 2>&1; then
        printf '  %-34s skipped: its setup failed (%s)\n' "$w" "$(tail -1 "$d/setup.log")"
        continue
    fi
    cmdvar=cmd_$w
    cmd=${!cmdvar}
    bare=() strict=() batched=() failed=""
    orders=("bare strict batched" "strict batched bare" "batched bare strict")
    for r in $(seq 1 "$rounds"); do
        for order in ${orders[$((r % 3))]}; do
            rm -rf "$d/ws" && cp -a "$d/tpl" "$d/ws"
            sync
            t=$(date +%s%N)
            if [ "$order" = bare ]; then
                (cd "$d/ws" && sh -c "$cmd") >"$d/out" 2>&1 || failed="bare: $(tail -1 "$d/out")"
                bare+=("$(ms_since "$t")")
            else
                run_in "$order" "$w" "$cmd" >"$d/out" 2>&1 ||
                    failed="$order: $(tail -1 "$d/out")"
                eval "$order+=(\"\$(ms_since \"\$t\")\")"
            fi
        done
    done
    if [ -n "$failed" ]; then
        printf '  %-30s failed: %s\n' "${cmd:0:30}" "$failed"
        continue
    fi
    mb=$(printf '%s\n' "${bare[@]}" | median)
    bare_syncs=-
    if command -v strace >/dev/null 2>&1; then
        rm -rf "$d/ws" && cp -a "$d/tpl" "$d/ws"
        (cd "$d/ws" && strace -f -c -o "$d/strace.bare" sh -c "$cmd") >/dev/null 2>&1 || true
        bare_syncs=$(fsyncs "$d/strace.bare")
    fi
    for mode in strict batched; do
        # One more run of each mode, alone, for the store's growth and the syncs.
        before=$(du -sb "$root/state" | cut -f1)
        rm -rf "$d/ws" && cp -a "$d/tpl" "$d/ws"
        syncs=- per=-
        if [ "$bare_syncs" != - ]; then
            run_in "$mode" "$w" "$cmd" "$d/strace.$mode" >/dev/null 2>&1 || true
            syncs=$(($(fsyncs "$d/strace.$mode") - bare_syncs))
            nf=files_$w
            [ "${!nf}" -gt 0 ] && per=$(awk -v s="$syncs" -v n="${!nf}" 'BEGIN {printf "%.2f", s / n}')
        else
            run_in "$mode" "$w" "$cmd" >/dev/null 2>&1 || true
        fi
        after=$(du -sb "$root/state" | cut -f1)
        mr=$(eval "printf '%s\n' \"\${$mode[@]}\"" | median)
        printf "  %-30s %-8s %6s ms %6s ms %6s %12s %7s %9s\n" "${cmd:0:30}" "$mode" "$mb" "$mr" \
            "$(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.1f", (b > 0 ? a / b : 0)}')" \
            "$((after - before))" "$syncs" "$per"
    done
done
