"""Overrides assigned onto a composed base, and its interpolations resolved: by nsysgen's own
resolver where it can, else by OmegaConf, with errors that name the key the user must fix."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationKeyError, OmegaConfBaseException

from nsysgen.config.interpolate import REFERENCE, Unsupported, resolve
from nsysgen.config.keys import suggest
from nsysgen.errors import ComposeError

_MISSING_KEY = re.compile(r"Interpolation key '([^']+)' not found")


def references(node: Any, path: str = "") -> dict[str, tuple[str, ...]]:
    """dotted key -> the keys that its unresolved value interpolates (`${a.b}`)."""
    found: dict[str, tuple[str, ...]] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            found.update(references(value, f"{path}.{key}" if path else str(key)))
    elif isinstance(node, str) and "${" in node:
        keys = tuple(dict.fromkeys(REFERENCE.findall(node)))
        if keys:
            found[path] = keys
    return found


def assign_and_resolve(plain: dict[str, Any], assignments: list[tuple[str, Any]]) -> dict[str, Any]:
    data = copy.deepcopy(plain)
    for dotted, value in assignments:
        if isinstance(value, str) and "${" in value:
            raise Unsupported(value)
        node = data
        *parents, leaf = dotted.split(".")
        for depth, part in enumerate(parents):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                parent = ".".join(parents[: depth + 1])
                raise ComposeError(
                    f"{dotted}={value}: {parent} is not a mapping, so it has no key "
                    f"{'.'.join(dotted.split('.')[depth + 1 :])}"
                )
        node[leaf] = copy.deepcopy(value)
    return resolve(data)


def assign_and_resolve_with_omegaconf(
    base: DictConfig, assignments: list[tuple[str, Any]], sources: Mapping[str, str]
) -> dict[str, Any]:
    cfg = copy.deepcopy(base)
    try:
        # Struct mode off: an unknown key is reported by the schema, with the allowed keys.
        OmegaConf.set_struct(cfg, False)
        for dotted, value in assignments:
            OmegaConf.update(cfg, dotted, value, merge=False)
        data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except InterpolationKeyError as exc:
        # OmegaConf's own text names neither the file nor the keys that do exist.
        key = str(getattr(exc, "full_key", "") or "")
        missing = _MISSING_KEY.search(str(exc))
        if missing:
            key = _referrer(cfg, missing.group(1), [dotted for dotted, _ in assignments]) or key
        source = sources.get(key.split(".")[0])
        raise ComposeError(
            f"{key}: refers to {missing.group(1) if missing else 'a key'}, which the config "
            f"does not have{suggest(missing.group(1), _keys(cfg)) if missing else ''}"
            + (f" [in {source}]" if source else "")
            + "; fix: ${...} names a key of the config (nsysgen show lists them)"
        ) from None
    except OmegaConfBaseException as exc:
        raise ComposeError(first_paragraph(str(exc))) from None
    assert isinstance(data, dict)
    return {str(key): value for key, value in data.items()}


def _referrer(cfg: DictConfig, missing: str, assigned: Sequence[str]) -> str | None:
    """The key whose own value holds `${missing}`. OmegaConf names the key it was resolving,
    which may only interpolate the broken one (capture.report_dir holds ${job.name}): the
    user typed, and must fix, the key that holds the bad reference; their overrides first."""
    plain = OmegaConf.to_container(cfg, resolve=False)
    holders = [key for key, refs in references(plain).items() if missing in refs]
    typed = [key for key in holders if key in assigned]
    return next(iter(typed or holders), None)


def _keys(cfg: DictConfig) -> list[str]:
    """Every dotted key of `cfg`, unresolved (for a did-you-mean)."""
    plain = OmegaConf.to_container(cfg, resolve=False)
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else str(key))
        elif path:
            found.append(path)

    walk(plain, "")
    return found


def first_paragraph(message: str) -> str:
    # Hydra appends the config search path (absolute paths of this machine): leave it out.
    return message.split("\nConfig search path:")[0].strip()
