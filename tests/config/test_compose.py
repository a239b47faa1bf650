"""Composition (nsysgen/config/compose.py) through the Composer itself: the first --config-dir
listed wins and is named as the source, values given in code are assigned last and are no
longer "derived", the sweep grid in Hydra's order, a group given null, a list or a close miss,
and YAML errors with and without a position."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nsysgen.config.compose import Composer, SweepGrid, _yaml_error, unknown_option
from nsysgen.errors import ComposeError

MINE = "defaults:\n  - p5\n  - _self_\nnodes: {}\n"


@pytest.fixture
def composer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Composer:
    """Two user directories that both have cluster=mine (3 nodes in the first, 5 in the other)."""
    monkeypatch.chdir(tmp_path)
    for name, nodes in (("one", 3), ("two", 5)):
        (tmp_path / name / "cluster").mkdir(parents=True)
        (tmp_path / name / "cluster" / "mine.yaml").write_text(MINE.format(nodes))
    return Composer([Path("one"), Path("two")])


def test_the_first_config_dir_wins_and_is_named_as_the_source(composer: Composer) -> None:
    composed = composer.compose(["cluster=mine"])
    assert composed.data["cluster"]["nodes"] == 3
    assert composed.sources == {"cluster": "one/cluster/mine.yaml"}
    assert composed.choices["cluster"] == "mine"
    assert "mine" in composer.group_options("cluster") and "p5" in composer.group_options("cluster")
    assert composer.compose([]).sources == {}  # packaged options are not named


def test_values_are_assigned_last_and_recorded_as_overrides(composer: Composer) -> None:
    composed = composer.compose(["job.name=a"], values={"capture.report_dir": "/r"})
    assert composed.data["capture"]["report_dir"] == "/r"
    assert composed.overrides == ("job.name=a", "capture.report_dir=/r")
    assert "capture.report_dir" not in composed.derived  # set, no longer interpolated
    assert composer.compose(["job.name=a"]).derived["capture.report_dir"] == (
        "cluster.shared_fs",
        "job.name",
    )


def test_the_sweep_grid_is_hydras_product_in_order(composer: Composer) -> None:
    grid = composer.sweep_grid(["capture.delay=1,2", "job.name=x", "cluster=p5,mine"])
    assert grid == SweepGrid(
        fixed=("job.name=x",),
        swept_keys=("capture.delay", "cluster"),
        points=(
            ("capture.delay=1", "job.name=x", "cluster=p5"),
            ("capture.delay=1", "job.name=x", "cluster=mine"),
            ("capture.delay=2", "job.name=x", "cluster=p5"),
            ("capture.delay=2", "job.name=x", "cluster=mine"),
        ),
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("cluster=null", "cluster=null: group cluster needs an option (allowed: local, mine, "),
        ("cluster=[p5,p4de]", "cluster=[p5,p4de]: group cluster takes one option (allowed: "),
        ("nsight=2025.3", "nsight=2025.3: no option '2025.3' in group nsight (did you mean "),
    ],
)
def test_a_group_needs_exactly_one_of_its_options(
    composer: Composer, override: str, message: str
) -> None:
    with pytest.raises(ComposeError) as raised:
        composer.compose([override])
    assert str(raised.value).startswith(message)


def test_no_experiment_is_the_default(composer: Composer) -> None:
    assert composer.compose(["experiment=null"]).data == composer.compose([]).data


def test_yaml_errors_name_the_place_when_the_parser_knows_it() -> None:
    assert _yaml_error(yaml.YAMLError("x")) == "a config file is not valid YAML (x)"
    with pytest.raises(yaml.YAMLError) as raised:
        yaml.safe_load("a: [1\nb: 2\n")
    assert _yaml_error(raised.value) == (
        "<unicode string>:2:2: not valid YAML (while parsing a flow sequence at line 1, "
        "column 4: expected ',' or ']', but got ':')"
    )
    assert unknown_option("cluster", "p55", ["p4de", "p5"]) == (
        "cluster=p55: no option 'p55' in group cluster (did you mean p5?) (allowed: p4de, p5)"
    )


def test_a_missing_config_dir_is_refused() -> None:
    with pytest.raises(ComposeError, match="^--config-dir /no/such: no such directory$"):
        Composer([Path("/no/such")])
