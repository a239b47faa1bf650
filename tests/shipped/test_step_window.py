"""The step helper (nsysgen/shipped/step_window/) decides the numbering with the running
program: library loops numbered as the library logs them, counters that are not step counters
refused before the window, several optimizers a step learned, a whole step captured into a CUDA
graph refused. Scripts run under the torch stand-in (tests/standin) with the stand-ins of
transformers, Lightning and DeepSpeed, which keep each library's order of events (their
docstrings say from where); the GPU proof (bench/gpu/steps38) runs the real libraries."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.shipped.step_window import (
    HINT_COUNTER,
    LIBRARIES,
    Counter,
    Numbering,
    StepWindow,
    period,
)
from nsysgen.shipped.step_window.names import LEARN_LIMIT
from tests.stepruns import run_script

FB = ["forward", "backward"]
OM = ["optimizer.step", "mark"]


def window(first: int, last: int, **more: str) -> dict[str, str]:
    return {
        "NSYSGEN_PROFILE_FIRST_STEP": str(first),
        "NSYSGEN_PROFILE_LAST_STEP": str(last),
        "NSYSGEN_PROFILE_RANKS": "0",
        "RANK": "0",
        **more,
    }


def expr(expression: str, scope: str = "train.py:<module>") -> dict[str, str]:
    return {"NSYSGEN_PROFILE_STEP_EXPR": expression, "NSYSGEN_PROFILE_STEP_SCOPE": scope}


HF_TRAINER = """\
import torch
from transformers import Trainer, TrainingArguments

model = torch.nn.Linear(4, 4)
Trainer(model, TrainingArguments(max_steps=12, gradient_accumulation_steps=4)).train()
"""
LIGHTNING = """\
import lightning as L
import torch

L.Trainer(max_steps=12).fit(torch.nn.Linear(4, 4))
"""
DEEPSPEED = """\
import deepspeed
import torch

engine = deepspeed.DeepSpeedEngine(torch.nn.Linear(4, 4), gradient_accumulation_steps=2)
for batch in range(24):
    engine.backward(engine(batch))
    engine.step()
"""


@pytest.mark.parametrize(
    ("source", "counter", "inside"),
    [
        (HF_TRAINER, "state.global_step + 1 (transformers Trainer)", [*FB * 4, *OM]),
        (LIGHTNING, "fit_loop.epoch_loop._batches_that_stepped (Lightning Trainer)", [*FB, *OM]),
        (DEEPSPEED, "global_steps + 1 (DeepSpeed engine)", [*FB * 2, *OM]),
    ],
    ids=["transformers", "lightning", "deepspeed"],
)
def test_a_library_loop_is_numbered_as_the_library_logs(
    tmp_path: Path, source: str, counter: str, inside: list[str]
) -> None:
    """No source given: the library's object is found on the stack at the optimizer step, and
    each range `step N` holds the optimizer step the library logs as N."""
    run = run_script(tmp_path, source, window(5, 7), mode="hook")
    assert run.recorded == ["step 5", "step 6", "step 7"]
    assert not run.mismatched
    for n in (5, 6, 7):
        assert run.inside(n) == inside, n
    assert f"steps are numbered by {counter} (checked over the" in run.stderr
    assert run.numbering[0].endswith(f" counter={counter}")
    mark = next(e for e in run.steps["step 6"] if e.startswith("mark "))
    assert mark.endswith(f" | {counter} = 6")


@pytest.mark.parametrize(
    ("source", "inside"),
    [
        (
            HF_TRAINER.replace("Trainer(model", "trainer = Trainer(model").replace(
                ").train()", ")"
            ),
            [*FB * 4, *OM],
        ),
        (
            LIGHTNING.replace(
                "L.Trainer(max_steps=12).fit(torch.nn.Linear(4, 4))",
                "trainer = L.Trainer(max_steps=12)",
            ),
            [*FB, *OM],
        ),
    ],
    ids=["transformers", "lightning"],
)
def test_a_library_callback_opens_each_step(tmp_path: Path, source: str, inside: list[str]) -> None:
    """Patch mode where the loop is the library's: the patch attaches the library's callback,
    which opens each step at its start with the number the library logs."""
    run_call = (
        "trainer.train()" if "transformers" in source else "trainer.fit(torch.nn.Linear(4, 4))"
    )
    script = (
        source
        + "from nsysgen_window import window as _nsysgen_window\n"
        + "_nsysgen_window.attach(trainer)  # nsysgen\n"
        + run_call
        + "\n"
    )
    run = run_script(tmp_path, script, window(5, 7), mode="beside")
    assert run.recorded == ["step 5", "step 6", "step 7"]
    assert not run.mismatched and run.outside_marks == 0
    for n in (5, 6, 7):
        assert run.inside(n) == inside, n
    assert run.numbering[0].startswith("per_step=1 checked=")
    assert f"counter={HINT_COUNTER}" in run.numbering[0]


def test_library_counters_say_what_verify_and_plan_say() -> None:
    assert [library.counter for library in LIBRARIES] == [
        "state.global_step + 1 (transformers Trainer)",
        "fit_loop.epoch_loop._batches_that_stepped (Lightning Trainer)",
        "global_steps + 1 (DeepSpeed engine)",
        "state.iteration (Ignite Engine)",
    ]


MICRO_BATCH_COUNTER = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
micro = 0
for batch in range(40):
    model(batch).backward()
    micro += 1
    if micro % 4 == 0:
        optimizer.step()
        print("@@ log", micro // 4 - 1)
"""
EPOCH_INDEX = """\
import itertools
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
done = 0


def train_one_epoch(model, optimizer):
    global done
    for i in itertools.count():
        if i == 3:
            return
        model(i).backward()
        optimizer.step()
        print("@@ log", done)
        done += 1


for epoch in range(6):
    train_one_epoch(model, optimizer)
"""


