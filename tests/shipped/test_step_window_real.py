"""The step helper with the real libraries that own training loops, on CPU: transformers'
Trainer, Lightning's Trainer, an accelerate loop, a GAN and a torch.compile'd model, each
unmodified (zero-patch) or patched. torch runs on CPU; its CUDA profiler and NVTX calls are
recorded instead of made (tests/realtorch/fake_cuda.py). Each script prints `@@ log N` where its
library logs step N (from the library's own log or state, never from nsysgen's marks), and every
range `step N` must hold the optimizer step that is then logged as N."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.patching.patch import analyse
from tests.conftest import REPO
from tests.shipped.test_step_window import window
from tests.stepruns import Run, run_script

pytestmark = pytest.mark.slow
REALTORCH = REPO / "tests" / "realtorch"

HF_TRAINER = """\
import fake_cuda
import torch
from torch.utils.data import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments


class Data(Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, i):
        return {"x": torch.randn(8), "labels": torch.randn(8)}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 8)

    def forward(self, x, labels):
        return {"loss": ((self.layer(x) - labels) ** 2).mean()}


class Log(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        print("@@ log", state.log_history[-1]["step"], flush=True)


args = TrainingArguments(
    output_dir="out", max_steps=12, gradient_accumulation_steps=4, per_device_train_batch_size=4,
    logging_steps=1, report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True,
)
trainer = Trainer(model=Model(), args=args, train_dataset=Data(), callbacks=[Log()])
trainer.train()
"""
LIGHTNING = """\
import fake_cuda
import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 8)

    def training_step(self, batch, index):
        x, y = batch
        return ((self.layer(x) - y) ** 2).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


class Log(L.Callback):
    stepped = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, index):
        if trainer.global_step != self.stepped:  # this batch stepped: the loggers' step for it
            self.stepped = trainer.global_step
            print("@@ log", trainer.fit_loop.epoch_loop._batches_that_stepped, flush=True)


data = DataLoader(TensorDataset(torch.randn(256, 8), torch.randn(256, 8)), batch_size=4)
trainer = L.Trainer(
    max_steps=12, accumulate_grad_batches=2, logger=False, enable_checkpointing=False,
    enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", callbacks=[Log()],
)
trainer.fit(Model(), data)
"""
ACCELERATE = """\
import fake_cuda
import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True)
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = accelerator.prepare(model, optimizer)
    completed_steps = 0
    for epoch in range(3):
        for step in range(8):
            with accelerator.accumulate(model):
                loss = model(torch.randn(4, 8)).pow(2).mean()
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                completed_steps += 1
                print("@@ log", completed_steps, flush=True)


main()
"""
GAN = """\
import fake_cuda
import torch

generator, discriminator = torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)
opt_g = torch.optim.Adam(generator.parameters())
opt_d = torch.optim.Adam(discriminator.parameters())
iters = 0
for epoch in range(2):
    for i in range(8):
        fake = generator(torch.randn(4, 8))
        discriminator(fake.detach()).mean().backward()
        opt_d.step()
        opt_d.zero_grad()
        discriminator(fake).mean().backward()
        opt_g.step()
        opt_g.zero_grad()
        print("@@ log", iters, flush=True)
        iters += 1
"""
COMPILED = """\
import fake_cuda
import torch

# aot_eager: dynamo and AOT autograd as on the GPU, without inductor's CPU code generation.
model = torch.compile(torch.nn.Linear(8, 8), backend="aot_eager")
optimizer = torch.optim.AdamW(model.parameters())
for step in range(12):
    model(torch.randn(4, 8)).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
    print("@@ log", step, flush=True)
"""


LIGHTNING_MANUAL = """\
import fake_cuda
import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class GAN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.g, self.d = torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)

    def training_step(self, batch, index):
        opt_g, opt_d = self.optimizers()
        x, _ = batch
        loss_d = self.d(self.g(x).detach()).mean()
        opt_d.zero_grad()
        self.manual_backward(loss_d)
        opt_d.step()
        loss_g = -self.d(self.g(x)).mean()
        opt_g.zero_grad()
        self.manual_backward(loss_g)
        opt_g.step()

    def configure_optimizers(self):
        return torch.optim.Adam(self.g.parameters()), torch.optim.Adam(self.d.parameters())


