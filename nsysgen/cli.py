"""Command line: parse arguments, run a verb, map errors to exit codes. No logic here."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysgen import __version__
from nsysgen.errors import (
    EXIT_BUG,
    EXIT_DRIFT,
    EXIT_INVALID,
    EXIT_OK,
    NsysgenError,
    close_flags,
)
from nsysgen.textwidth import wrap

HELP_WIDTH = 80

# The verbs' modules are imported by the verb that needs them: `nsysgen analyze` and `verify`
# start without Hydra, Jinja and the schemas (about 0.6 s of imports).
if TYPE_CHECKING:
    from nsysgen.build import FolderResult, SweepResult
    from nsysgen.config.compose import Composer


def __getattr__(name: str) -> Any:
    """`nsysgen.cli.Composer` on first use (PEP 562); tests stand a shared one in for it."""
    if name == "Composer":
        from nsysgen.config.compose import Composer

        return Composer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        "turn a run's reports into figures, stragglers, a gate",
        "NCCL collectives in nsys reports: kernel time per call and by message size (CSV,\n"
        "PNG); per rank x step GPU figures, stragglers and a regression gate.",
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
    from nsysgen.config.keys import suggest

    return f"{word}: not a verb{suggest(word, list(VERBS))} (allowed: {', '.join(VERBS)})"


def _bare_word(word: str) -> str:
    """What a word without '=' after the verb probably meant."""
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


def verb_help(verb: str) -> str:
    """`nsysgen VERB --help`: usage, what it does, examples."""
    entry = VERBS[verb]
    text = "\n".join(wrap(" ".join(entry.text.split()), HELP_WIDTH))
    examples = "\n".join(f"  {example}" for example in entry.examples)
    return f"usage: {entry.usage}\n\n{text}\n\nexamples:\n{examples}"


def help_text(composer: Composer) -> str:
    from nsysgen.config.compose import GROUPS
    from nsysgen.config.keys import catalog

    defaults = composer.compose([]).choices
    lines = [
        f"nsysgen {__version__}: compile Nsight Systems profiling setups for distributed training.",
        "",
        "usage: nsysgen [VERB] [OPTIONS] [OVERRIDE ...]  (nsysgen VERB --help: one verb)",
        "",
        "Verbs:",
    ]
    for verb, entry in VERBS.items():
        lines.append(f"  {verb:<11} {entry.summary}")
    lines += [
        "",
        "Overrides use Hydra's grammar: group=option, key=value, +key=value (a new key),",
        "~key (delete). Quote list items that hold '=': key='[\"--lr=1e-4\"]'.",
        "",
        "Config groups (* = default):",
    ]
    for group in GROUPS:
        options = [
            f"{option}*" if defaults.get(group) == option else option
            for option in composer.group_options(group)
        ]
        lines += wrap(", ".join(options), HELP_WIDTH, f"  {group + ':':<11} ", " " * 14)
    lines += ["", "Keys (nsysgen show --all prints every value):"]
    for key in catalog():
        if key.kind == "object" and key.path.count(".") < 1:
            continue
        text = key.description or key.kind
        lines += wrap(text, HELP_WIDTH, f"  {key.path:<34} ", " " * 37)
    lines += [
        "",
        "Examples:",
        "  nsysgen experiment=fsdp-p4de",
        "  nsysgen workload=nccl cluster=p4de capture=window capture.delay=5",
        "  nsysgen -m workload=fsdp capture.delay=30,60,90 capture.duration=30,60",
        "  nsysgen -m workload=fsdp capture.delay+capture.duration=30:60,90:30",
        "  nsysgen plan cluster=p5 cluster.nodes=1000 capture.ranks=one_per_node",
        "  nsysgen show capture=steps",
        "  nsysgen check",
        "  nsysgen regenerate",
        "",
        "Exit codes: 0 ok, 1 check found differences, 2 invalid input, 3 nsysgen's bug.",
    ]
    return "\n".join(lines)


def _sweep_summary(sweep: SweepResult) -> str:
    kinds = {"new": 0, "changed": 0, "unchanged": 0}
    files: dict[str, int] = {}
    for result in sweep.folders:
        statuses = {s.status for s in result.statuses}
        if statuses <= {"created"}:
            kinds["new"] += 1
        elif statuses <= {"identical", "kept"}:
            kinds["unchanged"] += 1
        else:
            kinds["changed"] += 1
        for status in result.statuses:
            files[status.status] = files.get(status.status, 0) + 1
    points = ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n)
    line = f"{sweep.root}: sweep of {sweep.points} points ({points})"
    if sweep.removed:
        line += f"; removed {len(sweep.removed)} point(s) no longer in the sweep"
    return f"{line}; files: {_file_counts(files)}"


def _file_counts(counts: dict[str, int]) -> str:
    order = ("created", "updated", "removed", "kept", "identical")
    names = {"identical": "unchanged", "kept": "kept (edited by hand)"}
    return ", ".join(f"{counts[s]} {names.get(s, s)}" for s in order if counts.get(s))


def _output_dir(args: Arguments) -> Path:
    output_dir = Path("generated")
    for word in args.overrides:
        if not word.startswith("output_dir="):
            raise UsageError(f"{args.verb} takes only output_dir=DIR, not {word}", args.verb)
        output_dir = Path(word.split("=", 1)[1])
    return output_dir


def run_check(args: Arguments) -> int:
    from nsysgen.check import check_output, render_report

    output_dir = _output_dir(args)
    report = check_output(output_dir)
    print(render_report(report, output_dir))
    return EXIT_DRIFT if report.findings else EXIT_OK


def run_regenerate(args: Arguments) -> int:
    from nsysgen.regenerate import regenerate_output, render

    output_dir = _output_dir(args)
    report = regenerate_output(output_dir, args.force)
    print(render(report, output_dir))
    return EXIT_DRIFT if report.kept or report.failed else EXIT_OK


def run_plan(args: Arguments, composer: Composer) -> int:
    from nsysgen.build import name_points
    from nsysgen.pipeline import build_config
    from nsysgen.plan_report import Expand, as_json, as_table, sweep_table
    from nsysgen.textwidth import output_width

    if args.multirun:
        _, points = name_points(composer, args.overrides)
        rows = []
        for point in points:
            composed = composer.compose(point.overrides, values={"job.name": point.job_name})
            rows.append((point.name, *build_config(composed, stop_on_lint_errors=False)))
        if args.json:
            data = {row[0]: json.loads(as_json(*row[1:])) for row in rows}
            print(json.dumps(data, indent=2))
        else:
            print(sweep_table(rows, output_width()))
        errors = any(f.severity == "error" for *_, findings in rows for f in findings)
        return EXIT_INVALID if errors else EXIT_OK
    config, plan, findings = build_config(
        composer.compose(args.overrides), stop_on_lint_errors=False
    )
    if args.ranks is not None:
        expand = Expand(args.expand or _MAX_EXPAND, *args.ranks)
    else:
        expand = Expand(args.expand) if args.expand else Expand()
    if args.json:
        print(as_json(config, plan, findings, expand))
    else:
        print(as_table(config, plan, findings, expand, output_width()))
    return EXIT_INVALID if any(f.severity == "error" for f in findings) else EXIT_OK


def print_warnings(results: list[FolderResult]) -> None:
    seen = set()
    for result in results:
        for warning in result.warnings:
            line = (
                f"warning: {warning.path}: [{warning.lint}] {warning.message} (fix: {warning.fix})"
            )
            if line not in seen:
                seen.add(line)
                print(line, file=sys.stderr)


def run_completion(argv: Sequence[str]) -> int:
    if len(argv) == 1 and argv[0] in ("bash", "zsh"):
        from nsysgen.completion import completion_script

        print(completion_script(argv[0], VERBS, _FLAGS, _SWITCHES), end="")
        return EXIT_OK
    if len(argv) == 1 and argv[0] in ("-h", "--help"):
        print(verb_help("completion"))
        return EXIT_OK
    hint = close_flags(argv[0], ["--help"]) if len(argv) == 1 else ""
    raise UsageError(f"completion takes one shell: bash or zsh{hint}", "completion")


def run_compile(args: Arguments, composer: Composer) -> int:
    from nsysgen.build import build_single, build_sweep

    if args.multirun:
        sweep = build_sweep(composer, args.overrides, args.config_dirs)
        print_warnings(sweep.folders)
        print(_sweep_summary(sweep))
        return EXIT_OK
    result = build_single(composer, args.overrides, args.config_dirs)
    print_warnings([result])
    counts: dict[str, int] = {}
    for status in result.statuses:
        counts[status.status] = counts.get(status.status, 0) + 1
    summary = _file_counts(counts) if set(counts) - {"identical"} else "unchanged"
    for what, how in result.steps:  # how the steps are found, before the run
        print(f"{what}: {how}")
    if result.records:
        print(f"a run records: {result.records}")
    print(f"{result.folder}: {len(result.statuses)} files ({summary})")
    for line in result.notes:
        print(line)
    return EXIT_OK


def run_show(args: Arguments, composer: Composer) -> int:
    from nsysgen.show import show_config

    print(show_config(composer.compose(args.overrides), with_keys=args.all), end="")
    return EXIT_OK


def run(argv: Sequence[str]) -> int:
    first = argv[0] if argv else ""
    if first in ("--version", "-V"):
        print(f"nsysgen {__version__}")
        return EXIT_OK
    if first == "analyze":
        from nsysgen.analyze.cli import run_analyze

        return run_analyze(argv[1:])
    if first == "verify":
        from nsysgen.verify_cli import run_verify

        return run_verify(argv[1:])
    if first == "completion":
        return run_completion(argv[1:])
    args = parse_arguments(argv)
    if args.help and (args.verb != "compile" or first == "compile"):
        print(verb_help(args.verb))
        return EXIT_OK
    if args.verb == "check":
        return run_check(args)
    if args.verb == "regenerate":
        return run_regenerate(args)
    # Looked up on the module, where tests may have stood another Composer in.
    composer_class: type[Composer] = sys.modules[__name__].Composer
    composer = composer_class([Path(d) for d in args.config_dirs])
    if args.help:
        print(help_text(composer))
        return EXIT_OK
    verbs = {"plan": run_plan, "show": run_show, "compile": run_compile}
    return verbs[args.verb](args, composer)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except NsysgenError as exc:
        print(exc.user_message(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`nsysgen plan | head -1`): not an error of nsysgen's. Point
        # stdout at /dev/null so that the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception:  # noqa: BLE001 - anything else is a bug in nsysgen, reported as such
        if os.environ.get("NSYSGEN_DEBUG"):
            traceback.print_exc()
        else:
            exc_type, exc_value = sys.exc_info()[:2]
            name = exc_type.__name__ if exc_type else "Exception"
            print(
                f"nsysgen: internal error ({name}: {exc_value}). This is a bug in nsysgen;"
                " rerun with NSYSGEN_DEBUG=1 for the traceback and report it.",
                file=sys.stderr,
            )
        return EXIT_BUG
    return EXIT_INVALID  # pragma: no cover