MICRO_WHY = (
    "micro in train.py:<module> went from 4 to 8 from one training step to the next (a step "
    "counter advances by exactly 1)"
)
EPOCH_WHY = (
    "i in train.py:train_one_epoch went from 2 to 0 from one training step to the next (a step "
    "counter advances by exactly 1)"
)


@pytest.mark.parametrize(
    ("source", "more", "why", "mode"),
    [
        (MICRO_BATCH_COUNTER, expr("micro"), MICRO_WHY, "hook"),
        (MICRO_BATCH_COUNTER, expr("micro"), MICRO_WHY, "patch"),
        (EPOCH_INDEX, expr("i", "train.py:train_one_epoch"), EPOCH_WHY, "hook"),
    ],
    ids=["micro-batch-counter-hook", "micro-batch-counter-patch", "index-restarts-every-epoch"],
)
def test_a_counter_that_does_not_count_steps_falls_back(
    tmp_path: Path, source: str, more: dict[str, str], why: str, mode: str
) -> None:
    """The counter nsysgen expected fails the run-time check before the window: the helper
    numbers by its own count (here what the script logs), says why and marks it."""
    run = run_script(tmp_path, source, window(4, 6, **more), mode=mode)
    assert run.recorded == ["step 4", "step 5", "step 6"]
    assert not run.mismatched
    assert f"nsysgen: {why}: steps are numbered by nsysgen's count" in run.stderr
    assert run.numbering[0].startswith("per_step=1 checked=")
    assert f" fallback={why}: numbered by nsysgen's count" in run.numbering[0]


CUDA_GRAPH = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(3):  # warm-up, eager
    model(i).backward()
    optimizer.step()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    model(0).backward()
    optimizer.step()
for step in range(20):
    graph.replay()
