"""Patched scripts run under a stand-in torch (tests/standin) that prints what they ask of it:
exactly one capture start and stop, NVTX labels exactly FIRST..LAST in the script's own
numbering, each step holding all its micro-batches and one optimizer step; nothing at all without
nsysgen's variables; files as published (CRLF, tabs, BOM, coding line, no final newline)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nsysgen.patching.patch import patch_source, strip, unified_patch
from nsysgen.shipped import STEP_WINDOW_FILE
from tests.stepruns import HELPER, Run, run_script

EPOCHS = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_one_epoch(epoch):
    for i, batch in enumerate(range(4)):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def evaluate():
    for batch in range(3):
        model(batch)


for epoch in range(3):
    train_one_epoch(epoch)
    evaluate()
"""
ACCUMULATION = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
iter_num = 0
while True:
    if iter_num > 9:
        break
    for micro_step in range(4):
        loss = model(micro_step)
        loss.backward()
    optimizer.step()
    print("@@ log", iter_num)
    iter_num += 1
"""
TOKENS = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
trained_tokens, max_tokens, step = 0, 4096 * 12, 0
while trained_tokens < max_tokens:
    loss = model(step)
    loss.backward()
    optimizer.step()
    print("@@ log", step)
    trained_tokens += 4096
    step += 1
"""
TRAINER = """\
import torch


class Trainer:
    def __init__(self, resume_step):
        self.step = resume_step
        self.model = torch.nn.Linear(4, 4)
        self.optimizers = torch.optim.AdamW(self.model.parameters())

    def should_continue_training(self):
        return self.step < 12

    def train_step(self):
        for _ in range(2):
            self.forward_backward()
        self.optimizers.step()
        print("@@ log", self.step)

    def forward_backward(self):
        def compute():
            loss = self.model(0)
            loss.backward()

        compute()

    def train(self):
        while self.should_continue_training():
            self.step += 1
            self.train_step()


Trainer(resume_step=3).train()
"""
ACCELERATE_STYLE = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
gradient_accumulation_steps = 3
for epoch in range(2):
    for step, batch in enumerate(range(12)):
        loss = model(batch) / gradient_accumulation_steps
        loss.backward()
        if (step + 1) % gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    for step, batch in enumerate(range(2)):
        model(batch)
"""
TQDM = """\
import torch
from tqdm import tqdm

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in tqdm(range(5, 15)):
    model(step).backward()
    optimizer.step()
    print("@@ log", step)
"""
# Tabs, CRLF, a byte order mark, a coding line and no final newline, all at once.
PUBLISHED = (
    "\ufeff# -*- coding: utf-8 -*-\r\n"
    "import torch\r\n"
    "\r\n"
    "def main():\r\n"
    "\tmodel = torch.nn.Linear(4, 4)\r\n"
    "\topt = torch.optim.SGD(model.parameters(), lr=0.1)\r\n"
    "\tfor it in range(8):\r\n"
    "\t\tmodel(it).backward()\r\n"
    "\t\topt.step()\r\n"
    '\t\tprint("@@ log", it)\r\n'
    "\r\n"
    "main()"
)


def run_patched(tmp_path: Path, source: str, env: dict[str, str]) -> Run:
    return run_script(tmp_path, source, env, mode="patch")


WINDOW = {"NSYSGEN_PROFILE_RANKS": "0", "RANK": "0"}
# What a step holds: its micro-batches (forward, backward), then its one optimizer step, marked.
FB = ["forward", "backward"]
OM = ["optimizer.step", "mark"]


@pytest.mark.parametrize(
    ("source", "first", "last", "inside"),
    [
        (EPOCHS, 3, 6, [*FB, *OM]),  # crosses an epoch, nsysgen counts
        (ACCUMULATION, 4, 6, [*FB * 4, *OM]),
        (TOKENS, 2, 5, [*FB, *OM]),
        (TRAINER, 6, 8, [*FB * 2, *OM]),
        (ACCELERATE_STYLE, 2, 5, [*FB * 3, *OM]),  # epochs 1 and 2
        (TQDM, 7, 9, [*FB, *OM]),
        (PUBLISHED, 1, 3, [*FB, *OM]),
    ],
    ids=["epochs", "accumulation", "tokens", "trainer", "accelerate", "tqdm", "published"],
)
def test_window_holds_exactly_the_steps(
    tmp_path: Path, source: str, first: int, last: int, inside: list[str]
) -> None:
    window = {"NSYSGEN_PROFILE_FIRST_STEP": str(first), "NSYSGEN_PROFILE_LAST_STEP": str(last)}
    run = run_patched(tmp_path, source, {**WINDOW, **window})
    assert (run.starts, run.stops) == (1, 1)
    assert run.recorded == [f"step {n}" for n in range(first, last + 1)]
    assert not run.mismatched
    assert run.outside_marks == 0
    for n in range(first, last + 1):
        assert run.inside(n) == inside, n


def test_trainer_steps_follow_the_resumed_counter(tmp_path: Path) -> None:
    # Resumed at 3, the first step the trainer runs and logs is 4: so is the first label.
    window = {"NSYSGEN_PROFILE_FIRST_STEP": "0", "NSYSGEN_PROFILE_LAST_STEP": "99"}
    run = run_patched(tmp_path, TRAINER, {**WINDOW, **window})
    assert list(run.steps) == [f"step {n}" for n in range(4, 13)]


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"RANK": "", "LOCAL_RANK": "", "SLURM_PROCID": ""},
        {"RANK": "three", "LOCAL_RANK": "-1", "SLURM_PROCID": "x", "SLURM_LOCALID": " "},
        {"NSYSGEN_PROFILE_FIRST_STEP": "", "NSYSGEN_PROFILE_LAST_STEP": "", "RANK": ""},
    ],
)
def test_without_the_window_nothing_happens(tmp_path: Path, env: dict[str, str]) -> None:
    run = run_patched(tmp_path, ACCUMULATION, env)
    assert (run.starts, run.stops, run.steps) == (0, 0, {})


def test_helper_imports_nothing_without_the_window(tmp_path: Path) -> None:
    (tmp_path / STEP_WINDOW_FILE).write_text(HELPER)
    code = (
        "import sys\nbefore = set(sys.modules)\n"
        "from nsysgen_window import window as w\n"
        "w.begin(1); w.open(2); w.end(); w.close()\n"
        "added = set(sys.modules) - before\n"
        "assert added == {'nsysgen_window', '__future__'}, added\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSYSGEN_PROFILE_")}
    env.update(RANK="", PYTHONPATH=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_published_file_keeps_its_form_and_its_patch_applies(tmp_path: Path) -> None:
    patched = patch_source(PUBLISHED)
    assert patched.startswith("\ufeff# -*- coding: utf-8 -*-\r\nimport torch\r\n")
    assert "\n" not in patched.replace("\r\n", "")  # every line ends in CRLF
    assert "\t\t_nsysgen_window.open(it)  # nsysgen\r\n" in patched
    assert not patched.endswith("\n") and strip(patched) == PUBLISHED
    compile(patched.encode(), "train.py", "exec")  # as Python reads the file: bytes
    diff = unified_patch("train.py", PUBLISHED, patched)
    for tool in (["git", "apply"], ["patch", "-p1", "--quiet", "-i"]):
        folder = tmp_path / tool[0]
        folder.mkdir()
        (folder / "train.py").write_bytes(PUBLISHED.encode())
        (folder / "p.patch").write_bytes(diff.encode())
        subprocess.run([*tool, "p.patch"], cwd=folder, check=True)
        assert (folder / "train.py").read_bytes() == patched.encode(), tool
