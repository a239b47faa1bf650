"""Shell completion for bash and zsh: verbs, each verb's own flags, paths where a verb takes a
path, and groups, options and keys where it takes overrides.

The script carries its word lists (written when it is generated), so pressing TAB costs no
Python start-up. The groups and options of a `--config-dir DIR` on the line are the user's, not
known when the script is written: the shell lists DIR/<group>/<option>.yaml at TAB time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from nsysgen.analyze.cli import _parser as analyze_parser
from nsysgen.config.compose import GROUPS, Composer
from nsysgen.config.keys import catalog
from nsysgen.shipped import verify

# What a flag's value or a verb's bare word (one that is no flag) completes to.
DIRS, FILES, TEXT = "dirs", "files", "text"  # TEXT: nothing TAB could guess (an id, a number)
OVERRIDES, OUTPUT_DIR, SHELLS = "overrides", "output_dir", "shells"
HELP = ("-h", "--help")
# Flags whose value is a folder; other path values (type=Path) may be a file or a folder.
_DIR_FLAGS = frozenset({"--config-dir", "--output", "--reports"})
# Programs to run: paths that their parsers keep as text (they may be a bare name on PATH).
_PROGRAM_FLAGS = frozenset({"--nsys", "--importer"})
# The bare words of the verbs whose arguments nsysgen.cli parses itself (their usage lines).
_CLI_BARE = {
    "compile": OVERRIDES,
    "plan": OVERRIDES,
    "show": OVERRIDES,
    "check": OUTPUT_DIR,
    "regenerate": OUTPUT_DIR,
}
# Text that a generated word may hold: it is written between double quotes and into case patterns.
_SAFE_WORD = re.compile(r"[A-Za-z0-9_.,+=/@-]+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Verb:
    """What TAB offers after a verb: its flags, what each flag's value is (flags that take one),
    and what a bare word is (OVERRIDES, OUTPUT_DIR=..., FILES, DIRS, SHELLS)."""

    flags: tuple[str, ...]
    values: Mapping[str, str]
    bare: str


def _value_kind(flag: str, is_path: bool) -> str:
    if flag in _DIR_FLAGS:
        return DIRS
    return FILES if is_path or flag in _PROGRAM_FLAGS else TEXT


def parser_verb(parser: argparse.ArgumentParser, bare: str) -> Verb:
    """A verb parsed by argparse, from the parser's own actions: its flags never drift."""
    flags: list[str] = []
    values: dict[str, str] = {}
    for action in parser._actions:
        flags += action.option_strings
        if action.nargs != 0:  # 0: a switch (store_true, help)
            for flag in action.option_strings:
                values[flag] = _value_kind(flag, action.type is Path)
    return Verb(tuple(flags), values, bare)


def help_verb(help_text: str, bare: str) -> Verb:
    """A verb whose argparse parser is built inside its main(), from its --help: argparse writes
    each option's line as two spaces, the flags ("-h, --help", "--reports REPORTS"), then two
    spaces or the end of the line; the lines of help text under it are indented further."""
    flags: list[str] = []
    values: dict[str, str] = {}
    for line in _ANSI.sub("", help_text).splitlines():
        if not re.match(r"  -", line):
            continue
        for spelling in line.strip().split("  ")[0].split(", "):
            flag, *metavar = spelling.split()
            flags.append(flag)
            if metavar:
                values[flag] = _value_kind(flag, False)
    return Verb(tuple(flags), values, bare)


def verify_help() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        verify.main(["--help"], prog="nsysgen verify")
    return out.getvalue()


def cli_verb(verb: str, flags: Collection[str], switches: Collection[str]) -> Verb:
    """A verb that nsysgen.cli parses: its flags (from cli._FLAGS) take a value unless they are
    switches (cli._SWITCHES); --config-dir's value is a folder, --expand's and --ranks' text."""
    values = {flag: _value_kind(flag, False) for flag in flags if flag not in switches}
    return Verb((*HELP, *sorted(flags)), values, _CLI_BARE[verb])


def verbs(
    names: Iterable[str], flags: Mapping[str, Collection[str]], switches: Collection[str]
) -> dict[str, Verb]:
    """Every verb of the CLI (names: cli.VERBS; flags, switches: cli._FLAGS, cli._SWITCHES)."""
    found = {
        "analyze": parser_verb(analyze_parser(), FILES),  # REPORTS: a file or a folder
        "verify": help_verb(verify_help(), DIRS),  # FOLDER: the generated folder
        "completion": Verb(HELP, {}, SHELLS),
    }
    found |= {verb: cli_verb(verb, flags[verb], switches) for verb in flags}
    return {name: found[name] for name in names}  # a verb missing here is a KeyError: a bug


def words() -> tuple[list[str], list[str]]:
    """(group=option words, key= words) to complete."""
    composer = Composer()
    choices = [f"{g}={o}" for g in GROUPS for o in composer.group_options(g)]
    keys = [f"{k.path}=" for k in catalog() if k.kind != "object"]
    return choices, keys


