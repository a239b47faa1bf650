"""The compile pipeline, in order: validate -> model -> plan -> render (compose and write are the
callers' side effects, so that sweeps can compose once and write many times)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from nsysgen import model
from nsysgen.compose import Composed
from nsysgen.errors import InvalidConfig
from nsysgen.render import RenderedFile, render
from nsysgen.semantic import semantic_issues
from nsysgen.targets import TARGETS
from nsysgen.validate import schema_issues


@dataclass(frozen=True)
class Compiled:
    config: model.Config
    folder: str  # relative to output_dir
    files: list[RenderedFile]


def regenerate_command(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> str:
    """The command that rebuilds a folder; output_dir is left out (it is where, not what)."""
    words = ["nsysgen"]
    for directory in config_dirs:
        words += ["--config-dir", directory]
    words += [o for o in overrides if not o.startswith("output_dir=")]
    return shlex.join(words)


def build_config(composed: Composed) -> model.Config:
    """Validate a composed config (schema first, then semantics) and type it."""
    issues = schema_issues(composed.data)
    if issues:
        raise InvalidConfig(issues, composed.choices)
    config = model.from_dict(composed.data)
    issues = semantic_issues(config)
    if issues:
        raise InvalidConfig(issues, composed.choices)
    return config


def compile_config(composed: Composed, config_dirs: Sequence[str] = ()) -> Compiled:
    config = build_config(composed)
    specs = TARGETS[config.target.name].plan(config)
    files = render(specs, regenerate_command(composed.overrides, config_dirs))
    return Compiled(config=config, folder=config.job.name, files=files)
