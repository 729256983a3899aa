# fsbroker.bash — bash completion for fsbroker.
#
# Nothing here lists a command, verb or option: each comes from the help
# texts of the fsbroker being completed (`fsbroker --help`, `fsbroker help
# COMMAND [VERB]`), read once per shell and kept, so the completion says
# what that binary takes. An option is taken to need a value when its help
# line names one (`--rules PACK`, `--approvals deferred|inline`). Cycle
# numbers come from `fsbroker backup list --json` with the line's own
# --state-dir, --session and --workspace; paths from the file system.
#
# Installed as share/bash-completion/completions/fsbroker (make install);
# try it from a checkout with `source completions/fsbroker.bash`.

# Keep the help text of "$@" (a command and verb) in this shell. It must
# run in the shell itself, not in a $(...) or <(...), whose variables die
# with them: _fsbroker calls it before the helpers that read the text.
_fsbroker_load()
{
    local words="$*" key
    key=_fsbroker_help_${words// /_}
    key=${key//-/_}
    if [[ -z ${!key+x} ]]; then
        printf -v "$key" '%s' "$("${_fsbroker_bin:-fsbroker}" help "$@" 2>/dev/null)"
    fi
}

# The help text of "$@", from what _fsbroker_load kept (or asked now).
_fsbroker_help()
{
    _fsbroker_load "$@"
    local words="$*" key
    key=_fsbroker_help_${words// /_}
    key=${key//-/_}
    printf '%s\n' "${!key}"
}

# The entries of list NAME (commands:, verbs:) of a help text on stdin.
_fsbroker_list()
{
    sed -n "/^$1:\$/,/^\$/s/^  \\([a-z][a-z-]*\\) .*/\\1/p"
}

# Every option the help text of "$@" names in its options.
_fsbroker_opts()
{
    _fsbroker_help "$@" | sed -n '/^options/,/^$/p' | grep -oE -- '--[a-z][a-z-]*' | sort -u
}

# The options of "$@" that take a value, each with the value's name.
_fsbroker_value_opts()
{
    _fsbroker_help "$@" | sed -nE \
        's/^  (-[a-zA-Z], )?(--[a-z][a-z-]*) ([A-Z][A-Z0-9_,.-]*|[a-z]+(\|[a-z]+)+)( .*)?$/\2 \3/p'
}

# The cycle numbers of the session the command line names.
_fsbroker_cycles()
{
    local i args=()
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case ${COMP_WORDS[i]} in
            --state-dir | --session | --workspace)
                args+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}")
                ;;
        esac
    done
    "${_fsbroker_bin:-fsbroker}" backup list --json "${args[@]}" 2>/dev/null |
        grep -oE '"cycle":[[:space:]]*[0-9]+' | grep -oE '[0-9]+$'
}

# The names of the shipped rule packs, from the Lua directory the binary
# uses (FSBROKER_LUA_DIR, or lua/ or share/fsbroker/lua beside it).
_fsbroker_packs()
{
    local bin dir
    bin=$(type -P "${_fsbroker_bin:-fsbroker}" 2>/dev/null) || return
    bin=$(readlink -f "$bin")
    for dir in "${FSBROKER_LUA_DIR:-/nonexistent}" "${bin%/*}/../lua" \
        "${bin%/*}/../share/fsbroker/lua"; do
        if [[ -d $dir/rules ]]; then
            (cd "$dir/rules" && for f in *.lua; do [[ -e $f ]] && echo "${f%.lua}"; done)
            return
        fi
    done
}

# COMPREPLY from stdin, one a line (a file name may hold spaces), or added
# to it.
_fsbroker_reply()
{
    mapfile -t COMPREPLY
}

_fsbroker_add()
{
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY
}

# COMPREPLY for the value of option $1 (named $2 in the help) of command $3.
_fsbroker_value()
{
    local opt=$1 what=$2 cur=$4
    case $opt in
        --rules)
            _fsbroker_reply < <(compgen -W "$(_fsbroker_packs)" -- "$cur")
            _fsbroker_add < <(compgen -f -- "$cur")
            ;;
        --workspace | --state-dir | --core | --to) _fsbroker_reply < <(compgen -d -- "$cur") ;;
        --socket) _fsbroker_reply < <(compgen -f -- "$cur") ;;
        --op)
            _fsbroker_reply < <(compgen -W "read write create delete rename-from rename-to mkdir
                link symlink chmod chown utimes xattr touch" -- "$cur")
            ;;
        --simulate-missing) _fsbroker_reply < <(compgen -W "userns landlock seccomp-notify" -- "$cur") ;;
        --shell) _fsbroker_reply < <(compgen -W "zsh" -- "$cur") ;;
        *)
            # A value named by its choices (deferred|inline) offers them.
            if [[ $what == *"|"* ]]; then
                _fsbroker_reply < <(compgen -W "${what//|/ }" -- "$cur")
            fi
            ;;
    esac
}

