# bash completion for boxgate. Installed as
# PREFIX/share/bash-completion/completions/boxgate; or source it from ~/.bashrc.
# The words come from `boxgate __complete`, which reads the same command and
# option tables as boxgate's parser and the configuration boxgate would load,
# so this file keeps no list of commands, options or boxes of its own.
# shellcheck shell=bash

# _boxgate_words WHAT...: what `boxgate __complete WHAT...` prints, one word a
# line, under the --config the line being completed names (else boxgate's own
# search, $BOXGATE_CONFIG included).
_boxgate_words() {
  local i cfg=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --) break ;;
      --config)
        # bash splits --config=FILE at the '=' (COMP_WORDBREAKS)
        [ "${COMP_WORDS[i + 1]}" = = ] && i=$((i + 1))
        cfg=(--config "${COMP_WORDS[i + 1]}") ;;
      --config=*) cfg=(--config "${COMP_WORDS[i]#--config=}") ;;
    esac
  done
  "${COMP_WORDS[0]}" "${cfg[@]}" __complete "$@" 2>/dev/null
}

# _boxgate_add PREFIX WORD...: PREFIX+WORD for each WORD that starts with $item.
_boxgate_add() {
  local prefix=$1 w
  shift
  for w in "$@"; do
    [[ $w == "$item"* ]] && COMPREPLY+=("$prefix$w")
  done
}

# _boxgate_offer WHAT...: the words of `__complete WHAT...` that start with $cur.
_boxgate_offer() {
  local -a words
  local item=$cur
  mapfile -t words < <(_boxgate_words "$@")
  _boxgate_add "" "${words[@]}"
}

# A box selection is a list of names, node sets and @pools joined by ',' (and
# clush's '!', '&' and '^'): the last item is completed, the text before it kept.
_boxgate_selection() {
  local text=$cur head item
  head=${text%"${text##*[,!&^]}"}
  item=${text#"$head"}
  local -a words
  if [[ $item == @* ]]; then
    mapfile -t words < <(_boxgate_words pools)
    item=${item#@}
    head=$head@
  else
    mapfile -t words < <(_boxgate_words boxes)
  fi
  _boxgate_add "$head" "${words[@]}"
  # a node set is still being typed: no space after it
  compopt -o nospace 2>/dev/null
  [ "${#COMPREPLY[@]}" = 1 ] && compopt +o nospace 2>/dev/null
  return 0
}

_boxgate_files() {
  local f
  while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen -f -- "$cur")
  compopt -o filenames 2>/dev/null
  return 0
}

# _boxgate_box CMD NCMD UPTO: the box a run, explain or validate line names: the
# --boxes/-w value, else its first operand (the values of valued options skipped).
_boxgate_box() {
  local i w v box="" skip
  local -a valued
  mapfile -t valued < <(_boxgate_words valued "$1")
  for ((i = $2 + 1; i < $3; i++)); do
    w=${COMP_WORDS[i]}
    case $w in
      --) break ;;
      --boxes | -w) box=${COMP_WORDS[i + 1]}; i=$((i + 1)) ;;
      --boxes=*) box=${w#--boxes=} ;;
      --*=*) ;;
      -*) skip=""; for v in "${valued[@]}"; do [ "$w" = "$v" ] && skip=1; done
        [ -n "$skip" ] && i=$((i + 1)) ;;
      *) [ -z "$box" ] && box=$w ;;
    esac
  done
  printf '%s' "$box"
}

