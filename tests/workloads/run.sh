#!/usr/bin/env bash
# tests/workloads/run.sh FSBROKER [NAME...] — the commands a coding agent runs
# all day, under `fsbroker run` on the embedded default pack, judged as a
# user would judge them. For each workload, on identical copies of one
# template tree at the same path:
#   1. the command's exit status under fsbroker run is the bare one;
#   2. the tree it leaves is the bare one (paths, types, content, symlink
#      targets, modes, owners, link groups, and every mtime the command kept
#      rather than made: tar's, rsync's, touch -d's);
#   3. `fsbroker backup restore` of the run's cycle gives the template back
#      exactly (paths, types, content, modes, owners, file mtimes in ns,
#      link groups);
#   4. and its directories' mtimes (in ns);
#   5. for the hard-linked tree, its link groups: not built yet, so that
#      point says SKIP with the count of groups that differ.
# With WORKLOADS_ATTACHED=1 each command runs attached instead, with
# `fsbroker run --core` against an `fsbroker serve` of its own, and the
# restore is of the cycle still open, before the host commits it (--force):
# what a host that undoes a turn early does.
# Prints TAP; with NAMEs, runs only those. The workspaces live under the
# checkout (build/workloads), not under ${tmp}, so their backups are taken
# as a user's would be; HOME and TMPDIR are directories of that layout.
set -u
fsb=$(realpath "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$fsb")/workloads
tree=(python3 "$here/tree.py")

# rustup's cargo finds its toolchains from the real home.
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
rm -rf "$root"
mkdir -p "$root/home" "$root/tmp" "$root/state"
chmod 0700 "$root/tmp" "$root/state"
export HOME=$root/home TMPDIR=$root/tmp
unset XDG_STATE_HOME XDG_CONFIG_HOME XDG_CACHE_HOME XDG_DATA_HOME XDG_RUNTIME_DIR
export GIT_AUTHOR_NAME=w GIT_AUTHOR_EMAIL=w@example.invalid
export GIT_COMMITTER_NAME=w GIT_COMMITTER_EMAIL=w@example.invalid
export GIT_CONFIG_NOSYSTEM=1 PYTHONDONTWRITEBYTECODE=1 npm_config_update_notifier=false
# Inside the sandbox only the pack's env.pass reaches git: its identity is
# the user's ~/.gitconfig, as on a real machine.
git config --global user.name w && git config --global user.email w@example.invalid
git config --global init.defaultBranch main
export npm_config_audit=false npm_config_fund=false

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$2" | head -40; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }

# A tree of $2 small files under $1, in a few directories, with fixed times.
small_tree() {
    mkdir -p "$1"
    for i in $(seq 1 "$2"); do
        d="$1/d$((i % 10))"
        mkdir -p "$d"
        printf 'line one foo %s\nline two\n' "$i" >"$d/f$i.txt"
    done
    find "$1" -exec touch -h -d '2024-03-04 05:06:07.123456789' {} +
}

# ---- the workloads: setup_NAME fills the template (cwd), cmd_NAME is the
# command line run in the workspace ---------------------------------------

setup_sed_i() { small_tree src 1000; }
cmd_sed_i='find src -name "*.txt" -exec sed -i s/foo/bar/ {} +'

setup_chmod_r() { small_tree src 1000; chmod -R g+w src; }
cmd_chmod_r='chmod -R go-w src'

setup_touch_d() { small_tree src 1000; }
cmd_touch_d='find src -type f -exec touch -d "2020-01-02 03:04:05" {} +'

setup_mv_tree() { small_tree a 3000; }
cmd_mv_tree='mv a b'

setup_rm_rf() { small_tree node_modules 3000; ln -s d1/f1.txt node_modules/link; }
cmd_rm_rf='rm -rf node_modules'