class Log(L.Callback):
    def on_train_batch_end(self, trainer, module, outputs, batch, index):
        # The loggers' step of this batch, not yet advanced here (global_step counts both
        # optimizers' steps: 2 a batch).
        print("@@ log", trainer.fit_loop.epoch_loop._batches_that_stepped, flush=True)


data = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 8)), batch_size=4)
trainer = L.Trainer(
    max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False, accelerator="cpu", callbacks=[Log()],
)
trainer.fit(GAN(), data)
"""
IGNITE = """\
import fake_cuda
import torch
from ignite.engine import Events, create_supervised_trainer

model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
trainer = create_supervised_trainer(model, optimizer, torch.nn.functional.mse_loss)


@trainer.on(Events.ITERATION_COMPLETED)
def log(engine):
    print("@@ log", engine.state.iteration, flush=True)


data = [(torch.randn(4, 8), torch.randn(4, 8)) for _ in range(6)]
trainer.run(data, max_epochs=2)
"""
TWO_PHASES = """\
import fake_cuda
import torch

model = torch.nn.Linear(8, 8)
global_step = 0
for phase, lr in enumerate((1e-3, 3e-4)):
    # A second phase with a new optimizer (layers unfrozen, a new learning rate): made anew.
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for batch in range(20):
        loss = (model(torch.randn(4, 8)) ** 2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        global_step += 1
        print(f"phase {phase} step {global_step} loss {loss.item():.4f}")
        print("@@ log", global_step, flush=True)
"""

# A GAN's two optimizers in turn for 40 steps (80 optimizer steps: past the 64 the helper
# learns the cycle from), then a fine-tuning phase with one new optimizer.
GAN_THEN_ONE = """\
import fake_cuda
import torch

generator, critic = torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)
opt_g = torch.optim.Adam(generator.parameters())
opt_d = torch.optim.Adam(critic.parameters())
global_step = 0
for batch in range(40):
    critic(generator(torch.randn(4, 8))).mean().backward()
    opt_d.step()
    opt_d.zero_grad()
    (-critic(generator(torch.randn(4, 8)))).mean().backward()
    opt_g.step()
    opt_g.zero_grad()
    global_step += 1
    print(f"gan step {global_step}")
    print("@@ log", global_step, flush=True)
tune = torch.optim.AdamW(generator.parameters(), lr=1e-4)
for batch in range(20):
    (generator(torch.randn(4, 8)) ** 2).mean().backward()
    tune.step()
    tune.zero_grad()
    global_step += 1
    print(f"tune step {global_step}")
    print("@@ log", global_step, flush=True)