def _join(items: Iterable[str], sep: str = " ") -> str:
    items = list(items)
    unsafe = [item for item in items if not _SAFE_WORD.fullmatch(item)]
    if unsafe:
        raise ValueError(f"cannot write {unsafe} into a completion script")
    return sep.join(items)


# Shell code that bash and zsh both run (the syntax they share).
_CONTEXT = r"""# What the words before the cursor ask for. These functions set the variables of
# their callers (both shells scope `local` dynamically): kind ("words", "files", "dirs" or
# empty: nothing), cands (the words to offer) and pre (the part of the word before a path:
# "output_dir=").
# $1: the word up to the cursor; then the words before it, the command left out.
_nsysgen_context() {
  if [ -n "${ZSH_VERSION-}" ]; then
    # As bash does: unquoted lists split into words, a glob that matches nothing is empty.
    setopt localoptions shwordsplit nullglob
  fi
  local cur=$1 verb=compile top=yes prev="" value="" word npos=0
  local choices="@CHOICES@"
  shift
  if [ $# -gt 0 ]; then
    top=""
    case $1 in @VERB_PATTERN@) verb=$1; shift ;; esac
  fi
  for word in "$@"; do
    if [ -n "$value" ]; then
      [ "$prev" = --config-dir ] && _nsysgen_config_dir "$word"
      value=""
    else
      case $word in
        --config-dir=*) _nsysgen_config_dir "${word#*=}" ;;
        -*=*) ;;
        -*) _nsysgen_value "$verb" "$word" ;;
        *) npos=$((npos + 1)) ;;
      esac
    fi
    prev=$word
  done
  if [ -n "$value" ]; then
    # The cursor is on the value of the flag before it.
    [ "$value" = text ] || kind=$value
    return 0
  fi
  case $cur in
    -*=*)
      _nsysgen_value "$verb" "${cur%%=*}"
      if [ "$value" = files ] || [ "$value" = dirs ]; then
        kind=$value
        pre=${cur%%=*}=
      fi ;;
    -*)
      kind=words
      _nsysgen_flags "$verb"
      if [ -n "$top" ]; then cands="$cands --version"; fi ;;
    *) _nsysgen_bare "$verb" ;;
  esac
}

# The options of a --config-dir: DIR/<group>/<option>.yaml, added to the packaged ones.
_nsysgen_config_dir() {
  local dir=$1 file group
  case $dir in \~/*) dir=$HOME/${dir#\~/} ;; esac
  # (zsh: nullglob, set by _nsysgen_context, holds here too.)
  for file in "$dir"/*/*.yaml; do
    [ -f "$file" ] || continue
    group=${file%/*}
    file=${file##*/}
    file=${group##*/}=${file%.yaml}
    case " $choices " in *" $file "*) ;; *) choices="$choices $file" ;; esac
  done
}

# $1 verb, $2 flag: sets value to what the flag's value is (empty: it takes none).
_nsysgen_value() {
  case "$1 $2" in
@VALUES@
    *) value="" ;;
  esac
}

_nsysgen_flags() {
  case $1 in
@FLAGS@
  esac
}

# A word that is no flag.
_nsysgen_bare() {
  case $1 in
@BARE@
  esac
}

# compile (with or without its verb word), plan, show: overrides; output_dir='s value is a
# folder, as after check and regenerate.
_nsysgen_overrides() {
  case $cur in
    output_dir=*) kind=dirs; pre=output_dir=; return 0 ;;
  esac
  kind=words
  cands="$choices @KEYS@"
  if [ -n "$top" ]; then cands="@VERBS@ $cands"; fi
}

# check, regenerate: output_dir=DIR.
_nsysgen_output_dir() {
  case $cur in
    output_dir=*) kind=dirs; pre=output_dir= ;;
    *) kind=words; cands="output_dir=" ;;
  esac
}

# A verb's one positional path (analyze's REPORTS, verify's FOLDER), then its flags.
_nsysgen_path() {
  if [ "$npos" -eq 0 ]; then
    kind=$1
  else
    kind=words
    _nsysgen_flags "$verb"
  fi
}
"""

_HEADER = """# nsysgen's shell completion, from `nsysgen completion %s`. The words TAB offers
# are written into it, so that TAB starts no Python.

"""

# What a bare word is, as shell code.
_BARE_CODE = {
    OVERRIDES: "_nsysgen_overrides",
    OUTPUT_DIR: "_nsysgen_output_dir",
    FILES: "_nsysgen_path files",
    DIRS: "_nsysgen_path dirs",
    SHELLS: 'if [ "$npos" -eq 0 ]; then kind=words; cands="bash zsh"; fi',
}

