# brokered-env.sh — put the brokered toybox's shims first on PATH.
#
#   . clients/toybox/brokered-env.sh        (bash, zsh, dash, busybox sh)
#
# After it, `cp`, `mv`, `sed`, `rm`, … found through PATH are the shims in
# build/clients/bin, which run the patched toybox (or the system's command
# when toybox cannot run the command line, see docs/clients.md). The
# broker itself is found through FSBROKER_SOCKET and the session through
# FSBROKER_SESSION_ID, as `fsbroker run` sets them; without FSBROKER_SOCKET
# the shims behave as stock toybox.
#
# The shims' directory: $FSBROKER_CLIENTS_BIN when set, else
# build/clients/bin of the checkout this file is in (found through
# BASH_SOURCE in bash, %x in zsh; a plain sh cannot tell where a sourced
# file is, so there set FSBROKER_CLIENTS_BIN, or source it from the
# checkout's top directory). Sourcing it twice does not add it twice.

if [ -z "${FSBROKER_CLIENTS_BIN:-}" ]; then
    if [ -n "${BASH_SOURCE:-}" ]; then
        _fsb_here=$(dirname -- "$BASH_SOURCE")
    elif [ -n "${ZSH_VERSION:-}" ]; then
        eval '_fsb_here=$(dirname -- "${(%):-%x}")'
    else
        _fsb_here=clients/toybox
    fi
    FSBROKER_CLIENTS_BIN=$(cd -- "$_fsb_here/../../build/clients/bin" 2>/dev/null && pwd) || {
        echo "brokered-env.sh: no build/clients/bin beside $_fsb_here (run make toybox," \
             "or set FSBROKER_CLIENTS_BIN)" >&2
        FSBROKER_CLIENTS_BIN=
    }
    unset _fsb_here
fi
if [ -n "$FSBROKER_CLIENTS_BIN" ]; then
    case ":${PATH:-}:" in
    *":$FSBROKER_CLIENTS_BIN:"*) ;;
    *) PATH="$FSBROKER_CLIENTS_BIN${PATH:+:$PATH}" ;;
    esac
    export PATH FSBROKER_CLIENTS_BIN
    hash -r 2>/dev/null || true
fi
