"""Command-line arguments: the verbs, their flags, and the parse into `Arguments`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nsysgen.config.keys import suggest
from nsysgen.errors import NsysgenError, close_flags


@dataclass(frozen=True)
class Verb:
    usage: str
    summary: str  # one line of `nsysgen --help`
    text: str  # what `nsysgen VERB --help` says it does
    examples: tuple[str, ...]


# `nsysgen VERB --help` prints one of these and nothing else; `nsysgen --help` their summaries.
VERBS: dict[str, Verb] = {
    "compile": Verb(
        "nsysgen [compile] [--config-dir DIR]... [-m] [OVERRIDE ...]",
        "compile a config into files to commit (the default verb)",
        "Compile one config into OUTPUT_DIR/<job.name>/ (with -m: a sweep, one folder per\n"
        "point under OUTPUT_DIR/<sweep name>/). `nsysgen compile ...` = `nsysgen ...`.",
        (
            "nsysgen experiment=fsdp-p4de",
            "nsysgen workload=nccl cluster=p4de capture=window capture.delay=5",
            "nsysgen -m workload=fsdp capture.delay=30,60,90 capture.duration=30,60",
            "nsysgen -m workload=fsdp capture.delay+capture.duration=30:60,90:30",
            "nsysgen --config-dir ./nsys-conf cluster=ours experiment=nightly",
        ),
    ),
    "plan": Verb(
        "nsysgen plan [--json] [--expand N] [--ranks A-B] [--config-dir DIR]...\n"
        "             [-m] [OVERRIDE ...]",
        "say what a profile will do, write nothing",
        "What a profile will do: ranks and nodes that record (as ranges), report names and\n"
        "sizes, the capture window, the analysis job's estimated time, lints. Writes nothing.\n"
        "Report names are spelled out for the first 8 tasks, the first N (--expand N) or the\n"
        "recorded tasks with ids A..B (--ranks A-B). With -m, one row per sweep point. Lines\n"
        "fit the terminal (100 columns when not a terminal; COLUMNS sets it). Exit 2 on\n"
        "errors.",
        (
            "nsysgen plan cluster=p5 cluster.nodes=1000 capture.ranks=one_per_node",
            "nsysgen plan --json experiment=nemo-p5",
            "nsysgen plan -m capture.delay=5,30",
        ),
    ),
    "check": Verb(
        "nsysgen check [output_dir=DIR]",
        "prove committed output is current (exit 1 if not)",
        "Recompile every folder under DIR (default: generated) from its manifest, from any\n"
        "working directory, and exit 1 on any difference: changed, edited by hand, missing,\n"
        "orphaned files, changed training scripts, incomplete sweeps.",
        ("nsysgen check", "nsysgen check output_dir=ci/profiles"),
    ),
    "regenerate": Verb(
        "nsysgen regenerate [--force] [output_dir=DIR]",
        "rewrite every stale folder from its manifest",
        "Rewrite every folder under DIR (default: generated) that `check` finds stale, from\n"
        "its own manifest, and print what changed and why. Folders with files edited by hand\n"
        "are kept (exit 1) unless --force, which overwrites the edits.",
        ("nsysgen regenerate", "nsysgen regenerate --force output_dir=ci/profiles"),
    ),
    "show": Verb(
        "nsysgen show [--all] [--config-dir DIR]... [OVERRIDE ...]",
        "print the composed config (Hydra's --cfg job)",
        "Print the composed, resolved config as YAML, with the group choices. --all adds\n"
        "each key's type and description as comments. Writes nothing.",
        ("nsysgen show capture=steps", "nsysgen show --all cluster=p5"),
    ),
    "analyze": Verb(
        "nsysgen analyze REPORTS [--job-id ID] [--nsys NSYS] [--output DIR] [...]",
        "one report of a run: who was late, who waited, a gate",
        "One HTML report (report.html: the verdict, then the evidence), summary.json, CSVs\n"
        "and PNGs: per rank x step work and waiting, the late rank, NCCL by message size\n"
        "against the fabric, and a regression gate (--baseline).",
        (
            "nsysgen analyze /fsx/nsight-reports/fsdp-p4de",
            "nsysgen analyze reports/job1234 --nccl-tests-log slurm-1234.out",
        ),
    ),
    "verify": Verb(
        "nsysgen verify FOLDER [--reports DIR] [--job-id ID] [--json]",
        "check a run produced every promised report",
        "After a job: is every report the setup promises there, readable, and holding the\n"
        "asked capture? Exit 0 complete, 1 with a table of what is missing or wrong, 2 bad\n"
        "input.",
        ("nsysgen verify generated/fsdp-p4de", "nsysgen verify generated/fsdp-p4de --job-id 1234"),
    ),
    "completion": Verb(
        "nsysgen completion bash|zsh",
        "print a shell completion script",
        "Print a shell completion script for verbs, flags, paths, groups, options and keys.\n"
        "Install it in your shell's start-up file.",
        (
            'eval "$(nsysgen completion bash)"    # in ~/.bashrc',
            'eval "$(nsysgen completion zsh)"     # in ~/.zshrc',
        ),
    ),
}


class UsageError(NsysgenError):
    def __init__(self, message: str, verb: str = "compile") -> None:
        super().__init__(message)
        self.verb = verb

    def user_message(self) -> str:
        usage = VERBS[self.verb].usage
        return f"error: {self}\nusage: {usage}\nRun 'nsysgen {self.verb} --help' for more."


@dataclass
class Arguments:
    verb: str = "compile"
    config_dirs: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    help: bool = False
    multirun: bool = False
    json: bool = False
    all: bool = False
    expand: int | None = None
    ranks: tuple[int, int] | None = None
    force: bool = False


# Options each verb accepts, besides -h/--help.
_FLAGS = {
    "compile": {"--config-dir", "-m"},
    "plan": {"--config-dir", "-m", "--json", "--expand", "--ranks"},
    "show": {"--config-dir", "--all"},
    "check": set(),
    "regenerate": {"--force"},
}


# Hydra's own command-line flags, which nsysgen does not take, and what to use instead.
_HYDRA_FLAGS = {
    "--cfg": "nsysgen show prints the composed config (--all adds each key's type and text)",
    "-c": "nsysgen show prints the composed config (--all adds each key's type and text)",
    "--resolve": "nsysgen show prints the config resolved",
    "--info": "nsysgen --help lists the groups, options and keys; nsysgen show the config",
    "--hydra-help": "nsysgen --help lists the groups, options and keys",
    "--config-path": "nsysgen --config-dir DIR adds a folder of your own groups and options",
    "-cp": "nsysgen --config-dir DIR adds a folder of your own groups and options",
    "--config-name": "choose an experiment: nsysgen experiment=NAME (in --config-dir DIR)",
    "-cn": "choose an experiment: nsysgen experiment=NAME (in --config-dir DIR)",
}


def parse_arguments(argv: Sequence[str]) -> Arguments:
    args = Arguments()
    words = list(argv)
    if words and words[0] in VERBS:
        args.verb = words.pop(0)
    elif words and _bare(words[0]):
        raise UsageError(_unknown_verb(words[0]), args.verb)
    while words:
        _take(args, words.pop(0), words)
    return args


def _take(args: Arguments, word: str, rest: list[str]) -> None:
    """One word of the command line into `args` (a flag's value taken from `rest`)."""
    flag = {"--multirun": "-m", "-h": "--help"}.get(word, word)
    name, has_value, value = flag.partition("=")
    if flag == "--help":
        args.help = True
    elif name in ("--config-dir", "--expand", "--ranks") and name in _FLAGS[args.verb]:
        if not has_value and not rest:
            what = "a directory" if name == "--config-dir" else "a value"
            raise UsageError(f"{name} needs {what}", args.verb)
        value = value if has_value else rest.pop(0)
        if name == "--config-dir":
            args.config_dirs.append(value)
        else:
            _plan_option(args, name, value)
    elif flag in _FLAGS[args.verb] and flag in _SWITCHES:
        setattr(args, _SWITCHES[flag], True)
    elif name in _HYDRA_FLAGS:
        raise UsageError(f"{name} is Hydra's flag, not nsysgen's: {_HYDRA_FLAGS[name]}", args.verb)
    elif word.startswith("-") and not word.startswith("~"):
        known = {*_FLAGS[args.verb], "--help"}
        hint = close_flags(word, known | {"--multirun"} if "-m" in known else known)
        raise UsageError(f"{args.verb} does not take {word}{hint}", args.verb)
    elif _bare(word):
        raise UsageError(_bare_word(word), args.verb)
    else:
        args.overrides.append(word)


def _bare(word: str) -> bool:
    """A word that is neither a flag nor an override (overrides hold '=' or start with '~')."""
    return "=" not in word and not word.startswith(("-", "~", "+"))


def _unknown_verb(word: str) -> str:
    # A group's name alone (`nsysgen cluster`) wants an option, not a verb.
    from nsysgen.config.compose import GROUPS

    if word in GROUPS:
        return _bare_word(word)
    return f"{word}: not a verb{suggest(word, list(VERBS))} (allowed: {', '.join(VERBS)})"


def _bare_word(word: str) -> str:
    """What a word without '=' after the verb probably meant."""
    # Imported here: the group names live with Hydra's composition, which `analyze` and
    # `verify` (parsed before this) never load.
    from nsysgen.config.compose import GROUPS

    if word in VERBS:
        return f"{word}: the verb comes first: nsysgen {word} ..."
    if word in GROUPS:
        return f"{word}: a group takes an option, as {word}=OPTION (nsysgen --help lists them)"
    return f"{word}: not an override (allowed: group=option, key=value, +key=value, ~key)"


_SWITCHES = {"-m": "multirun", "--json": "json", "--all": "all", "--force": "force"}
_MAX_EXPAND = 1_000_000


def _plan_option(args: Arguments, name: str, value: str) -> None:
    """--expand N (1..1,000,000 names) or --ranks A-B (task ids A..B, A <= B)."""
    if name == "--expand":
        if not value.isdigit() or not 1 <= int(value) <= _MAX_EXPAND:
            raise UsageError(
                f"--expand {value!r}: not a count (allowed: 1..{_MAX_EXPAND})", args.verb
            )
        args.expand = int(value)
        return
    first, dash, last = value.partition("-")
    if not (first.isdigit() and (not dash or last.isdigit())):
        raise UsageError(
            f"--ranks {value!r}: not a range (allowed: A-B or A, e.g. 0-15)", args.verb
        )
    low, high = int(first), int(last) if dash else int(first)
    if low > high:
        raise UsageError(f"--ranks {value!r}: {low} > {high} (allowed: A <= B)", args.verb)
    args.ranks = (low, high)
