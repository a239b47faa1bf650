"""compose: overrides + config directories -> one plain, resolved config dict.

Hydra's own search-path order lets a packaged option win over a user's option of the same name
(reference/HYDRA.md section 3), so user directories are placed *before* the packaged tree here.
This is the only module that touches Hydra.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from nsysgen.errors import ComposeError
from nsysgen.resources import CONF_DIR

GROUPS = ("cluster", "workload", "capture", "target", "nsight", "experiment")
PRIMARY_CONFIG = "config"


@dataclass(frozen=True)
class Composed:
    """A composed config with its provenance."""

    data: dict[str, Any]
    choices: dict[str, str]
    overrides: tuple[str, ...]


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
        # composes once and only applies its values per point (reference/HYDRA.md section 5).
        self._bases: dict[tuple[str, ...], tuple[DictConfig, dict[str, str]]] = {}

    def group_options(self, group: str) -> list[str]:
        return sorted(self._loader.get_group_options(group))

    def parse(self, overrides: Sequence[str]) -> list[Override]:
        parsed = []
        for text in overrides:  # one at a time, so that an error can name its override
            try:
                parsed += self._parser.parse_overrides([text])
            except HydraException as exc:
                reason = _first_paragraph(str(exc)).splitlines()[0]
                raise ComposeError(
                    f"{text}: not a valid override ({reason}); the grammar is group=option or "
                    "key=value (Hydra override grammar)"
                ) from None
        return parsed

    def compose(self, overrides: Sequence[str]) -> Composed:
        parsed = self.parse(overrides)
        sweeps = [str(o.input_line) for o in parsed if o.is_sweep_override()]
        if sweeps:
            raise ComposeError(f"{', '.join(sweeps)}: a sweep needs -m (--multirun)")
        structural = [o for o in parsed if not self._is_value(o)]
        values = [o for o in parsed if self._is_value(o)]
        base, choices = self._base([str(o.input_line) for o in structural])
        cfg = copy.deepcopy(base)
        try:
            # Struct mode off: an unknown key is reported by the schema, with the allowed keys.
            OmegaConf.set_struct(cfg, False)
            for override in values:
                OmegaConf.update(cfg, override.key_or_group, override.value(), merge=False)
            data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        except OmegaConfBaseException as exc:
            raise ComposeError(_first_paragraph(str(exc))) from None
        assert isinstance(data, dict)
        return Composed(
            data={str(key): value for key, value in data.items()},
            choices=choices,
            overrides=tuple(overrides),
        )

    def _is_value(self, override: Override) -> bool:
        """A plain key=value (or ++key=value) that needs no recomposition."""
        return (
            override.type in (OverrideType.CHANGE, OverrideType.FORCE_ADD)
            and override.package is None
            and not self._loader.repository.group_exists(override.key_or_group)
        )

    def _base(self, overrides: list[str]) -> tuple[DictConfig, dict[str, str]]:
        key = tuple(overrides)
        if key not in self._bases:
            try:
                cfg = self._loader.load_configuration(
                    PRIMARY_CONFIG, overrides, RunMode.RUN, from_shell=True
                )
            except (HydraException, OmegaConfBaseException) as exc:
                raise ComposeError(_first_paragraph(str(exc))) from None
            raw_choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
            assert isinstance(raw_choices, dict)
            with open_dict(cfg):
                del cfg["hydra"]
            choices = {
                str(group): str(option)
                for group, option in sorted(raw_choices.items())
                if group in GROUPS and option is not None
            }
            self._bases[key] = (cfg, choices)
        return self._bases[key]


def _first_paragraph(message: str) -> str:
    # Hydra appends the config search path (absolute paths of this machine): leave it out.
    return message.split("\nConfig search path:")[0].strip()
