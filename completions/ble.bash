# bash completion for ble. Commands and options come from the installed tool's own help
# (`ble --help`, `ble COMMAND --help`), so they follow the version installed.
_ble() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    fi
    local tool=${words[0]} command="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            -d|--device|--btsnoop|--timeout|--bond-dir) ((i++)) ;;
            -*) ;;
            *) command=${words[i]}; break ;;
        esac
    done
    case $prev in
        -d|--device)
            COMPREPLY=($(compgen -W "hci0 hci1 hci-raw:0 tcp:127.0.0.1: unix: serial:/dev/ttyUSB0 pty replay:" -- "$cur")); return ;;
        --btsnoop|-o|--out|-f|--file|--config|--ca-file|--cert-file|--key-file)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --bond-dir|--import-bluez)
            COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --io)
            COMPREPLY=($(compgen -W "display-only display-yesno keyboard-only no-io keyboard-display" -- "$cur")); return ;;
        -i|--adapter)
            COMPREPLY=($(compgen -W "hci0 hci1 hci2" -- "$cur")); return ;;
        --security)
            COMPREPLY=($(compgen -W "encrypted authenticated" -- "$cur")); return ;;
        --phy)
            COMPREPLY=($(compgen -W "1m 2m coded coded-s2 coded-s8 1m,coded" -- "$cur")); return ;;
        --own-address)
            COMPREPLY=($(compgen -W "public static rpa" -- "$cur")); return ;;
        --timeout|--duration|--count|-n|--min-rssi|--reconnect|--scan-timeout|--key|--address|--scan-response|--interval|--manufacturer|--service-data|--name)
            return ;;
    esac
    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$("$tool" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$("$tool" --help 2>/dev/null | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')" -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$("$tool" "$command" --help 2>/dev/null | grep -oE -- '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
    elif [[ $command == decode || $command == serve ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _ble ble
