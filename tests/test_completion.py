"""Shell completion, pressed for real: the generated script is loaded into an interactive bash
or zsh on a terminal, a line is typed, then TAB. What the script offered is caught where the
shell hands it over (bash: COMPREPLY of the function `complete -p nsysgen` names; zsh: every
compadd call), and what the one TAB left on the line is read back from the line editor."""

from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from nsysgen.analyze.cli import _parser as analyze_parser
from nsysgen.cli import _FLAGS, _SWITCHES, VERBS
from nsysgen.completion import completion_script, verify_help
from nsysgen.config.compose import Composer
from tests.conftest import RunCli

SHELLS = ["bash", "zsh"]

# bash: the script's own registration, with a spy in its function's place that keeps its
# replies; a key that writes the line as it stands.
_BASH_RC = r"""PS1='tab-test> '
source @SCRIPT@
spec=$(complete -p nsysgen)
function=${spec##*-F }
function=${function%% *}
_tab_test_spy() { "$function" "$@"; printf '%s\n' "${COMPREPLY[@]}" > @REPLIES@; }
eval "${spec/-F $function /-F _tab_test_spy }"
bind -x '"\C-xl": printf "%s" "$READLINE_LINE" > @LINE@.part && mv @LINE@.part @LINE@'
"""

# zsh: compinit as a ~/.zshrc starts it, then the script; every match of every compadd call is
# kept, whole (with the prefixes compadd puts before it on the line).
_ZSH_RC = r"""PS1='tab-test> '
bindkey -e
autoload -Uz compinit && compinit -u -D
source @SCRIPT@
compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
    builtin compadd "$@"
    return
  fi
  local -a hits
  local hit before="" i
  for (( i = 1; i <= $#; i++ )); do
    case ${@[i]} in
      --) break ;;
      -[pP]) before+=${@[i+1]}; (( i++ )) ;;
      -[pP]*) before+=${@[i]#-?} ;;
    esac
  done
  builtin compadd -O hits "$@"
  for hit in "${hits[@]}"; do print -r -- "$IPREFIX$before$hit" >> @REPLIES@; done
  builtin compadd "$@"
}
_tab_test_line() { print -rn -- "$BUFFER" > @LINE@.part && mv @LINE@.part @LINE@; }
zle -N _tab_test_line
bindkey '^Xl' _tab_test_line
"""


@dataclass(frozen=True)
class Tab:
    offered: set[str]  # every candidate, as the whole word (no "/" or space after it)
    line: str  # the line after one TAB


@dataclass(frozen=True)
class Terminal:
    shell: str
    script: Path
    cwd: Path  # where the line is typed: the paths it completes
    home: Path
    room: Path  # the harness's own files

    def tab(self, line: str) -> Tab:
        replies, after = self.room / "replies", self.room / "line"
        for old in (replies, after):
            old.unlink(missing_ok=True)
        self._start_and_type(line, after)
        text = replies.read_text() if replies.exists() else ""
        offered = {_whole_word(self.shell, line, r) for r in text.splitlines() if r}
        return Tab(offered, after.read_text())

    def _start_and_type(self, line: str, after: Path) -> None:
        rc = (_BASH_RC if self.shell == "bash" else _ZSH_RC).replace(
            "@SCRIPT@", shlex.quote(str(self.script))
        )
        for name in ("REPLIES", "LINE"):
            rc = rc.replace(f"@{name}@", shlex.quote(str(self.room / name.lower())))
        (self.room / ("bashrc" if self.shell == "bash" else ".zshrc")).write_text(rc)
        command = {
            "bash": ["bash", "--noprofile", "--rcfile", str(self.room / "bashrc"), "-i"],
            "zsh": ["zsh", "-d", "-i"],  # -d: no /etc/zsh rc files, $ZDOTDIR/.zshrc only
        }[self.shell]
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home),
            "ZDOTDIR": str(self.room),
            "INPUTRC": "/dev/null",
            "TERM": "xterm",
            "LC_ALL": "C.UTF-8",
        }
        master, slave = os.openpty()
        proc = subprocess.Popen(
            command,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=self.cwd,
            env=env,
            start_new_session=True,  # its own session: no job control reaches this process
        )
        os.close(slave)
        try:
            screen = _read_until(master, lambda seen: b"tab-test> " in seen)
            os.write(master, f"{line}\t\x18l".encode())
            screen += _read_until(master, lambda _: after.exists())
        finally:
            proc.kill()
            proc.wait()
            os.close(master)
        assert after.exists(), f"{self.shell} did not complete {line!r}:\n{screen.decode()}"


