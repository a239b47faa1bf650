"""The recorded tasks as ranges (plan_types/tasks.py): indexing and its bounds, the tasks in
words, how the reports split, the name pattern read off sentinel names, a plug-in's own list,
and nsys's -o placeholders. (tests/analyze/test_scale.py checks counts against enumeration.)"""

from __future__ import annotations

import pytest

from nsysgen.profile.plan_types import RecordedTask, RecordedTasks, expand_name, report_path
from nsysgen.profile.plan_types.tasks import _ranges


def by_rank(task: int, node: int, local: int) -> str:
    return f"/r/job_rank{task}_node{node}"


def first(task: int, node: int, local: int) -> bool:
    return local == 0


def grid(per_node: int, start: int, stop: int, locals_: tuple[int, ...]) -> RecordedTasks:
    return RecordedTasks(per_node, "rank", by_rank, first, start, stop, locals_)


def test_a_grid_is_indexed_from_either_end_and_bounded() -> None:
    tasks = grid(8, 2, 5, (0, 3))  # nodes 2-4, local ranks 0 and 3
    assert len(tasks) == 6 and tasks.nodes == 3
    assert tasks[1] == RecordedTask(19, 2, 3, "/r/job_rank19_node2", False)
    assert tasks[-1] == RecordedTask(35, 4, 3, "/r/job_rank35_node4", False)
    assert [t.task for t in tasks] == [16, 19, 24, 27, 32, 35]
    with pytest.raises(IndexError):
        tasks[6]
    with pytest.raises(IndexError):
        tasks[-7]


@pytest.mark.parametrize(
    ("tasks", "described", "split"),
    [
        (grid(8, 0, 3, tuple(range(8))), "ranks 0-23", "one report per rank"),
        (grid(8, 1, 2, tuple(range(8))), "ranks 8-15", "one report per rank"),
        (grid(1, 0, 1, (0,)), "node 0", "one report per rank"),
        (grid(8, 2, 5, (0,)), "local rank 0 of nodes 2-4", "one report per node"),
        (grid(8, 0, 2, (0, 3)), "local ranks 0, 3 of nodes 0-1", "one report per rank"),
        (
            RecordedTasks(1, "node", by_rank, first, 0, 4, (0,)),
            "nodes 0-3",
            "one report per node",
        ),
        (grid(8, 0, 0, (0,)), "none", "one report per node"),
    ],
)
def test_the_tasks_in_words(tasks: RecordedTasks, described: str, split: str) -> None:
    assert (tasks.describe(), tasks.reports_per()) == (described, split)


def test_the_name_pattern_is_read_off_a_sentinel_name() -> None:
    assert grid(8, 0, 3, tuple(range(8))).name_pattern() == ["job_rank", 0, "_node", 1]
    same = RecordedTasks(8, "rank", lambda t, n, lo: "/r/same", first, 0, 2, (0, 1))
    assert same.name_pattern() == ["same"]
    assert same.collisions() == (1, "/r/same", 4)
    assert grid(8, 0, 0, (0,)).name_pattern() is None  # empty
    # A name that is not built from the coordinates alone has no pattern.
    odd = RecordedTasks(8, "rank", lambda t, n, lo: f"/r/{t * 2}", first, 0, 2, (0,))
    assert odd.name_pattern() is None


def test_a_plug_ins_own_list_of_tasks() -> None:
    tasks = RecordedTasks.from_tasks(
        [
            RecordedTask(0, 0, 0, "/r/a", True),
            RecordedTask(1, 0, 1, "/r/a", True),
            RecordedTask(9, 1, 1, "/r/b", False),
        ],
        per_node=8,
        unit="rank",
    )
    assert (len(tasks), tasks.unit, tasks.nodes, tasks.collector_count) == (3, "rank", 2, 2)
    assert tasks.describe() == "ranks 0-1, 9"
    assert tasks.crowded_nodes() == (1, 0, 2)
    assert tasks.collisions() == (1, "/r/a", 2)
    assert tasks.collector_tasks(1) == [0]
    assert [t.task for t in tasks.between(1, 9)] == [1, 9]
    assert tasks.name_pattern() is None
    one = RecordedTasks.from_tasks([RecordedTask(3, 3, 0, "/r/n3", False)], per_node=1, unit="node")
    assert (one.unit, one.describe(), one.reports_per()) == (
        "node",
        "node 3",
        "one report per node",
    )


def test_ranges_of_ids() -> None:
    assert _ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert _ranges([4]) == "4"


def test_nsys_placeholders_and_the_output_path() -> None:
    name = expand_name("r_%q{A}_%q{B}_%h_%p_%n_%%", {"A": "x"}, "host", "42")
    assert name == "r_x_%q{B}_host_42_1_%"  # an unset variable stays as written
    assert report_path("/fsx/r", None, "default") == "/fsx/r/default"
    assert report_path("/fsx/r", "mine_%h", "default") == "/fsx/r/mine_%h"
