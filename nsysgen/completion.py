"""Shell completion for bash and zsh: verbs, groups and their options, keys.

The script carries the lists themselves (written when it is generated), so pressing TAB costs
no Python start-up. Options of a user's --config-dir are not known to it.
"""

from __future__ import annotations

from nsysgen.config.compose import GROUPS, Composer
from nsysgen.config.keys import catalog

VERB_WORDS = ("plan", "check", "regenerate", "show", "analyze", "verify", "completion")


def words() -> tuple[list[str], list[str]]:
    """(group=option words, key= words) to complete."""
    composer = Composer()
    choices = [f"{g}={o}" for g in GROUPS for o in composer.group_options(g)]
    keys = [f"{k.path}=" for k in catalog() if k.kind != "object"]
    return choices, keys


def _bash_function() -> str:
    choices, keys = words()
    return f"""_nsysgen_complete() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}}
  local verbs="{" ".join(VERB_WORDS)}"
  local choices="{" ".join(choices)}"
  local keys="{" ".join(keys)}"
  local flags="--help --config-dir -m --json --all --version"
  local candidates
  setopt localoptions shwordsplit 2>/dev/null  # zsh: split $candidates into words as bash does
  if [ "$COMP_CWORD" -eq 1 ]; then
    candidates="$verbs $choices $keys $flags"
  else
    case ${{COMP_WORDS[1]}} in
      check) candidates="output_dir= --help" ;;
      regenerate) candidates="output_dir= --force --help" ;;
      completion) candidates="bash zsh" ;;
      analyze) candidates="--job-id --nsys --output --nccl-tests-log --world-size --help" ;;
      verify) candidates="--reports --job-id --nsys --json --presence-only --run-folder --help" ;;
      *) candidates="$choices $keys $flags" ;;
    esac
  fi
  # Keys end with "=": no space after them. The prefix match is done here rather than by
  # compgen, whose zsh emulation (bashcompinit) does not filter -W words.
  compopt -o nospace 2>/dev/null
  local word
  COMPREPLY=()
  for word in $candidates; do
    case $word in
      "$cur"*=) COMPREPLY+=("$word") ;;
      "$cur"*) COMPREPLY+=("$word ") ;;
    esac
  done
}}
"""


def completion_script(shell: str) -> str:
    function = _bash_function()
    if shell == "bash":
        return f"{function}complete -F _nsysgen_complete nsysgen\n"
    # zsh runs the same function through its bash-completion layer.
    return (
        "autoload -U +X compinit && compinit\n"
        "autoload -U +X bashcompinit && bashcompinit\n"
        f"{function}complete -F _nsysgen_complete nsysgen\n"
    )