def _read_until(master: int, done: Callable[[bytes], bool], timeout: float = 30) -> bytes:
    """The terminal's output until done(output) (the shell blocks if nobody reads it)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while not done(seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:  # the shell is gone
                break
    return seen


def _whole_word(shell: str, line: str, reply: str) -> str:
    """A reply as the whole word. bash's replies stand for the part of the word after its last
    "=" or ":" (readline's word breaks); zsh's are whole words already."""
    reply = reply.rstrip(" /")
    if shell == "zsh":
        return reply
    word = "" if line.endswith(" ") else line.split(" ")[-1]
    part = re.split(r"[=:]", word)[-1]
    return word[: len(word) - len(part)] + reply


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("completion")
    found = {}
    for shell in SHELLS:
        found[shell] = folder / f"nsysgen.{shell}"
        found[shell].write_text(completion_script(shell, VERBS, _FLAGS, _SWITCHES))
    return found


# bash in the fast tier, zsh (slower to start under a pseudo-terminal) in the slow one.
@pytest.fixture(params=["bash", pytest.param("zsh", marks=pytest.mark.slow)])
def term(request: pytest.FixtureRequest, scripts: dict[str, Path], tmp_path: Path) -> Terminal:
    shell: str = request.param
    if shutil.which(shell) is None:
        pytest.fail(f"{shell} missing: run tests/infra/install-system-deps.sh")
    work, home, room = tmp_path / "work", tmp_path / "home", tmp_path / "room"
    for folder in (work / "reports" / "job7", work / "generated", home, room):
        folder.mkdir(parents=True)
    (work / "nccl.log").write_text("# nccl-tests\n")
    (work / "notes.txt").write_text("")
    return Terminal(shell, scripts[shell], work, home, room)


def _config_dir(root: Path) -> Path:
    """A user's --config-dir: an option of a packaged group, and a group nsysgen lacks."""
    for relative in ("cluster/mine.yaml", "experiment/x.yaml", "mygroup/a.yaml", "mygroup/b.yaml"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("{}\n")
    (root / "mygroup" / "README.md").write_text("not an option\n")
    return root


def _entries(folder: Path, dirs_only: bool = False) -> set[str]:
    return {p.name for p in folder.iterdir() if p.is_dir() or not dirs_only}


def test_verbs(term: Terminal) -> None:
    assert set(VERBS) <= term.tab("nsysgen ").offered
    assert term.tab("nsysgen reg").line == "nsysgen regenerate "
    assert term.tab("nsysgen completion z").line == "nsysgen completion zsh "
    assert term.tab("nsysgen regenerate --f").line == "nsysgen regenerate --force "
    assert term.tab("nsysgen analyze --job").line == "nsysgen analyze --job-id "


def test_verify_offers_folders_not_overrides(term: Terminal) -> None:
    assert term.tab("nsysgen verify ").offered == _entries(term.cwd, dirs_only=True)
    assert term.tab("nsysgen verify re").line == "nsysgen verify reports/"
    assert term.tab("nsysgen verify generated --reports re").line.endswith(" --reports reports/")
    # Its flags are read from its --help's options: exactly those of its usage line.
    flags = term.tab("nsysgen verify --").offered
    assert {"--help", "--reports", "--job-id", "--json", "--presence-only"} <= flags
    assert flags == {"--help", *re.findall(r"--[a-z-]+", verify_help().split("\n\n")[0])}
    assert term.tab("nsysgen verify --nsys ").offered == _entries(term.cwd)


def test_analyze_offers_exactly_its_parsers_flags(term: Terminal) -> None:
    flags = {f for action in analyze_parser()._actions for f in action.option_strings}
    assert term.tab("nsysgen analyze -").offered == flags
    assert term.tab("nsysgen analyze reports --").offered == {f for f in flags if f[1] == "-"}


def test_plan_offers_only_its_own_flags(term: Terminal) -> None:
    expected = {"--help", *(f for f in _FLAGS["plan"] if f.startswith("--"))}
    assert term.tab("nsysgen plan --").offered == expected
    assert term.tab("nsysgen plan --ex").line == "nsysgen plan --expand "
    # Before any verb: compile's flags and --version, not plan's.
    assert term.tab("nsysgen --").offered == {"--help", "--config-dir", "--version"}


def test_analyze_completes_paths(term: Terminal) -> None:
    assert term.tab("nsysgen analyze --nccl-tests-log ").offered == _entries(term.cwd)
    assert term.tab("nsysgen analyze --nccl-tests-log nc").line.endswith(" nccl.log ")
    assert term.tab("nsysgen analyze ").offered == _entries(term.cwd)  # REPORTS
    assert term.tab("nsysgen analyze reports/").offered == {"reports/job7"}
    assert term.tab("nsysgen analyze r --output ").offered == _entries(term.cwd, dirs_only=True)
    assert term.tab("nsysgen analyze r --output=re").line.endswith(" --output=reports/")
    assert term.tab("nsysgen analyze r --job-id ").offered == set()  # an id: nothing to guess


def test_overrides_offer_packaged_options_and_keys(term: Terminal) -> None:
    clusters = {f"cluster={o}" for o in Composer().group_options("cluster")}
    assert term.tab("nsysgen cluster=").offered == clusters
    p5 = {c for c in clusters if c.startswith("cluster=p5")}
    assert len(p5) > 1 and term.tab("nsysgen show cluster=p5").offered == p5
    assert term.tab("nsysgen plan capture.dela").line == "nsysgen plan capture.delay="
    assert term.tab("nsysgen plan workload=fs").line == "nsysgen plan workload=fsdp "
    assert term.tab("nsysgen check cluster=").offered == set()  # check takes no overrides


def test_config_dir_groups_and_options(term: Terminal) -> None:
    _config_dir(term.cwd / "my-conf")
    _config_dir(term.home / "conf")
    packaged = {f"cluster={o}" for o in Composer().group_options("cluster")}
    assert term.tab("nsysgen --config-dir my-conf cluster=").offered == packaged | {"cluster=mine"}
    assert term.tab("nsysgen --config-dir my-conf experiment=x").offered == {"experiment=x"}
    mine = {"mygroup=a", "mygroup=b"}
    assert term.tab("nsysgen plan --config-dir my-conf mygr").offered == mine
    assert term.tab("nsysgen show --config-dir=my-conf -m mygroup=").offered == mine
    assert term.tab("nsysgen plan --config-dir ~/conf mygroup=").offered == mine
    assert term.tab("nsysgen plan mygr").offered == set()  # without the folder: no such group
    assert term.tab("nsysgen plan --config-dir my-").line == "nsysgen plan --config-dir my-conf/"


def test_check_and_regenerate_complete_the_output_dir(term: Terminal) -> None:
    assert term.tab("nsysgen check ").offered == {"output_dir="}
    folders = {f"output_dir={d}" for d in _entries(term.cwd, dirs_only=True)}
    assert term.tab("nsysgen check output_dir=").offered == folders
    assert term.tab("nsysgen regenerate --force output_dir=ge").line == (
        "nsysgen regenerate --force output_dir=generated/"
    )


def test_overrides_complete_the_output_dir_as_a_folder(term: Terminal) -> None:
    """Compile without its verb word, and the verbs that take overrides: output_dir='s value is
    a folder, as after check."""
    folders = {f"output_dir={d}" for d in _entries(term.cwd, dirs_only=True)}
    assert term.tab("nsysgen output_dir=").offered == folders
    assert term.tab("nsysgen compile output_dir=").offered == folders
    assert term.tab("nsysgen plan cluster=p5 output_dir=").offered == folders
    assert term.tab("nsysgen --config-dir my-conf output_dir=").offered == folders
    assert term.tab("nsysgen experiment=nemo-p5 output_dir=ge").line == (
        "nsysgen experiment=nemo-p5 output_dir=generated/"
    )
    assert "output_dir=" in term.tab("nsysgen out").offered  # the key itself, before its value


def test_the_bash_script_is_shellcheck_clean_and_deterministic(scripts: dict[str, Path]) -> None:
    if shutil.which("shellcheck") is None:
        pytest.fail("shellcheck missing: run tests/infra/install-system-deps.sh")
    proc = subprocess.run(
        ["shellcheck", "-s", "bash", str(scripts["bash"])],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout
    assert scripts["bash"].read_text() == completion_script("bash", VERBS, _FLAGS, _SWITCHES)


def test_the_cli_prints_the_script(run_cli: RunCli, scripts: dict[str, Path]) -> None:
    for shell in SHELLS:
        assert run_cli("completion", shell).out == scripts[shell].read_text()