"""


def found(source: str) -> dict[str, str]:
    """The counter compile finds in the script (workload.<kind>.source), as the launch sets it."""
    loop = analyse(source)
    if loop.at_step is None:
        return {}
    return {
        "NSYSGEN_PROFILE_STEP_EXPR": loop.at_step,
        "NSYSGEN_PROFILE_STEP_SCOPE": f"train.py:{loop.scope}",
    }


def run(tmp_path: Path, source: str, env: dict[str, str], mode: str) -> Run:
    pytest.importorskip("torch")
    return run_script(tmp_path, source, env, mode=mode, extra_path=(REALTORCH,), standin=False)


@pytest.mark.parametrize(
    ("source", "source_given", "optimizer_steps"),
    [
        (HF_TRAINER, False, 1),
        (LIGHTNING, False, 1),
        (ACCELERATE, True, 1),
        (GAN, False, 2),
        (COMPILED, False, 1),
    ],
    ids=["transformers-trainer", "lightning-trainer", "accelerate-loop", "gan", "compiled"],
)
def test_each_range_holds_the_step_the_library_logs(
    tmp_path: Path, source: str, source_given: bool, optimizer_steps: int
) -> None:
    env = window(5, 8, TOKENIZERS_PARALLELISM="false", **(found(source) if source_given else {}))
    result = run(tmp_path, source, env, "hook")
    assert result.recorded == ["step 5", "step 6", "step 7", "step 8"], result.stderr
    assert not result.mismatched, result.mismatched
    assert result.outside_marks == 0
    for n in (5, 6, 7, 8):
        marks = [e for e in result.steps[f"step {n}"] if e.startswith("mark ")]
        assert len(marks) == optimizer_steps, (n, marks)
    assert result.numbering[0].startswith(f"per_step={optimizer_steps} ")


@pytest.mark.parametrize("source", [HF_TRAINER, LIGHTNING], ids=["transformers", "lightning"])
def test_a_library_loop_patched_with_its_callback(tmp_path: Path, source: str) -> None:
    result = run(tmp_path, source, window(5, 8), "patch")
    assert result.recorded == ["step 5", "step 6", "step 7", "step 8"], result.stderr
    assert not result.mismatched, result.mismatched
    assert result.numbering[0].endswith(
        "counter=the number given to window.open() at the top of the patched loop"
    )


@pytest.mark.parametrize("source_given", [False, True], ids=["zero-patch", "source"])
def test_a_new_optimizer_mid_run_keeps_the_window_and_the_numbering(
    tmp_path: Path, source_given: bool
) -> None:
    """Twenty steps with one AdamW, twenty with a new one: the window 25..29 lies in the second
    phase and opens (it recorded nothing before: the two optimizers were taken for a cycle).
    Each range holds the step the script prints (its global_step, 1-based, printed after the
    optimizer step): with the source, read from global_step; without, from the printed line."""
    env = window(25, 29, **(found(TWO_PHASES) if source_given else {}))
    result = run(tmp_path, TWO_PHASES, env, "hook")
    assert result.recorded == [f"step {n}" for n in range(25, 30)], result.stderr
    assert not result.mismatched, result.mismatched
    printed = "the step number the program prints (after the optimizer step)"
    assert f"steps are numbered by {printed}" in result.stderr, result.stderr
    if source_given:  # the counter compile found gives the same numbers: nothing differs
        assert "where the program prints" not in result.stderr


def test_a_phase_of_another_cycle_after_learning_stopped_is_numbered_by_its_own(
    tmp_path: Path,
) -> None:
    """Forty GAN steps (two optimizer steps each, 80 in all), then twenty of one new optimizer:
    the window 50..54 lies in the second phase, and each range holds one optimizer step, the
    one the script logs as that step (before, the helper kept counting two to a step)."""
    result = run(tmp_path, GAN_THEN_ONE, window(50, 54), "hook")
    assert result.recorded == [f"step {n}" for n in range(50, 55)], result.stderr
    assert not result.mismatched, result.mismatched
    for n in range(50, 55):
        marks = [e for e in result.steps[f"step {n}"] if e.startswith("mark ")]
        assert len(marks) == 1, (n, marks)


@pytest.mark.parametrize("mode", ["hook", "patch"])
def test_an_ignite_engine_is_numbered_as_its_handlers_log(tmp_path: Path, mode: str) -> None:
    """PyTorch-Ignite's Engine owns the loop (create_supervised_trainer: no optimizer step in
    the script): the helper reads engine.state.iteration (zero-patch), or the patch attaches an
    ITERATION_STARTED handler; each range holds the iteration its handler logs, across epochs."""
    result = run(tmp_path, IGNITE, window(5, 8), mode)
    assert result.recorded == ["step 5", "step 6", "step 7", "step 8"], result.stderr
    assert not result.mismatched, result.mismatched


@pytest.mark.parametrize("mode", ["hook", "patch"])
def test_lightning_manual_optimization_with_two_optimizers_is_numbered_by_batches(
    tmp_path: Path, mode: str
) -> None:
    """A Lightning GAN with manual optimization: trainer.global_step counts both optimizers'
    steps (2 a batch); its loggers' step counts batches. Each range holds one batch, both
    optimizer steps, numbered as the loggers number it, by Lightning's own count."""
    result = run(tmp_path, LIGHTNING_MANUAL, window(5, 8), mode)
    if mode == "hook":  # Lightning's own count, not a fall-back to the helper's
        said = "steps are numbered by fit_loop.epoch_loop._batches_that_stepped (Lightning"
        assert said in result.stderr, result.stderr
    assert result.recorded == ["step 5", "step 6", "step 7", "step 8"], result.stderr
    assert not result.mismatched, result.mismatched
    for n in (5, 6, 7, 8):
        assert len([e for e in result.steps[f"step {n}"] if e.startswith("mark ")]) == 2
