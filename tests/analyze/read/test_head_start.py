"""Work in threads until told to stop (nsysgen/analyze/read/head_start.py): what the map's exports
do while a local cluster starts."""

from __future__ import annotations

import threading
import time

import pytest

from nsysgen.analyze.read.head_start import HeadStart


class Skipped(Exception):
    pass


def test_items_are_worked_in_threads_until_finish_and_results_kept_by_index() -> None:
    release = threading.Event()
    started: list[int] = []

    def work(item: int) -> int:
        started.append(item)
        release.wait(5)
        return item * 10

    head = HeadStart(list(range(100)), work, threads=4)
    deadline = time.monotonic() + 5
    while len(started) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    done = head.finish()
    # Each thread finishes the item it holds; none is taken after finish() (four were under
    # way; a thread that was between items may have taken one more before the stop).
    assert 4 <= len(done) < 100
    assert done == {i: i * 10 for i in done}
    assert sorted(done) == list(range(len(done)))  # taken in order
    assert len(started) == len(done)
    assert head.finish() == done  # a second finish() changes nothing


def test_every_item_is_done_when_finish_comes_late() -> None:
    head = HeadStart(["a", "b", "c"], str.upper, threads=8)
    time.sleep(0.2)
    assert head.finish() == {0: "A", 1: "B", 2: "C"}


def test_an_item_whose_work_raises_a_skipped_error_is_left_for_later() -> None:
    def work(item: int) -> int:
        if item == 1:
            raise Skipped(item)
        return item

    head = HeadStart([0, 1, 2], work, threads=1, skipped=(Skipped,))
    time.sleep(0.2)
    assert head.finish() == {0: 0, 2: 2}


def test_a_bug_in_the_work_is_raised_by_finish() -> None:
    def work(item: int) -> int:
        raise KeyError(item)

    head = HeadStart([0], work, threads=1, skipped=(Skipped,))
    with pytest.raises(KeyError):
        head.finish()


def test_no_threads_no_work() -> None:
    calls: list[int] = []
    head = HeadStart([1, 2], calls.append, threads=0)
    assert head.finish() == {} and calls == []
    assert HeadStart([], calls.append, threads=4).finish() == {}
