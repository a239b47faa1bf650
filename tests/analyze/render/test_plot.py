"""Pictures drawn again only when what they show changed (nsysgen/analyze/render/plot.py's Plots),
with builders that write bytes instead of drawing; the refusal when matplotlib is missing; and
the spread figure's cap on panels for a run of more message sizes than it shows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.nccl import NcclCall
from nsysgen.analyze.render.plot import (
    INSTALL,
    MAX_SIZE_PANELS,
    MissingDependency,
    Plots,
    durations_figure,
    pyplot,
    require_matplotlib,
)


class Builder:
    """Writes `content` to OUT/name (or draws nothing), counting its calls."""

    def __init__(self, target: Path, content: bytes | None) -> None:
        self.target, self.content, self.calls = target, content, 0

    def __call__(self) -> Path | None:
        self.calls += 1
        if self.content is None:
            return None
        self.target.write_bytes(self.content)
        return self.target


def test_a_picture_is_kept_while_its_data_and_bytes_hold(tmp_path: Path) -> None:
    build = Builder(tmp_path / "a.png", b"png one")
    plots = Plots(tmp_path)
    assert plots.draw("a.png", {"x": [1, 2]}, build) == tmp_path / "a.png"
    plots.save()
    again = Plots(tmp_path)  # the next run, from the saved record
    assert again.draw("a.png", {"x": [1, 2]}, build) == tmp_path / "a.png"
    assert build.calls == 1
    (tmp_path / "a.png").write_bytes(b"edited")
    again.draw("a.png", {"x": [1, 2]}, build)
    assert build.calls == 2 and (tmp_path / "a.png").read_bytes() == b"png one"
    again.draw("a.png", {"x": [1, 3]}, build)  # other data
    assert build.calls == 3
    (tmp_path / "a.png").unlink()
    again.draw("a.png", {"x": [1, 3]}, build)
    assert build.calls == 4
    assert plots.key("a.png", {"b": 1, "a": 2}) == plots.key("a.png", {"a": 2, "b": 1})
    assert plots.key("a.png", 1) != plots.key("b.png", 1)


def test_nothing_drawn_is_remembered_and_a_missing_result_forgotten(tmp_path: Path) -> None:
    nothing = Builder(tmp_path / "n.png", None)
    plots = Plots(tmp_path)
    assert plots.draw("n.png", [1], nothing) is None
    assert plots.draw("n.png", [1], nothing) is None and nothing.calls == 1
    (tmp_path / "n.png").write_bytes(b"left by an older run")
    plots.draw("n.png", [1], nothing)
    assert nothing.calls == 2  # a file where nothing was drawn: asked again

    def elsewhere() -> Path:
        return tmp_path / "never-written.png"

    assert plots.draw("e.png", [1], elsewhere) == tmp_path / "never-written.png"
    assert "e.png" not in plots.records  # nothing to check it by next time
    plots.save()
    assert not list(tmp_path.glob("*.partial"))


def test_a_damaged_record_draws_everything_again(tmp_path: Path) -> None:
    (tmp_path / Plots.FILE).write_text("[1, 2]")
    assert Plots(tmp_path).records == {}
    (tmp_path / Plots.FILE).write_text("{not json")
    assert Plots(tmp_path).records == {}


def test_missing_matplotlib_is_an_analyze_error_naming_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_matplotlib()  # installed here
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if uninstalled
    with pytest.raises(MissingDependency) as error:
        require_matplotlib()
    assert isinstance(error.value, AnalyzeError)
    assert str(error.value) == (
        "nsysgen analyze draws its plots with matplotlib, which is not installed (install it "
        f"with: {INSTALL})"
    )


def test_more_sizes_than_panels_show_the_busiest_and_say_so() -> None:
    # 31 sizes, size 2**k with k + 1 calls: the smallest size has the fewest calls.
    calls = [
        NcclCall("r", "ncclAllReduce", 1 << k, "k", n, 1000 + n)
        for k in range(MAX_SIZE_PANELS + 1)
        for n in range(k + 1)
    ]
    figure = durations_figure("ncclAllReduce", calls, {}, "job x")
    try:
        shown = [a.get_title() for a in figure.axes if a.get_visible()]
        assert len(shown) == MAX_SIZE_PANELS and shown[0] == "2 B (2 calls)"
        assert figure.get_suptitle().endswith(
            f"job x\n{MAX_SIZE_PANELS} of {MAX_SIZE_PANELS + 1} sizes: those with most calls"
        )
    finally:
        pyplot().close(figure)