_fsbroker()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local _fsbroker_bin=${COMP_WORDS[0]}
    local cmd="" verb="" i w start=1 dashdash=0 line
    COMPREPLY=()

    # The command (and verb), and where CMD begins after run's --.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ -z $cmd ]]; then
            [[ $w != -* ]] && cmd=$w && start=$i
        elif [[ $w == -- && ($cmd == run || $cmd == shell) ]]; then
            dashdash=$i
            break
        elif [[ -z $verb && ($cmd == backup || $cmd == audit) && $w != -* ]]; then
            verb=$w
        fi
    done

    _fsbroker_load
    [[ -n $cmd ]] && _fsbroker_load "$cmd"
    [[ -n $verb ]] && _fsbroker_load "$cmd" "$verb"
    [[ $cmd == help && $COMP_CWORD -ge $((start + 2)) ]] && _fsbroker_load "${COMP_WORDS[start + 1]}"

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            _fsbroker_reply < <(compgen -W "--help --version" -- "$cur")
        else
            _fsbroker_reply < <(compgen -W "$(_fsbroker_help | _fsbroker_list commands)" -- "$cur")
        fi
        return
    fi

    # After run's --, the command line of CMD.
    if ((dashdash > 0)); then
        if declare -F _command_offset >/dev/null; then
            _command_offset $((dashdash + 1))
        else
            _fsbroker_reply < <(compgen -c -- "$cur")
        fi
        return
    fi

    if [[ $cmd == help ]]; then
        if ((COMP_CWORD == start + 1)); then
            _fsbroker_reply < <(compgen -W "$(_fsbroker_help | _fsbroker_list commands) environment" \
                -- "$cur")
        elif ((COMP_CWORD == start + 2)) &&
            [[ ${COMP_WORDS[start + 1]} == backup || ${COMP_WORDS[start + 1]} == audit ]]; then
            _fsbroker_reply < <(compgen -W "$(_fsbroker_help "${COMP_WORDS[start + 1]}" |
                _fsbroker_list verbs)" -- "$cur")
        fi
        return
    fi

    if [[ ($cmd == backup || $cmd == audit) && -z $verb ]]; then
        if [[ $cur == -* ]]; then
            _fsbroker_reply < <(compgen -W "$(_fsbroker_opts "$cmd")" -- "$cur")
        else
            _fsbroker_reply < <(compgen -W "$(_fsbroker_help "$cmd" | _fsbroker_list verbs)" -- "$cur")
        fi
        return
    fi

    local words=("$cmd")
    [[ -n $verb ]] && words+=("$verb")

    # The value of an option that takes one.
    while read -r w line; do
        if [[ -n $w && $prev == "$w" ]]; then
            _fsbroker_value "$w" "$line" "$cmd" "$cur"
            return
        fi
    done < <(_fsbroker_value_opts "${words[@]}")

    if [[ $cur == -* ]]; then
        _fsbroker_reply < <(compgen -W "$(_fsbroker_opts "${words[@]}")" -- "$cur")
        [[ $cmd == run || $cmd == shell ]] && _fsbroker_add < <(compgen -W "--" -- "$cur")
        return
    fi

    # Operands: a cycle, or paths.
    case $cmd:$verb in
        backup:show | backup:restore | backup:diff | backup:cat)
            _fsbroker_reply < <(compgen -W "$(_fsbroker_cycles)" -- "$cur")
            _fsbroker_add < <(compgen -f -- "$cur")
            ;;
        check: | delete: | audit:verify | backup:undo | backup:redo | backup:log)
            _fsbroker_reply < <(compgen -f -- "$cur")
            ;;
        run: | shell:)
            _fsbroker_reply < <(compgen -W "--" -- "$cur")
            ;;
        hooks:)
            # hooks VERB HOST: the verbs, then the hosts, each from the
            # help's list; an option's value is no operand.
            local pos=0 valopts
            valopts=" $(_fsbroker_value_opts hooks | cut -d' ' -f1 | tr '\n' ' ')"
            for ((i = start + 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                [[ $w == -* || $valopts == *" ${COMP_WORDS[i - 1]} "* ]] || pos=$((pos + 1))
            done
            case $pos in
                0) _fsbroker_reply < <(compgen -W "$(_fsbroker_help hooks | _fsbroker_list verbs)" -- "$cur") ;;
                1) _fsbroker_reply < <(compgen -W "$(_fsbroker_help hooks | _fsbroker_list hosts)" -- "$cur") ;;
            esac
            ;;
    esac
}

complete -o filenames -o bashdefault -F _fsbroker fsbroker
