"""compose: overrides + config directories -> one plain, resolved config dict.

Hydra's own search-path order lets a packaged option win over a user's option of the same name
(reference/HYDRA.md section 3), so user directories are placed *before* the packaged tree here.
This is the only module that touches Hydra.
"""

from __future__ import annotations

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
from omegaconf import OmegaConf, open_dict
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
        self._parser = OverridesParser.create()

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
        hydra_overrides = [self._tolerant(o) for o in parsed]
        try:
            cfg = self._loader.load_configuration(
                PRIMARY_CONFIG, hydra_overrides, RunMode.RUN, from_shell=True
            )
            raw_choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
            with open_dict(cfg):
                del cfg["hydra"]
            data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        except (HydraException, OmegaConfBaseException) as exc:
            raise ComposeError(_first_paragraph(str(exc))) from None
        assert isinstance(data, dict) and isinstance(raw_choices, dict)
        choices = {
            str(group): str(option)
            for group, option in raw_choices.items()
            if group in GROUPS and option is not None
        }
        return Composed(
            data={str(key): value for key, value in data.items()},
            choices=choices,
            overrides=tuple(overrides),
        )

    def _tolerant(self, override: Override) -> str:
        # A value override of an unknown key would stop Hydra at the first typo. Forcing it in
        # (++key=value) lets the schema report every unknown key at once, with the allowed keys.
        is_value_change = override.type == OverrideType.CHANGE and override.package is None
        if is_value_change and not self._loader.repository.group_exists(override.key_or_group):
            return f"++{override.input_line}"
        return str(override.input_line)


def _first_paragraph(message: str) -> str:
    # Hydra appends the config search path (absolute paths of this machine): leave it out.
    return message.split("\nConfig search path:")[0].strip()