_boxgate() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local i w cmd="" ncmd=0 selected="" item
  COMPREPLY=()
  # bash splits --flag=VALUE at the '=' (COMP_WORDBREAKS): complete VALUE as
  # the value of --flag.
  if [ "$cur" = = ]; then
    cur="" prev=${COMP_WORDS[COMP_CWORD - 1]}
  elif [ "$prev" = = ] && [ "$COMP_CWORD" -ge 2 ]; then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  fi
  # The command is the first word that is neither a global option nor its value.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [ -z "$cmd" ]; then
      case $w in
        --config) # and its value, after the '=' bash splits off
          [ "${COMP_WORDS[i + 1]}" = = ] && i=$((i + 1))
          i=$((i + 1)) ;;
        -*) ;;
        *) cmd=$w ncmd=$i ;;
      esac
      continue
    fi
    case $w in
      # gate arguments and exec's command are not boxgate's; a gate's
      # flags are the box's allowlist
      --)
        case $cmd in
          run | explain | validate)
            if [[ $cur == -* ]]; then _boxgate_offer allow "$(_boxgate_box "$cmd" "$ncmd" "$i")"; return; fi ;;
        esac
        _boxgate_files; return ;;
      --boxes | -w | --pool | --all | --boxes=* | --pool=*) selected=yes ;;
    esac
  done

  case $prev in
    --boxes | -w | --exclude | -x) _boxgate_selection; return ;;
    --pool) _boxgate_offer pools; return ;;
    --config) _boxgate_files; return ;;
    --gpu) [ -n "$cmd" ] && { _boxgate_offer gpus "$(_boxgate_box "$cmd" "$ncmd" "$COMP_CWORD")"; return; } ;;
    # a selector's keys (results, report)
    --select | --before | --after)
      item=$cur
      _boxgate_add "" run= campaign= candidate= kind= shape= num-workers= box= device= \
        verdict= since= until= variant=
      compopt -o nospace 2>/dev/null
      return ;;
    --by) item=$cur; _boxgate_add "" point; return ;;
    --pair) item=$cur; _boxgate_add "" variant candidate device kind shape num-workers; return ;;
  esac

  if [ -z "$cmd" ]; then
    if [[ $cur == -* ]]; then
      item=$cur
      _boxgate_add "" --config --help --version -h -V
    else
      _boxgate_offer commands
    fi
    return
  fi

  # An option that takes a value (as the parser's table says) takes the next word.
  local -a valued
  mapfile -t valued < <(_boxgate_words valued "$cmd")
  for w in "${valued[@]}"; do
    [ "$prev" = "$w" ] && { _boxgate_files; return; }
  done
  if [[ $cur == -* ]]; then
    _boxgate_offer options "$cmd"
    item=$cur
    # what every command takes besides its table
    _boxgate_add "" --config --help -h
    return
  fi

  # How many operands come before this word.
  local nth=0 v
  for ((i = ncmd + 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    case $w in
      --*=*) ;;
      # --flag=VALUE as bash splits it: VALUE is no operand
      -*) if [ "${COMP_WORDS[i + 1]}" = = ]; then i=$((i + 2)); else
        [ "$w" = --config ] && i=$((i + 1))
        for v in "${valued[@]}"; do [ "$w" = "$v" ] && i=$((i + 1)); done
      fi ;;
      *) nth=$((nth + 1)) ;;
    esac
  done
  case $cmd in
    help) [ "$nth" = 0 ] && _boxgate_offer commands ;;
    config) item=$cur; [ "$nth" = 0 ] && _boxgate_add "" check ;;
    results) item=$cur; [ "$nth" = 0 ] && _boxgate_add "" show export compare; _boxgate_files ;;
    campaign)
      item=$cur
      if [ "$nth" = 0 ]; then _boxgate_add "" status logs cancel list; _boxgate_files
      elif [ "$nth" = 1 ]; then
        # a detached campaign's name: its state file's
        local f d=${XDG_STATE_HOME:-$HOME/.local/state}/boxgate/campaigns
        for f in "$d"/*.json; do [ -f "$f" ] && _boxgate_add "" "$(basename "$f" .json)"; done
      fi ;;
    slots)
      item=$cur; [ "$nth" = 0 ] && _boxgate_add "" disable enable
      [ -z "$selected" ] && _boxgate_selection ;;
    run | validate | explain | bootstrap)
      [ "$nth" = 0 ] && [ -z "$selected" ] && _boxgate_selection ;;
    check | disconnect) _boxgate_selection ;;
    rollback)
      if [ "$nth" = 0 ] && [ -z "$selected" ]; then _boxgate_selection; else _boxgate_files; fi ;;
    *) _boxgate_files ;;
  esac
  return 0
}

complete -F _boxgate boxgate