setup_tar_x() {
    small_tree src 300
    mkdir -p ../v2 && cp -a src ../v2/ && sed -i s/one/ONE/ ../v2/src/d1/*.txt
    rm ../v2/src/d2/f2.txt && echo new >../v2/src/d3/new.txt
    touch -d '2023-01-01' ../v2/src/d3/new.txt
    tar -C ../v2 -cf src.tar src && rm -rf ../v2
    touch -d '2024-01-01' src.tar .
}
cmd_tar_x='tar xf src.tar'

setup_rsync_delete() {
    small_tree src 300
    cp -a src dst && sed -i s/two/TWO/ src/d4/*.txt && rm src/d5/f5.txt
    echo extra >dst/d6/extra.txt && touch -d '2022-02-02' dst/d6/extra.txt src/d4
}
cmd_rsync_delete='rsync -a --delete src/ dst/'

setup_git() {
    git init -q -b main . && small_tree src 200 && git add -A && git commit -qm one
    git checkout -q -b other && sed -i s/two/TWO/ src/d1/*.txt && rm src/d2/f2.txt
    echo added >src/added.txt && git add -A && git commit -qm two
    git checkout -q main && echo dirty >>src/d3/f3.txt
}
# The index holds inode numbers and times, the reflogs times.
volatile_git='.git/index,.git/logs/*,.git/ORIG_HEAD'
# Commits made at another second would be other objects: a fixed date.
git_date='export GIT_AUTHOR_DATE="2024-05-06T07:08:09Z" GIT_COMMITTER_DATE="2024-05-06T07:08:09Z";'
cmd_git=$git_date'git stash -q && git checkout -q other && git checkout -q main && git stash pop -q &&
git -c rebase.autoStash=true rebase -q other && git gc -q --prune=now && git status --short'

setup_git_init_clone() {
    mkdir -p ../origin.git && git -C ../origin.git init -q --bare -b main
    git clone -q ../origin.git seed 2>/dev/null && echo hi >seed/a && git -C seed add a &&
        git -C seed commit -qm a && git -C seed push -q origin main && rm -rf seed
    mv ../origin.git origin.git
}
volatile_git_init_clone='*.git/index,*.git/logs/*'
cmd_git_init_clone=$git_date'git init -q -b main fresh && echo x >fresh/x && git -C fresh add x &&
git -C fresh commit -qm x && git clone -q origin.git copy && git -C copy log --oneline | wc -l'

setup_python_venv() {
    mkdir -p pkg/hello && printf 'def hi():\n    return "hi"\n' >pkg/hello/__init__.py
    python3 - <<'EOF'
import base64, hashlib, zipfile
files = {
    "hello/__init__.py": open("pkg/hello/__init__.py", "rb").read(),
    "hello-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: hello\nVersion: 1.0\n",
    "hello-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
rec = []
with zipfile.ZipFile("hello-1.0-py3-none-any.whl", "w") as z:
    for name, data in files.items():
        z.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data)
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rec.append(f"{name},sha256={h},{len(data)}")
    rec.append("hello-1.0.dist-info/RECORD,,")
    z.writestr(zipfile.ZipInfo("hello-1.0.dist-info/RECORD", (2024, 1, 1, 0, 0, 0)), "\n".join(rec) + "\n")
EOF
    rm -rf pkg
}
cmd_python_venv='/usr/bin/python3 -m venv --without-pip .venv && /usr/bin/python3 -m venv .venv2 &&
.venv2/bin/pip install -q --no-index --no-compile --disable-pip-version-check hello-1.0-py3-none-any.whl &&
.venv2/bin/python -c "import hello; print(hello.hi())" && rm -rf .venv2'

setup_make() {
    printf 'int main(void) { return 0; }\n' >main.c
    printf 'all: prog\nprog: main.o\n\tcc -o prog main.o\nmain.o: main.c\n\tcc -O1 -c main.c\nclean:\n\trm -f prog main.o\n' >Makefile
    make -s && touch -d '2024-01-01' main.c Makefile
}
cmd_make='make -s clean && make -s'

setup_go() {
    printf 'module example.com/w\n\ngo 1.19\n' >go.mod
    printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hi") }\n' >main.go
}
cmd_go='go build -o w . && ./w && go vet ./...'
# The build ID differs from one build to the next.
volatile_go='w'

setup_cargo() {
    mkdir -p src && printf 'fn main() { println!("hi"); }\n' >src/main.rs
    printf '[package]\nname = "w"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n' >Cargo.toml
}
cmd_cargo="RUSTUP_HOME=$rustup_home CARGO_HOME=\$HOME/.cargo cargo build --offline -q && ./target/debug/w"
# Fingerprints hold times and hashes of the moment.
volatile_cargo='target/*'

setup_busybox() { small_tree src 50; }
cmd_busybox='busybox sh -c "echo hi > out.txt; busybox cp out.txt out2.txt;
busybox rm src/d1/f1.txt; busybox mv src/d2 src/d22; busybox chmod 600 src/d3/f3.txt"'

setup_hardlinks() {
    small_tree store 100
    mkdir -p node_modules && cp -al store/. node_modules/ && ln store/d1/f1.txt twice.txt
}
cmd_hardlinks='rm -rf node_modules/d1 && mv node_modules/d2 node_modules/d9 &&
sed -i s/foo/bar/ node_modules/d3/*.txt'

# pnpm comes from the npm registry (tools/, below); its store is in HOME.
setup_pnpm() {
    printf '{"name":"w","version":"1.0.0","private":true,"dependencies":{"typescript":"4.9.5","is-number":"7.0.0"}}\n' >package.json
    pnpm install -s >/dev/null 2>&1
}
# When it last pruned, and where the store was.
volatile_pnpm='node_modules/.modules.yaml'
cmd_pnpm='rm -rf node_modules && pnpm install -s --offline --frozen-lockfile'

setup_npm_ci() {
    printf '{"name":"w","version":"1.0.0","private":true,"devDependencies":{"typescript":"4.9.5","is-number":"7.0.0"}}\n' >package.json
    npm install -q --no-audit --no-fund >/dev/null 2>&1
}
cmd_npm_ci='npm ci -q'

# ---- the runner -----------------------------------------------------------

attached=${WORKLOADS_ATTACHED:-0}
cores=() sockdirs=()
stop_cores() {
    [ ${#cores[@]} -eq 0 ] || kill "${cores[@]}" 2>/dev/null
    wait 2>/dev/null
    [ ${#sockdirs[@]} -eq 0 ] || rm -rf "${sockdirs[@]}"
    cores=() sockdirs=()
}
trap stop_cores EXIT

# `fsbroker serve` of workload $1 for its workspace $2, with its state in
# $3; waits until its admin socket answers.
start_core() {
    local sock
    sock=$(mktemp -d /tmp/fsbw.XXXXXX) || return 1
    sockdirs+=("$sock")
    "$fsb" serve --state-dir "$3" --workspace "$2" --session "$1" --socket "$sock/s" \
        >"$3.log" 2>&1 &
    cores+=($!)
    for _ in $(seq 1 100); do
        [ -S "$3/admin.sock" ] && return 0
        kill -0 "${cores[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    return 1
}

# The command $2 of workload $1 under fsbroker run in its workspace $3/ws,
# its summary into $3/summary.json.
run_under_fsbroker() {
    local name=$1 cmd=$2 d=$3
    if [ "$attached" = 1 ]; then
        mkdir -m 0700 "$root/core-$name"
        start_core "$name" "$d/ws" "$root/core-$name" || {
            cat "$root/core-$name.log"; return 125; }
        (cd "$d/ws" && timeout 1200 "$fsb" run --core "$root/core-$name" --summary-fd 3 \
            -- sh -c "$cmd" 3>"$d/summary.json")
    else
        (cd "$d/ws" && "$fsb" run --workspace "$d/ws" --state-dir "$root/state" \
            --session "$name" --summary-fd 3 -- sh -c "$cmd" 3>"$d/summary.json")
    fi
}

# The last sealed cycle of $1's session, from the run's --summary-fd JSON.
cycle_of() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cycle"])' "$1" 2>/dev/null
}

run_workload() {
    local name=$1 d=$root/$1 cmdvar=cmd_$1 volvar=volatile_$1 rc_bare rc_run t0 cycle state force
    local cmd=${!cmdvar} volatile=${!volvar:-} restored=type,content,mode,owner,mtime,links
    mkdir -p "$d/tpl"
    if ! (cd "$d/tpl" && "setup_$name") >"$d/setup.out" 2>&1; then
        not_ok "$name: setting up the template" "$d/setup.out"
        return
    fi
    cp -a "$d/tpl" "$d/orig"
    # Bare and under fsbroker run at the same path, so that what a
    # command writes of its own path (a venv's) is the same.
    cp -a "$d/tpl" "$d/ws"
    # Files take their times from the kernel's coarse clock, which lags
    # the clock `date` reads by up to a tick: a file the command makes at
    # once could look older than a `date` taken before it. The mark is a
    # file's own mtime, from the same clock as what the command makes.
    : >"$d/t0"
    t0=$(python3 -c 'import os,sys; print(os.stat(sys.argv[1]).st_mtime_ns)' "$d/t0")
    (cd "$d/ws" && sh -c "$cmd") >"$d/bare.out" 2>&1
    rc_bare=$?
    mv "$d/ws" "$d/bare"
    cp -a "$d/tpl" "$d/ws"
    run_under_fsbroker "$name" "$cmd" "$d" >"$d/run.out" 2>&1
    rc_run=$?
    state=$root/state force=
    [ "$attached" = 1 ] && state=$root/core-$name force=--force
    if [ "$rc_run" -eq "$rc_bare" ]; then
        ok "$name: exit status $rc_bare, as bare"
    else
        echo "bare exited $rc_bare, under fsbroker run $rc_run; the run said:" >"$d/why"
        cat "$d/run.out" >>"$d/why"
        not_ok "$name: exit status as bare" "$d/why"
    fi
    if "${tree[@]}" diff "$d/bare" "$d/ws" --what type,content,mode,owner,mtime,links \
        --old-before "$t0" --volatile "$volatile" >"$d/why" 2>&1; then
        ok "$name: the tree it leaves is the bare one"
    else
        not_ok "$name: the tree it leaves is the bare one" "$d/why"
    fi
    cycle=$(cycle_of "$d/summary.json")
    if [ -z "$cycle" ] || [ "$cycle" = 0 ]; then
        echo "no cycle in the summary: $(cat "$d/summary.json")" >"$d/why"
        not_ok "$name: restore" "$d/why"
        not_ok "$name: directory mtimes after restore: no cycle" "$d/why"
        [ "$name" = hardlinks ] && not_ok "$name: link groups after restore: no cycle" "$d/why"
        return
    fi
    # shellcheck disable=SC2086 # $force: nothing or one word
    if ! "$fsb" backup restore "$cycle" --state-dir "$state" --session "$name" $force \
        >"$d/restore.out" 2>&1; then
        not_ok "$name: fsbroker backup restore $cycle" "$d/restore.out"
        not_ok "$name: directory mtimes after restore: the restore failed" "$d/restore.out"
        [ "$name" = hardlinks ] && not_ok "$name: link groups after restore" "$d/restore.out"
        return
    fi
    # The hard-linked tree's link groups get a point of their own, below.
    [ "$name" = hardlinks ] && restored=type,content,mode,owner,mtime
    if "${tree[@]}" diff "$d/orig" "$d/ws" --what "$restored" >"$d/why" 2>&1; then
        ok "$name: restore gives the tree back"
    else
        not_ok "$name: restore gives the tree back" "$d/why"
    fi
    if "${tree[@]}" diff "$d/orig" "$d/ws" --what dirmtime >"$d/why" 2>&1; then
        ok "$name: restore gives the directories' mtimes back"
    else
        not_ok "$name: restore gives the directories' mtimes back" "$d/why"
    fi
    [ "$name" = hardlinks ] || return
    if "${tree[@]}" diff "$d/orig" "$d/ws" --what links >"$d/why" 2>&1; then
        ok "$name: restore gives the link groups back"
    else
        not_ok "$name: restore gives the link groups back" "$d/why"
    fi
}

all="sed_i chmod_r touch_d mv_tree rm_rf tar_x rsync_delete git git_init_clone python_venv make
go cargo busybox hardlinks npm_ci pnpm"
[ $# -gt 0 ] && all=$*
why=$(mktemp)
mkdir -p "$root/probe"
if ! "$fsb" run --workspace "$root/probe" --state-dir "$root/state" --session probe -- true \
    >"$why" 2>&1; then
    echo "1..1"
    echo "ok 1 # SKIP workloads: fsbroker run cannot sandbox here: $(head -1 "$why")"
    exit 0
fi
# pnpm is no Debian package: taken from the npm registry into the layout's
# home, which the sandbox sees wherever the checkout is (a tree under /tmp
# is hidden by the sandbox's private /tmp).
if command -v npm >/dev/null 2>&1 &&
    npm install -s --prefix "$root/home/tools" --no-audit --no-fund pnpm@9 >/dev/null 2>&1; then
    export PATH=$root/home/tools/node_modules/.bin:$PATH
fi
count=0
for w in $all; do count=$((count + 4)); [ "$w" = hardlinks ] && count=$((count + 1)); done
echo "1..$count"
for w in $all; do
    need=""
    case $w in
    rsync_delete) need=rsync ;;
    npm_ci) need=npm ;;
    pnpm) need=pnpm ;;
    busybox) need=busybox ;;
    make) need=cc ;;
    go) need=go ;;
    cargo) need=cargo ;;
    esac
    if [ -n "$need" ] && ! command -v "$need" >/dev/null 2>&1; then
        for i in 1 2 3 4; do skip "$w: $need is not installed"; done
        [ "$w" = hardlinks ] && skip "$w: $need is not installed"
        continue
    fi
    run_workload "$w"
    stop_cores
done
rm -f "$why"
