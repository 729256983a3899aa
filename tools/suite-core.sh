# suite-core.sh — start and stop a real `fsbroker serve` for the scripts
# that run external suites and benchmarks against the brokered clients
# (clients/toybox/run-toybox-tests.sh, clients/zsh/run-zsh-tests.sh,
# tools/bench-clients.sh). Sourced by bash (it uses a coprocess):
#
#   . tools/suite-core.sh
#   suite_core_start FSBROKER DIR PACK WORKSPACE SESSION LOG || exit 1
#   FSBROKER_SOCKET=$SUITE_CORE_SOCKET FSBROKER_SESSION_ID=SESSION cmd ...
#   suite_core_stop
#
# FSBROKER  the fsbroker binary
# DIR       a scratch directory of the caller's: the core's home (DIR/home),
#           temp dir (DIR/tmp), socket (DIR/sock/broker.sock) and state
#           directory (DIR/state, with the audit log) go there
# PACK      the rule pack to load (a file; its includes are looked up beside
#           it, then in fsbroker's lua/rules)
# WORKSPACE the session's workspace
# LOG       where the core's stderr goes
#
# suite_core_start returns once the core has said `ready` (non-zero, with
# the core's log on stderr, when it did not within 10 s). suite_core_stop
# asks it to shut down and waits for it (killing it after 5 s); it does
# nothing when no core is running, so an EXIT trap may call it.

suite_core_start() {
    local fsbroker=$1 dir=$2 pack=$3 workspace=$4 session=$5 log=$6 ready
    mkdir -p "$dir/home" "$dir/tmp"
    mkdir -m 700 "$dir/sock" || return 1
    SUITE_CORE_SOCKET=$dir/sock/broker.sock
    SUITE_CORE_AUDIT=$dir/state/audit
    coproc SUITE_CORE { HOME=$dir/home TMPDIR=$dir/tmp exec "$fsbroker" serve \
        --socket "$SUITE_CORE_SOCKET" --session "$session" --rules "$pack" \
        --workspace "$workspace" --state-dir "$dir/state" 2>"$log"; }
    # bash forgets a coprocess's pid and descriptors once it has ended.
    suite_core_pid=$SUITE_CORE_PID suite_core_in=${SUITE_CORE[1]}
    if ! read -r -t 10 ready <&"${SUITE_CORE[0]}" ||
        [ "${ready#*\"ready\"}" = "$ready" ]; then
        echo "the core did not start:" >&2
        cat "$log" >&2
        kill "$suite_core_pid" 2>/dev/null || true
        wait "$suite_core_pid" 2>/dev/null || true
        suite_core_pid=
        return 1
    fi
}

suite_core_stop() {
    local pid=${suite_core_pid:-}
    [ -n "$pid" ] || return 0
    suite_core_pid=
    # Each step may fail (the core already gone): fine under `set -e` too.
    echo '{"id":1,"command":"Shutdown"}' >&"$suite_core_in" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
