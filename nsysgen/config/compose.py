"""compose: overrides + config directories -> one plain, resolved config dict.

Hydra's own search-path order lets a packaged option win over a user's option of the same name
(`hydra.searchpath` entries are appended after the primary config's directory), so user
directories are placed *before* the packaged tree here. This is the only module that touches
Hydra: composition, and the split of a sweep's overrides into points (`Composer.sweep_grid`, which
`sweep.py` builds named points from).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.utils import create_config_search_path
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import HydraException, MissingConfigException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from nsysgen.config.assign import (
    assign_and_resolve,
    assign_and_resolve_with_omegaconf,
    first_paragraph,
    references,
)
from nsysgen.config.hygiene import control_character, resolver_issues
from nsysgen.config.interpolate import Unsupported
from nsysgen.config.keys import suggest
from nsysgen.config.overrides import (
    added_env_integer,
    check_shape,
    env_integers_as_text,
    quoting_hint,
    refuse_comma_list,
)
from nsysgen.errors import ComposeError, InvalidConfig
from nsysgen.resources import CONF_DIR

GROUPS = ("cluster", "workload", "capture", "target", "nsight", "experiment")
PRIMARY_CONFIG = "config"


@dataclass(frozen=True)
class SweepGrid:
    """Hydra's Cartesian product of sweep overrides (`key=a,b`, range(), glob(), groups)."""

    fixed: tuple[str, ...]  # the overrides that are not swept, as written
    swept_keys: tuple[str, ...]  # the keys of the swept overrides
    points: tuple[tuple[str, ...], ...]  # the overrides of every point, in Hydra's order


@dataclass(frozen=True)
class Composed:
    """A composed config with its provenance."""

    data: dict[str, Any]
    choices: dict[str, str]
    overrides: tuple[str, ...]
    # group -> the --config-dir file that provided its option (packaged options are left out),
    # so that an error in a user's file names the file.
    sources: dict[str, str] = field(default_factory=dict)
    # dotted key -> the keys its value interpolates (capture.report_dir -> cluster.shared_fs,
    # job.name), so that an error about a derived value also names what the user set.
    derived: dict[str, tuple[str, ...]] = field(default_factory=dict)


