package main

// The completion scripts `withlock completion SHELL` prints and the
// packages install. Each runs `withlock __complete -- WORDS...` (the
// withlock that was typed, so ./bin/withlock completes itself) and acts on
// the first line it prints (see completion); none of them needs jq or
// anything but the shell.

var completionScripts = map[string]string{
	"bash": bashCompletion,
	"zsh":  zshCompletion,
	"fish": fishCompletion,
}

const bashCompletion = `# bash completion for withlock; from "withlock completion bash"
_withlock() {
    local cur=${COMP_WORDS[COMP_CWORD]} kind line n
    local -a out
    local IFS=$'\n'
    out=($(command "${COMP_WORDS[0]}" __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)) || return
    IFS=$' \t\n'
    kind=${out[0]}
    COMPREPLY=()
    case $kind in
    words | commands)
        for line in "${out[@]:1}"; do
            line=${line%%$'\t'*}
            if [[ $line == *[^A-Za-z0-9_./:=@%+,-]* ]]; then
                line=$(printf '%q' "$line")
            fi
            COMPREPLY+=("$line")
        done
        if [[ $kind == commands ]]; then
            COMPREPLY+=($(compgen -c -- "$cur"))
        fi
        ;;
    files) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
    dirs) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
    child*)
        n=${kind#child }
        if declare -F _command_offset >/dev/null; then
            _command_offset $((n + 1)) # bash-completion: the command's own completion
        else
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        ;;
    esac
}
complete -F _withlock withlock
`

const zshCompletion = `#compdef withlock
# zsh completion for withlock; from "withlock completion zsh"
_withlock() {
    local -a out cands
    local kind line n
    out=("${(@f)$(command ${words[1]} __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    kind=${out[1]}
    for line in "${(@)out[2,-1]}"; do
        [[ -n $line ]] || continue
        if [[ $line == *$'\t'* ]]; then
            cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
        else
            cands+=("${line//:/\\:}")
        fi
    done
    case $kind in
    words)
        (( ${#cands} )) && _describe -t values withlock cands
        ;;
    commands)
        (( ${#cands} )) && _describe -t values withlock cands
        _command_names -e
        ;;
    files) _files ;;
    dirs) _directories ;;
    child*)
        n=${kind#child }
        words=("${(@)words[n+2,-1]}")
        (( CURRENT -= n + 1 ))
        _normal
        ;;
    esac
}
if [[ $funcstack[1] == _withlock ]]; then
    _withlock "$@"
else
    compdef _withlock withlock
fi
`

const fishCompletion = `# fish completion for withlock; from "withlock completion fish"
function __withlock_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l args
    if test (count $tokens) -gt 1
        set args $tokens[2..-1]
    end
    set -l out (command $tokens[1] __complete -- $args $cur 2>/dev/null)
    or return
    set -l cands
    if test (count $out) -gt 1
        set cands $out[2..-1]
    end
    switch "$out[1]"
        case words
            printf '%s\n' $cands
        case commands
            printf '%s\n' $cands
            __fish_complete_command $cur
        case files
            __fish_complete_path $cur
        case dirs
            __fish_complete_directories $cur
        case 'child *'
            set -l n (string split ' ' -- $out[1])[2]
            set -l child $args[(math $n + 1)..-1]
            complete -C (string join ' ' -- (string escape -- $child) "$cur")
    end
end
complete -c withlock -f -a '(__withlock_complete)'
`
