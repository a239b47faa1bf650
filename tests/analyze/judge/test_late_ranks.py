"""The late ranks and the limits of the critical path (nsysgen/analyze/judge/late_ranks.py): each
limit names its steps and what it costs the reading; the stragglers themselves are proven on
planted delays in tests/analyze/judge/test_stragglers.py, test_critical.py and test_pipeline.py."""

from __future__ import annotations

from nsysgen.analyze.judge.late_ranks import path_limits
from nsysgen.analyze.judge.stragglers import Lateness


def test_each_limit_of_the_path_names_its_steps() -> None:
    lateness = Lateness({}, {}, {}, 0, [])
    assert path_limits(lateness) == []
    lateness.stages = {9: 2, 10: 2}
    lateness.unpaired = [9, 10]
    lateness.unsplit = [11]
    lateness.unwalked = [12]
    found = path_limits(lateness)
    assert [line.split(" ", 3)[:3] for line in found] == [
        ["ranks", "ran", "different"],
        ["sends", "and", "receives"],
        ["pipeline", "stages", "not"],
        ["critical", "path", "not"],
    ]
    assert "on 2 step(s) (9, 10)" in found[1] and "traced along their send/recv" in found[0]
    assert "pass --pipeline-stages N" in found[2] and "(12)" in found[3]
