"""The EKS injector's process filter: what the pod really runs, and what a pattern would match.

The injector matches a regex against the command line of every process in a labelled pod
(argv joined by spaces). torchrun is a shebang script, so the kernel's argv for it is
`<interpreter> <torchrun> ARGS`. A pattern must match that line and nothing else nearby: not a
`bash -c "torchrun ..."` wrapper (profiled twice), not torchrun's worker processes (one report
per GPU instead of one per pod).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from nsysgen.errors import Issue
from nsysgen.model import Config, ScriptSettings, settings_as
from nsysgen.targets.eks.settings import EksSettings

# The injector's regex flavour is undocumented: keep to the constructs every
# engine shares.
_UNPORTABLE = re.compile(r"\\[dDsSwWbBAZ]|\(\?|\{\d")
_SPECIAL = set(".^$*+?()[]{}|\\")


@dataclass(frozen=True)
class ProcessLines:
    torchrun: str
    wrappers: tuple[str, ...]
    worker: str


def torchrun_args(config: Config) -> list[str]:
    settings = settings_as(config.workload.settings, ScriptSettings)
    return [f"--nproc_per_node={config.cluster.gpus_per_node}", settings.script, *settings.args]


def process_lines(config: Config) -> ProcessLines:
    target = settings_as(config.target.settings, EksSettings)
    interpreter, torchrun = target.torchrun_interpreter, target.torchrun_path
    args = " ".join(torchrun_args(config))
    settings = settings_as(config.workload.settings, ScriptSettings)
    worker_args = " ".join(settings.args)
    return ProcessLines(
        torchrun=f"{interpreter} {torchrun} {args}",
        wrappers=(f"/bin/bash -c torchrun {args}", f"/bin/bash -c {torchrun} {args}"),
        worker=f"{interpreter} -u {settings.script} {worker_args}".rstrip(),
    )


def _literal(text: str) -> str:
    # Bracket special characters instead of backslash-escaping them: portable across engines.
    return "".join(f"[{c}]" if c in _SPECIAL else c for c in text)


def injection_pattern(config: Config) -> str:
    """The configured pattern, or one that matches exactly this job's torchrun process."""
    target = settings_as(config.target.settings, EksSettings)
    if target.injection_match is not None:
        return target.injection_match
    return f"^{_literal(target.torchrun_interpreter)} {_literal(target.torchrun_path)} .*$"


def injection_issues(config: Config) -> Iterator[Issue]:
    pattern = injection_pattern(config)
    # A pattern nsysgen derived is built from the torchrun paths: name what the user set.
    configured = settings_as(config.target.settings, EksSettings).injection_match is not None
    path = "target.injection_match" if configured else "target.torchrun_path"
    unportable = _UNPORTABLE.search(pattern)
    if unportable:
        yield Issue(
            path,
            f"{pattern!r} uses {unportable.group(0)!r}, which the injector's regex "
            "engine may not support (allowed: ^ $ . * + ? [] () | and literal text)",
        )
        return
    try:
        regex = re.compile(pattern)
    except re.error as error:
        yield Issue(
            path,
            f"{pattern!r} is not a valid regex ({error}) (allowed: a regex over "
            "the process command line)",
        )
        return
    lines = process_lines(config)
    if not regex.search(lines.torchrun):
        yield Issue(
            path,
            f"{pattern!r} matches nothing: the pod runs {lines.torchrun!r} "
            "(allowed: a pattern matching that line, e.g. null for the exact one)",
        )
    for wrapper in lines.wrappers:
        if regex.search(wrapper):
            yield Issue(
                path,
                f"{pattern!r} also matches a shell wrapper such as {wrapper!r}, "
                "which would be profiled too (allowed: a pattern anchored on the "
                "interpreter, e.g. null)",
            )
            break
    if regex.search(lines.worker):
        yield Issue(
            path,
            f"{pattern!r} also matches torchrun's worker processes "
            f"({lines.worker!r}): one report per GPU instead of one per pod (allowed: a "
            "pattern matching only the torchrun line, e.g. null)",
        )
