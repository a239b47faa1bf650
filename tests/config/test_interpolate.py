"""The fast interpolation resolver (nsysgen/config/interpolate.py) gives what OmegaConf gives."""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from nsysgen.config.compose import Composer
from nsysgen.config.interpolate import Unsupported, resolve
from tests.conftest import EXPERIMENTS


def omegaconf_resolve(data: dict[str, Any]) -> dict[str, Any]:
    resolved = OmegaConf.to_container(OmegaConf.create(data), resolve=True)
    assert isinstance(resolved, dict)
    return {str(key): value for key, value in resolved.items()}


@pytest.mark.slow
@pytest.mark.parametrize("experiment", [None, *EXPERIMENTS])
def test_packaged_experiments_resolve_as_omegaconf_does(experiment: str | None) -> None:
    overrides = [] if experiment is None else [f"experiment={experiment}"]
    base = Composer()._base(overrides)  # as Hydra composed it, interpolations unresolved
    assert any("${" in str(value) for value in base.plain.values()), "nothing to resolve"
    expected = OmegaConf.to_container(base.cfg, resolve=True)
    assert resolve(base.plain) == expected


HANDWRITTEN: list[dict[str, Any]] = [
    {"a": 1, "b": "${a}"},
    {"a": {"x": "s"}, "b": "pre-${a.x}-post"},
    {"a": "${b}", "b": "${c}", "c": 3},
    {"t": True, "n": None, "s": "${t}/${n}"},
    {"f": 1.5, "s": "x${f}", "g": "${f}"},
    {"a": 2, "l": ["${a}", "k${a}", {"m": "${a}"}]},
    {"a-b": {"c_1": 1}, "d": "${a-b.c_1}"},
    {"n": None, "m": "${n}"},
    {"c": {"nodes": 2, "gpus": 8}, "job": "${c.nodes}x${c.gpus}", "dollar": "cost $5"},
    {"path": "/fsx", "img": "${path}/images/${path}.sqsh"},
]


@pytest.mark.parametrize("data", HANDWRITTEN, ids=range(len(HANDWRITTEN)))
def test_handwritten_interpolations_resolve_as_omegaconf_does(data: dict[str, Any]) -> None:
    assert resolve(data) == omegaconf_resolve(data)


UNSUPPORTED: list[dict[str, Any]] = [
    {"h": "${oc.env:HOME}"},
    {"a": 1, "e": "\\${a}"},
    {"a": {"b": 1, "c": "${.b}"}},
    {"a": {"b": 1}, "c": "${a}"},
    {"c": "${missing}"},
    {"a": "${b}", "b": "${a}"},
]


@pytest.mark.parametrize("data", UNSUPPORTED, ids=range(len(UNSUPPORTED)))
def test_what_the_resolver_leaves_to_omegaconf(data: dict[str, Any]) -> None:
    with pytest.raises(Unsupported):
        resolve(data)