"""


@pytest.mark.parametrize("mode", ["hook", "beside"])
def test_a_step_captured_into_a_cuda_graph_is_refused(tmp_path: Path, mode: str) -> None:
    """At run time (compile time refuses it where the source shows it): zero-patch, and a loop
    edited by hand to open each replayed step."""
    source = CUDA_GRAPH
    if mode == "beside":
        source = source.replace(
            "import torch\n", "import torch\nfrom nsysgen_window import window\n"
        ).replace("    graph.replay()", "    window.open(step)\n    graph.replay()")
    run = run_script(tmp_path, source, window(5, 7), mode=mode)
    assert (run.starts, run.recorded) == (0, [])
    assert run.stderr == (
        "nsysgen: an optimizer step is being captured into a CUDA graph (torch.cuda.graph): its "
        "replays run no optimizer step in Python, so the helper cannot see steps; nothing is "
        "recorded (use capture=window or capture=nvtx for this script)\n"
    )


class Fixed(Counter):
    """A counter whose readings the test gives."""

    def __init__(self, name: str) -> None:
        self.name = name

    def read(self, frame: object) -> int | None:
        return None


def test_the_cycle_of_optimizers_is_the_shortest_seen_twice() -> None:
    assert period([0]) == 1
    assert period([0, 1]) is None
    assert period([0, 1, 0]) is None
    assert period([0, 1, 0, 1]) == 2
    assert period([0, 0, 1, 0, 0, 1]) == 3  # two critic steps, then the generator
    assert period([0, 1, 2, 0, 1, 2]) == 3  # a CycleGAN's three optimizers
    assert period([0, 1, 1, 0]) is None


def test_optimizers_made_one_after_another_are_phases_not_a_cycle() -> None:
    """Twenty steps of one AdamW, then twenty of a new one (a second phase), then a third made
    anew: one optimizer step a training step throughout, 45 steps numbered 0..44. A new
    optimizer's first step is undecided (a cycle with the old one, or a phase?) until its
    second shows it is alone: then both are counted."""
    numbering = Numbering([], None)
    ended = [numbering.add(optimizer, ()) for optimizer in [0] * 20 + [1] * 20 + [2] * 5]
    assert {i for i, e in enumerate(ended) if not e} <= {20, 40}
    assert numbering.per_step == 1 and numbering.steps == 45
    assert numbering.number_of_last() == 44
    # A phase of two new optimizers in turn (a GAN made anew) learns its own cycle of 2.
    gan = Numbering([], None)
    for optimizer in [0] * 10 + [1, 2] * 6:
        gan.add(optimizer, ())
    assert gan.per_step == 2 and gan.steps == 10 + 6
    # An optimizer made later that steps in turn with the first is a cycle (two critic steps,
    # then the generator), learned once it shows twice.
    critic = Numbering([], None)
    for optimizer in [0, 0, 1] * 3:
        critic.add(optimizer, ())
    assert critic.per_step == 3 and critic.steps == 3
    # A cycle of three optimizers (a CycleGAN's) is no run of phases: the third one's first
    # step comes before the first has shown a cycle of its own twice; the counter holds.
    cycle = Numbering([Fixed("it")], None)
    for index, optimizer in enumerate([0, 1, 2] * 30):
        cycle.add(optimizer, (index // 3,))
    assert (cycle.per_step, cycle.steps, cycle.chosen()) == (3, 30, 0), cycle.failed


def test_a_phase_made_after_learning_stopped_is_counted_by_its_own_cycle() -> None:
    """Past LEARN_LIMIT optimizer steps the cycle is no longer learned; an optimizer never seen
    before begins learning again, the steps so far kept: a GAN's 40 steps then 10 of one new
    optimizer make 50 steps (45 before: the new one's steps were taken two to a step), one
    optimizer's 70 then a new GAN's 10 make 80 (90 before). The counter stays judged across."""
    assert LEARN_LIMIT == 64
    cases = {
        "gan, then one": ([(o, i) for i in range(40) for o in (0, 1)]
                          + [(2, 40 + j) for j in range(10)], 1, 50),
        "one, then a gan": ([(0, i) for i in range(70)]
                            + [(o, 70 + j) for j in range(10) for o in (1, 2)], 2, 80),
        "made anew each epoch": ([(i // 30, i) for i in range(300)], 1, 300),
    }  # fmt: skip
    for name, (steps, per_step, count) in cases.items():
        numbering = Numbering([Fixed("step")], None)
        for optimizer, value in steps:
            numbering.add(optimizer, (value,))
        assert (numbering.per_step, numbering.steps) == (per_step, count), name
        assert (numbering.chosen(), numbering.number_of_last()) == (0, count - 1), name


def test_steps_are_judged_again_when_the_cycle_shows() -> None:
    numbering = Numbering([Fixed("it")], None)
    ended = [numbering.add(index, (value,)) for index, value in [(0, 7), (1, 7), (0, 8), (1, 8)]]
    # The first optimizer step ends a step while one optimizer is known; the second optimizer
    # makes the cycle unknown, and the fourth step shows it: two steps, numbered 7 and 8.
    assert ended == [True, False, False, True]
    assert (numbering.per_step, numbering.steps, numbering.chosen()) == (2, 2, 0)
    assert (numbering.number_of_last(), numbering.checked) == (8, 1)


def test_a_counter_that_changes_within_a_step_is_not_the_step_counter() -> None:
    numbering = Numbering([Fixed("batch")], 2)
    for index, value in [(0, 0), (1, 1), (0, 2), (1, 3)]:
        numbering.add(index, (value,))
    assert numbering.chosen() is None
    assert numbering.failed == [
        "batch changed within one training step of 2 optimizer steps (0, 1)"
    ]
    assert numbering.number_of_last() == 1  # the helper's own count: steps 0 and 1


def test_an_unset_or_malformed_window_is_inactive() -> None:
    for env in [
        {},
        {"NSYSGEN_PROFILE_FIRST_STEP": "3"},
        {"NSYSGEN_PROFILE_FIRST_STEP": "x", "NSYSGEN_PROFILE_LAST_STEP": "5"},
        {**window(3, 5), "NSYSGEN_PROFILE_OPTIMIZER_STEPS": "0"},
        {**window(3, 5), "NSYSGEN_PROFILE_OPTIMIZER_STEPS": "two"},
    ]:
        assert StepWindow(env).active is False, env
    assert StepWindow(window(3, 5)).active is True