_BASH = r"""# bash runs this at TAB.
_nsysgen_complete() {
  local kind="" cands="" pre="" cur="" tail strip word option
  local -a line=() found=()
  # The words from COMP_LINE: COMP_WORDS is split at "=" and ":" too (COMP_WORDBREAKS).
  read -r -a line <<<"${COMP_LINE:0:COMP_POINT}"
  case ${COMP_LINE:0:COMP_POINT} in
    *[[:space:]]) ;;
    *) cur=${line[${#line[@]}-1]}; unset "line[${#line[@]}-1]" ;;
  esac
  _nsysgen_context "$cur" "${line[@]:1}"
  # readline puts a reply in place of the word's part after its last COMP_WORDBREAKS character
  # (cluster=p5: p5): each reply is cut to that part.
  tail=$cur
  case $COMP_WORDBREAKS in *=*) tail=${tail##*=} ;; esac
  case $COMP_WORDBREAKS in *:*) tail=${tail##*:} ;; esac
  strip=${cur%"$tail"}
  COMPREPLY=()
  case $kind in
    files|dirs)
      # Quote the names, a "/" after a folder.
      compopt -o filenames 2>/dev/null
      option=-f
      if [ "$kind" = dirs ]; then option=-d; fi
      # (read, not mapfile: bash 3.2, macOS's, has no mapfile.)
      while IFS= read -r word; do
        word=$pre$word
        COMPREPLY+=("${word#"$strip"}")
      done < <(compgen "$option" -- "${cur#"$pre"}") ;;
    words)
      # No space after a key=: its value follows.
      compopt -o nospace 2>/dev/null
      read -r -a found <<<"$cands"
      for word in "${found[@]}"; do
        case $word in
          "$cur"*=) COMPREPLY+=("${word#"$strip"}") ;;
          "$cur"*) COMPREPLY+=("${word#"$strip"} ") ;;
        esac
      done ;;
  esac
}
complete -F _nsysgen_complete nsysgen
"""

# zsh: a completion function of its own (compsys), which does the prefix matching and the
# quoting, and completes paths with _files.
_ZSH_HEAD = """# compinit starts zsh's completion system, where ~/.zshrc has not.
if ! (( $+functions[compdef] )); then
  autoload -Uz compinit && compinit
fi
"""
_ZSH = r"""_nsysgen() {
  local kind="" cands="" pre="" word ret=1
  local -a eq plain
  _nsysgen_context "$PREFIX" "${(@)words[2,CURRENT-1]}"
  case $kind in
    files|dirs)
      if [[ -n $pre ]]; then compset -P "${(b)pre}"; fi
      if [[ $kind == dirs ]]; then _files -/ && ret=0; else _files && ret=0; fi ;;
    words)
      for word in ${=cands}; do
        if [[ $word == *= ]]; then eq+=("$word"); else plain+=("$word"); fi
      done
      # No space after a key=: its value follows.
      compadd -S '' -- "${eq[@]}" && ret=0
      compadd -- "${plain[@]}" && ret=0 ;;
  esac
  return $ret
}
compdef _nsysgen nsysgen
"""


def _case_lines(branches: Iterable[tuple[str, str]]) -> str:
    """`case` branches, one a line: a verb and its code."""
    return "\n".join(f"    {_join([verb])}) {code} ;;" for verb, code in branches)


def _values_case(table: Mapping[str, Verb]) -> str:
    by_kind: dict[str, list[str]] = {DIRS: [], FILES: [], TEXT: []}
    for name, verb in table.items():
        for flag, kind in verb.values.items():
            by_kind[kind].append(f'"{name} {flag}"')
    return "\n".join(
        f"    {'|'.join(sorted(patterns))}) value={kind} ;;"
        for kind, patterns in by_kind.items()
        if patterns
    )


def _context(table: Mapping[str, Verb]) -> str:
    choices, keys = words()
    replacements = {
        "@CHOICES@": _join(choices),
        "@KEYS@": _join(keys),
        "@VERBS@": _join(table),
        "@VERB_PATTERN@": _join(table, "|"),
        "@VALUES@": _values_case(table),
        "@FLAGS@": _case_lines(
            (name, f'cands="{_join(verb.flags)}"') for name, verb in table.items()
        ),
        "@BARE@": _case_lines((name, _BARE_CODE[verb.bare]) for name, verb in table.items()),
    }
    code = _CONTEXT
    for placeholder, text in replacements.items():
        code = code.replace(placeholder, text)
    return code


def completion_script(
    shell: str,
    names: Iterable[str],
    flags: Mapping[str, Collection[str]],
    switches: Collection[str],
) -> str:
    """The script for `shell` (bash or zsh); names, flags, switches: cli.VERBS, cli._FLAGS,
    cli._SWITCHES."""
    context = _context(verbs(names, flags, switches))
    if shell == "bash":
        return f"{_HEADER % shell}{context}\n{_BASH}"
    return f"{_HEADER % shell}{_ZSH_HEAD}\n{context}\n{_ZSH}"
