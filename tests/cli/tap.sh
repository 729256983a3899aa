# tap.sh — the TAP points the scripts of tests/cli/ print, sourced by each:
# `ok STATUS DESCRIPTION [DETAIL]` counts a point (ok when STATUS is 0, else
# not ok with DETAIL as a diagnostic, and the script's `failed` set), and
# `skip DESCRIPTION REASON` counts one skipped. The caller sets n=0 failed=0.

ok() { # CONDITION-STATUS DESCRIPTION [DETAIL]
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        [ -n "${3:-}" ] && printf '#   %s\n' "$3"
        failed=1
    fi
}

skip() { # DESCRIPTION REASON
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}
