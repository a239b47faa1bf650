"""`nsysgen --help` and `nsysgen VERB --help`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsysgen import __version__
from nsysgen.cli.args import VERBS
from nsysgen.textwidth import wrap

if TYPE_CHECKING:
    from nsysgen.config.compose import Composer

HELP_WIDTH = 80


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