class Composer:
    """Composes configs from the packaged tree plus the user's directories (first one wins)."""

    def __init__(self, config_dirs: Sequence[Path] = ()) -> None:
        search_path = create_config_search_path(f"file://{CONF_DIR}")
        # Each prepend lands directly before "main", so iterate in order: first dir listed wins.
        for directory in config_dirs:
            if not directory.is_dir():
                raise ComposeError(f"--config-dir {directory}: no such directory")
            search_path.prepend(
                "nsysgen-user",
                f"file://{directory.resolve()}",
                anchor=SearchPathQuery(provider="main"),
            )
        self._loader = ConfigLoaderImpl(config_search_path=search_path)
        # With the loader, glob() sweeps can list the options of a group.
        self._parser = OverridesParser.create(config_loader=self._loader)
        # Composed (unresolved) configs per group-choosing overrides: a sweep over values
        # composes once and only applies its values per point.
        self._bases: dict[tuple[str, ...], _Base] = {}
        self._user_dirs = list(config_dirs)
        self._options: dict[str, list[str]] = {}
        self._parsed: dict[str, list[Override]] = {}

    def group_options(self, group: str) -> list[str]:
        # Hydra lists a group by scanning every search-path directory: once per composer.
        if group not in self._options:
            self._options[group] = sorted(self._loader.get_group_options(group))
        return self._options[group]

    def parse(self, overrides: Sequence[str]) -> list[Override]:
        parsed = []
        for text in overrides:  # one at a time, so that an error can name its override
            found = control_character(text)
            if found:
                raise ComposeError(
                    f"{text!r}: an override holds {found} (allowed: printable text without "
                    "line breaks, tabs or other control characters)"
                )
            if text not in self._parsed:
                check_shape(text)
                try:
                    self._parsed[text] = self._parser.parse_overrides([text])
                except HydraException as exc:
                    reason = first_paragraph(str(exc)).splitlines()[0]
                    raise ComposeError(
                        f"{text}: not a valid override ({reason}); the grammar is group=option "
                        f"or key=value (Hydra override grammar){quoting_hint(text)}"
                    ) from None
            parsed += self._parsed[text]
        return parsed

    def sweep_grid(self, overrides: Sequence[str]) -> SweepGrid:
        """Every point of Hydra's sweep grammar over `overrides`."""
        parsed = self.parse(overrides)
        try:
            batches = BasicSweeper.split_arguments(parsed, max_batch_size=None)[0]
        except HydraException as exc:
            raise ComposeError(str(exc)) from None
        return SweepGrid(
            fixed=tuple(str(o.input_line) for o in parsed if not o.is_sweep_override()),
            swept_keys=tuple(o.get_key_element() for o in parsed if o.is_sweep_override()),
            points=tuple(tuple(batch) for batch in batches),
        )

    def compose(
        self, overrides: Sequence[str], values: Mapping[str, Any] | None = None
    ) -> Composed:
        """Compose `overrides`, then set `values` (dotted key -> value) as if overridden last."""
        parsed = self.parse(overrides)
        sweeps = [str(o.input_line) for o in parsed if o.is_sweep_override()]
        for override in parsed:
            refuse_comma_list(override)
        if sweeps:
            raise ComposeError(f"{', '.join(sweeps)}: a sweep needs -m (--multirun)")
        structural = [
            added_env_integer(o) or self._group_choice(o) for o in parsed if not self._is_value(o)
        ]
        assignments = [(o.key_or_group, o.value()) for o in parsed if self._is_value(o)]
        assignments += list((values or {}).items())
        assignments = env_integers_as_text(assignments)
        base = self._base([text for text in structural if text])
        issues = resolver_issues(base.plain)
        for key, value in assignments:
            issues += resolver_issues(value, key)
        if issues:
            raise InvalidConfig(issues, base.choices, self.sources(base.choices))
        try:
            data = assign_and_resolve(base.plain, assignments)
        except Unsupported:
            sources = self.sources(base.choices)
            data = assign_and_resolve_with_omegaconf(base.cfg, assignments, sources)
        extra = tuple(f"{key}={value}" for key, value in (values or {}).items())
        assigned = {key for key, _ in assignments}
        return Composed(
            data=data,
            choices=base.choices,
            overrides=(*overrides, *extra),
            sources=self.sources(base.choices),
            derived={k: v for k, v in base.references.items() if k not in assigned},
        )

    def sources(self, choices: Mapping[str, str]) -> dict[str, str]:
        """group -> user config file of its chosen option, for options from --config-dir."""
        found = {}
        for group, option in choices.items():
            for directory in self._user_dirs:
                path = directory / group / f"{option}.yaml"
                if path.is_file():
                    found[group] = str(path)
                    break
        return found

    def _group_choice(self, override: Override) -> str | None:
        """The override text for Hydra, after checking that a group gets one of its options.

        Hydra parses `nsight=2024.4` as a float and `cluster=null` as None and then fails with a
        ValueError; here both are input errors with the options listed (and close ones named).
        """
        group = override.key_or_group
        if override.type != OverrideType.CHANGE or not self._loader.repository.group_exists(group):
            return str(override.input_line)
        value = override.value()
        options = self.group_options(group)
        if value is None:
            if group == "experiment":  # no experiment overlay: the default
                return None
            raise ComposeError(
                f"{override.input_line}: group {group} needs an option "
                f"(allowed: {', '.join(options)})"
            )
        if isinstance(value, (dict, list)):
            raise ComposeError(
                f"{override.input_line}: group {group} takes one option "
                f"(allowed: {', '.join(options)}; a sweep over options needs -m)"
            )
        option = override.get_value_element_as_str()
        if option not in options:
            raise ComposeError(unknown_option(group, option, options))
        return f"{group}='{option}'" if not isinstance(value, str) else str(override.input_line)

    def _is_value(self, override: Override) -> bool:
        """A plain key=value (or ++key=value) that needs no recomposition."""
        return (
            override.type in (OverrideType.CHANGE, OverrideType.FORCE_ADD)
            and override.package is None
            and not self._loader.repository.group_exists(override.key_or_group)
        )

    def _base(self, overrides: list[str]) -> _Base:
        key = tuple(overrides)
        if key not in self._bases:
            try:
                cfg = self._loader.load_configuration(
                    PRIMARY_CONFIG, overrides, RunMode.RUN, from_shell=True
                )
            except MissingConfigException as exc:
                raise ComposeError(self._missing_option(exc)) from None
            except (HydraException, OmegaConfBaseException) as exc:
                raise ComposeError(first_paragraph(str(exc))) from None
            except yaml.YAMLError as exc:
                raise ComposeError(_yaml_error(exc)) from None
            raw_choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
            assert isinstance(raw_choices, dict)
            with open_dict(cfg):
                del cfg["hydra"]
            choices = {
                str(group): str(option)
                for group, option in sorted(raw_choices.items())
                if group in GROUPS and option is not None
            }
            plain = OmegaConf.to_container(cfg, resolve=False)
            assert isinstance(plain, dict)
            self._bases[key] = _Base(cfg, {str(k): v for k, v in plain.items()}, choices)
        return self._bases[key]

    def _missing_option(self, exc: MissingConfigException) -> str:
        """An unknown option chosen inside a config file (a defaults list's `override /g: o`):
        the file that chose it, the group's options and a close one."""
        group, _, option = (exc.missing_cfg_file or "").rpartition("/")
        if not group or not self._loader.repository.group_exists(group):
            return first_paragraph(str(exc))
        chooser = re.compile(rf"(^|[\s/]){re.escape(group)}\s*:\s*['\"]?{re.escape(option)}\b")
        files = [
            str(path)
            for directory in (*self._user_dirs, CONF_DIR)
            for path in sorted(Path(directory).rglob("*.yaml"))
            if any(chooser.search(line) for line in _lines(path))
        ]
        where = f" (chosen in {', '.join(files)})" if files else ""
        return unknown_option(group, option, self.group_options(group)) + where


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _yaml_error(exc: yaml.YAMLError) -> str:
    """file:line:column: what YAML's parser found (line and column counted from 1)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f"a config file is not valid YAML ({problem})"
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and start is not None:  # where the broken construct began, often the mistake
        problem = f"{context} at line {start.line + 1}, column {start.column + 1}: {problem}"
    return f"{mark.name}:{mark.line + 1}:{mark.column + 1}: not valid YAML ({problem})"


@dataclass(frozen=True)
class _Base:
    cfg: DictConfig  # as Hydra composed it, interpolations unresolved
    plain: dict[str, Any]  # the same as plain containers
    choices: dict[str, str]

    @property
    def references(self) -> dict[str, tuple[str, ...]]:
        return references(self.plain)


def unknown_option(group: str, option: str, options: Sequence[str]) -> str:
    return (
        f"{group}={option}: no option {option!r} in group {group}"
        f"{suggest(option, list(options))} (allowed: {', '.join(options)})"
    )
