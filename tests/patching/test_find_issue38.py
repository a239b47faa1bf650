"""Issue 38, the compile side: step numbers as the script logs them where the loop's index or a
counter does not number steps (an index that restarts every epoch or counts micro-batches, a
per-epoch counter, a 1-based number computed only when logging, a number assigned after several
optimizer steps), the step function passed in or holding the counter as a parameter, schedulers
and weight averages that are no optimizers, CUDA graph captures refused, and training loops
that live in libraries. Corpus scripts of each shape are checked here where they are refused or
hand their loop to a library (tests/patching/test_patch_corpus.py checks the others); small
scripts of each shape run under the torch stand-in."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nsysgen.patching import find as f
from nsysgen.patching.graphs import REFUSAL
from nsysgen.patching.library import LIGHTNING, TRANSFORMERS, LibraryLoop, library_loop
from nsysgen.patching.logged import step_arguments
from nsysgen.patching.patch import PatchError, analyse
from nsysgen.patching.syntax import Function
from tests.conftest import REPO
from tests.patching.test_find_shapes import marked, script
from tests.stepruns import Run, run_script

CORPUS = REPO / "tests" / "training_scripts" / "corpus"
ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "corpus.json").read_text())
REFUSED = [entry for entry in ENTRIES if "refused" in entry]
LIBRARY = [entry for entry in ENTRIES if "library" in entry]


def numbering(found: f.StepLoop) -> tuple[int, str | None, str | None, str, str]:
    return found.node.lineno, found.step, found.at_step, found.scope, found.counter


def corpus(name: str) -> str:
    with (CORPUS / name).open(encoding="utf-8", newline="") as file:
        return file.read()


# The corpus: refused scripts and library loops -------------------------------------------------


@pytest.mark.parametrize("entry", REFUSED, ids=[e["file"] for e in REFUSED])
def test_corpus_refusals(entry: dict[str, Any]) -> None:
    source = corpus(entry["file"])
    for loop_line in (None, *(loop.lineno for loop in f.Script(ast.parse(source), source).loops)):
        with pytest.raises(PatchError) as error:
            analyse(source, loop_line)
        assert str(error.value) == entry["refused"]
        assert error.value.setting is None  # the user fixes workload.<kind>.source


@pytest.mark.parametrize("entry", LIBRARY, ids=[e["file"] for e in LIBRARY])
def test_corpus_library_loops(entry: dict[str, Any]) -> None:
    source = corpus(entry["file"])
    found = library_loop(ast.parse(source), source)
    assert found is not None
    expected = entry["library"]
    assert (found.library.key, found.line, found.call, found.trainer) == (
        expected["key"],
        expected["line"],
        expected["call"],
        expected["trainer"],
    )
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert "found no training loop" not in str(error.value)
    assert str(error.value) == str(f.LibraryLoopError(found))
    assert error.value.setting is None


def test_every_new_corpus_script_says_what_it_logs() -> None:
    for entry in REFUSED + LIBRARY:
        assert entry["logged"], entry["file"]
    assert {e["library"]["key"] for e in LIBRARY} == {TRANSFORMERS.key, LIGHTNING.key}


# 1. An index that restarts on every call of an epoch function --------------------------------

EPOCH_FUNCTION = script("""
    import itertools


    def train_one_epoch(model, optimizer, data_iter, epoch, step):
        for i in itertools.count():  # step loop
            batch = next(data_iter, None)
            if batch is None:
                break
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if i % 100 == 0:
                print(f"epoch {epoch} step {step + i}")
        return step + i
""")


def test_an_index_that_restarts_every_call_is_no_step_number() -> None:
    # The function is given the caller's running count: its own index starts at 0 every epoch.
    silent = EPOCH_FUNCTION.replace("        if i % 100 == 0:\n", "").replace(
        '            print(f"epoch {epoch} step {step + i}")\n', ""
    )
    found = analyse(silent)
    assert numbering(found) == (
        marked(silent),
        None,
        None,
        "train_one_epoch",
        f"{f.OPTIMIZER_COUNT} (the loop's index restarts whenever train_one_epoch runs)",
    )


def test_the_number_it_logs_with_the_callers_count_numbers_steps() -> None:
    found = analyse(EPOCH_FUNCTION)
    line = marked(EPOCH_FUNCTION)
    assert numbering(found) == (line, "step + i", "step + i", "train_one_epoch", f.LOGGED)


def test_a_start_offset_is_no_running_count() -> None:
    # `start_step` says where the run starts: the function runs once, its index numbers steps.
    source = EPOCH_FUNCTION.replace("epoch, step)", "epoch_count, start_step)")
    source = source.replace("train_one_epoch", "train").replace("{step + i}", "{i}")
    source = source.replace("{epoch}", "{epoch_count}")
    assert numbering(analyse(source))[1:] == ("i", "i", "train", f.LOOP_VARIABLE)


# 2. A micro-batch index, the step logged as index // accumulation ----------------------------

MICRO_BATCHES = script("""
    import torch

    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    accum_freq, batches = 3, 12
    for epoch in range(2):
        for i, batch in enumerate(range(batches)):  # step loop
            i_accum = i // accum_freq
            step = (batches // accum_freq) * epoch + i_accum
            loss = model(batch) / accum_freq
            loss.backward()
            if (i + 1) % accum_freq != 0:
                continue
            optimizer.step()
            optimizer.zero_grad()
            print("@@ log", step)
            writer.add_scalar("train/loss", loss.item(), step)
""")


def test_a_step_computed_from_a_micro_batch_index_numbers_steps() -> None:
    found = analyse(MICRO_BATCHES)
    assert numbering(found) == (marked(MICRO_BATCHES), None, "step", "<module>", f.LOGGED)
    assert found.accumulation == f.CONTINUE


# 3. A per-epoch counter beside the checkpointed one ------------------------------------------

PER_EPOCH_COUNTER = script("""
    import torch


    class Trainer:
        def __init__(self, model, loader, epochs):
            self.model, self.loader, self.epochs = model, loader, epochs
            self.optimizer = torch.optim.AdamW(model.parameters())
            self.global_step = 0

        def train(self):
            for epoch in range(self.epochs):
                self.train_epoch(epoch)
                torch.save({"global_step": self.global_step}, "ckpt.pt")

        def train_epoch(self, epoch):
            self.step = 0
            for batch in self.loader:  # step loop
                loss = self.model(batch).sum()
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.step += 1
                GLOBAL
                print(f"epoch {epoch} batch {self.step}")
""")


def test_a_counter_reset_every_epoch_numbers_no_steps() -> None:
    source = PER_EPOCH_COUNTER.replace("GLOBAL\n", "\n")
    found = analyse(source)
    assert numbering(found) == (
        marked(source),
        None,
        None,
        "train_epoch",
        f"{f.OPTIMIZER_COUNT} (self.step restarts every epoch)",
    )


def test_the_checkpointed_counter_is_taken_over_the_per_epoch_one() -> None:
    for name in ("global_step", "iteration"):
        source = PER_EPOCH_COUNTER.replace("GLOBAL", f"self.{name} += 1")
        source = source.replace("global_step", name)
        found = analyse(source)
        assert numbering(found)[1:] == (f"self.{name}", f"self.{name}", "train_epoch", f.COUNTER)


def test_a_reset_in_an_epoch_function_of_another_file_is_seen_too() -> None:
    source = PER_EPOCH_COUNTER.replace("GLOBAL\n", "\n")
    source = source.replace("                self.train_epoch(epoch)\n", "                pass\n")
    assert "restarts every epoch" in analyse(source).counter


# 4. 1-based numbers the script computes only when it logs ------------------------------------

LBFGS = script("""
    import torch

    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1)
    for k in range(50):  # step loop
        def closure():
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        LOG
""")


@pytest.mark.parametrize(
    "log",
    [
        'print(f"Iteration {k + 1}, loss {loss.item():.4f}")',
        'print("Iteration %d loss %f" % (k + 1, loss.item()))',
        'logger.info("Iteration {} loss {}".format(k + 1, loss.item()))',
        'logger.info("iteration %d: loss %f", k + 1, loss.item())',
        'wandb.log({"loss": loss.item()}, step=k + 1)',
    ],
)
def test_a_closure_optimizers_iteration_is_numbered_as_logged(log: str) -> None:
    source = LBFGS.replace("LOG", log)
    assert numbering(analyse(source)) == (marked(source), "k + 1", "k + 1", "<module>", f.LOGGED)


@pytest.mark.parametrize(
    "log",
    [
        'print(f"Iteration {k}, loss {loss.item():.4f}")',  # the index itself
        'print(f"epoch {k + 1}, loss {loss.item():.4f}")',  # not labelled as a step
        'print(f"Iteration {k + 1}"); print(f"step {k + 2}")',  # two numbers: no guess
    ],
)
def test_the_loop_variable_stays_unless_a_log_says_otherwise(log: str) -> None:
    source = LBFGS.replace("LOG", log)
    assert numbering(analyse(source))[1:4] == ("k", "k", "<module>")


def test_a_global_number_computed_only_when_logging_numbers_steps() -> None:
    # The TensorBoard step of PyTorch's "Training with PyTorch" tutorial (and DLRM's log_iter).
    source = script("""
        def train_one_epoch(epoch_index, tb_writer):
            for i, data in enumerate(training_loader):  # step loop
                inputs, labels = data
                optimizer.zero_grad()
                loss = loss_fn(model(inputs), labels)
                loss.backward()
                optimizer.step()
                if i % 1000 == 999:
                    print('  batch {} loss: {}'.format(i + 1, loss.item()))
                    tb_x = epoch_index * len(training_loader) + i + 1
                    tb_writer.add_scalar('Loss/train', loss.item(), tb_x)

        for epoch in range(EPOCHS):
            train_one_epoch(epoch, writer)
    """)
    expected = "epoch_index * len(training_loader) + i + 1"
    found = analyse(source)
    assert numbering(found) == (marked(source), expected, expected, "train_one_epoch", f.LOGGED)


def test_a_per_epoch_number_is_no_step_number() -> None:
    # `i + 1` restarts every epoch: logged or not, it numbers no steps.
    source = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):  # step loop
                model(batch).sum().backward()
                optimizer.step()
                print(f"epoch {epoch} step {i + 1}")
    """)
    assert numbering(analyse(source))[1:3] == (None, None)


# 5. Several optimizers, the iteration's number assigned after the steps ----------------------

CYCLEGAN = script("""
    import torch

    model = torch.nn.Linear(4, 4)
    optimizer_G = torch.optim.Adam(model.parameters())
    optimizer_D_A = torch.optim.Adam(model.parameters())
    optimizer_D_B = torch.optim.Adam(model.parameters())
    dataloader = range(4)
    for epoch in range(3):
        for i, batch in enumerate(dataloader):  # step loop
            model(batch).backward()
            optimizer_G.step()
            model(batch).backward()
            optimizer_D_A.step()
            model(batch).backward()
            optimizer_D_B.step()
            batches_done = epoch * len(dataloader) + i
            print("@@ log", batches_done)
""")


def test_a_number_assigned_after_several_optimizer_steps_is_read_as_its_expression() -> None:
    expected = "epoch * len(dataloader) + i"
    found = analyse(CYCLEGAN)
    assert numbering(found) == (marked(CYCLEGAN), expected, expected, "<module>", f.COMPUTED)


def test_a_number_changed_between_the_step_and_its_log_is_not_taken() -> None:
    source = CYCLEGAN.replace("        batches_done =", "        i = i + 0\n        bd =")
    source = source.replace('@@ log", batches_done', '@@ log", bd')
    assert numbering(analyse(source))[1:3] == (None, None)


# 6. Schedulers, weight averages, scalers are no optimizers ----------------------------------

NOT_OPTIMIZERS = script("""
    import torch

    optimizer = torch.optim.AdamW(model.parameters())
    lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, 0.1, total_steps=100)
    swa_scheduler = torch.optim.swa_utils.SWALR(optimizer, swa_lr=0.05)
    ema_optimizer = WeightEMA(model, ema_model)
    opt_param_scheduler = get_scheduler(optimizer)
    scaler = torch.amp.GradScaler()
    for step in range(100):  # step loop
        scaler.scale(model(step)).backward()
        scaler.step(optimizer)
        scaler.update()
        lr_scheduler.step()
        swa_scheduler.step()
        ema_optimizer.step()
        opt_param_scheduler.step(increment=1)
        model_ema.step(model)
        optimizer.zero_grad()
""")


def test_schedulers_and_weight_averages_are_no_optimizers() -> None:
    found = analyse(NOT_OPTIMIZERS)
    assert found.optimizers == ("optimizer",)
    assert numbering(found)[1:] == ("step", "step", "<module>", f.LOOP_VARIABLE)


def test_a_loop_that_only_steps_a_scheduler_is_no_step_loop() -> None:
    source = NOT_OPTIMIZERS + "for epoch in range(3):\n    lr_scheduler.step()\n"
    assert analyse(source).node.lineno == marked(NOT_OPTIMIZERS)


# 7. The step function passed in; the counter a parameter --------------------------------------

PASSED_IN = script("""
    def train_step(model, optimizer, batch, step):
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step}: loss {loss.item()}")


    def train(model, optimizer, loader, step_fn):
        global_step = 0
        for batch in loader:  # step loop
            step_fn(model, optimizer, batch, global_step)
            global_step += 1


    train(model, optimizer, loader, train_step)
""")


def test_a_step_function_passed_in_is_followed() -> None:
    found = analyse(PASSED_IN)
    assert numbering(found) == (marked(PASSED_IN), "global_step", "global_step", "train", f.COUNTER)
    assert found.optimizers == ("optimizer",)
    by_keyword = PASSED_IN.replace("loader, train_step)", "loader, step_fn=train_step)")
    assert analyse(by_keyword).optimizers == ("optimizer",)


def test_a_step_function_passed_in_from_another_file_is_a_step() -> None:
    # No caller here: the parameter's name says it runs a training step.
    source = PASSED_IN.split("\n\n\n")[1] + "\n"
    found = analyse(source)
    assert numbering(found) == (marked(source), "global_step", "global_step", "train", f.COUNTER)
    assert found.optimizers == ()
    with pytest.raises(PatchError, match="found no training loop"):
        analyse(source.replace("step_fn", "callback"))


def test_a_step_function_with_the_counter_as_a_parameter_numbers_by_it() -> None:
    source = PASSED_IN.split("\n\n\n", 1)[0] + "\n"
    found = analyse(source)
    assert isinstance(found.node, Function)
    assert numbering(found) == (1, "step", "step", "train_step", f.PARAMETER)
    method = "class Model:\n" + textwrap.indent(source.replace("(model,", "(self,"), "    ")
    assert numbering(analyse(method)) == (2, "step", "step", "train_step", f.PARAMETER)


def test_a_step_function_without_a_counter_numbers_by_the_optimizer() -> None:
    source = script("""
        class CycleGANModel:
            def optimize_parameters(self):
                self.forward()
                self.optimizer_G.zero_grad()
                self.backward_G()
                self.optimizer_G.step()
                self.optimizer_D.zero_grad()
                self.backward_D()
                self.optimizer_D.step()

            def backward_G(self):
                self.loss_G.backward()

            def backward_D(self):
                self.loss_D.backward()
    """)
    found = analyse(source)
    assert numbering(found)[1:] == (
        None,
        None,
        "optimize_parameters",
        f"{f.OPTIMIZER_COUNT} (optimize_parameters is called from another file)",
    )
    assert found.optimizers == ("self.optimizer_G", "self.optimizer_D")


def test_a_local_counter_of_a_step_function_numbers_nothing() -> None:
    # Its locals start anew every call; an attribute lasts.
    source = script("""
        def train_step(model, optimizer, batch):
            count = 0
            model(batch).sum().backward()
            optimizer.step()
            count += 1
    """)
    assert analyse(source).at_step is None
    assert analyse(source.replace("count", "model.updates")).at_step == "model.updates"


# 8. CUDA graphs ------------------------------------------------------------------------------

WHOLE_NETWORK = script("""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        for i in range(3):
            model(static_input).sum().backward()
            optimizer.step()
    with torch.cuda.graph(g):
        model(static_input).sum().backward()
        optimizer.step()
    for data in loader:
        static_input.copy_(data)
        g.replay()
""")


def test_an_optimizer_step_in_a_graph_capture_is_refused() -> None:
    expected = REFUSAL.format(capture="with torch.cuda.graph(g):", line=6)
    for loop_line, step_expr in ((None, None), (3, None), (9, "i")):
        with pytest.raises(PatchError) as error:
            analyse(WHOLE_NETWORK, loop_line, step_expr)
        assert (str(error.value), error.value.setting) == (expected, None)


def test_an_optimizer_step_reached_through_a_function_in_a_capture_is_refused() -> None:
    source = script("""
        def train_step():
            model(static_input).sum().backward()
            optimizer.step()

        with torch.cuda.graphs.graph(g, pool=pool):
            train_step()
    """)
    with pytest.raises(PatchError, match="inside a CUDA graph capture"):
        analyse(source)


def test_a_raw_capture_is_refused_too() -> None:
    source = script("""
        g.capture_begin()
        model(static_input).sum().backward()
        optimizer.step()
        g.capture_end()
        for data in loader:
            g.replay()
    """)
    expected = REFUSAL.format(capture="g.capture_begin()", line=1)
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert str(error.value) == expected


def test_an_eager_optimizer_step_after_a_replay_is_the_step() -> None:
    # Forward and backward captured, the optimizer stepped eagerly: the replay loop trains.
    source = WHOLE_NETWORK.replace("    optimizer.step()\nfor", "for")
    source = source.replace("    g.replay()\n", "    g.replay()\n    optimizer.step()\n")
    source = source.replace("for data in loader:", "for data in loader:  # step loop")
    found = analyse(source)
    assert found.node.lineno == marked(source)


def test_a_compiled_model_with_an_eager_optimizer_step_is_no_capture() -> None:
    source = script("""
        model = torch.compile(model, mode="reduce-overhead")
        for step in range(100):  # step loop
            loss = model(next(batches)).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """)
    assert numbering(analyse(source))[1:] == ("step", "step", "<module>", f.LOOP_VARIABLE)


# 9. Loops that live in libraries -------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "library", "line", "trainer"),
    [
        (
            "from transformers import Seq2SeqTrainer\n"
            "trainer = Seq2SeqTrainer(model=model)\n\ntrainer.train()\n",
            TRANSFORMERS,
            4,
            "Seq2SeqTrainer",
        ),
        ("import transformers\ntransformers.Trainer(model=m).train()\n", TRANSFORMERS, 2,
         "transformers.Trainer"),
        (
            "from transformers import Trainer\nclass MyTrainer(Trainer):\n    pass\n"
            "class Deeper(MyTrainer):\n    pass\nt = Deeper(model)\n"
            "t.train(resume_from_checkpoint=c)\n",
            TRANSFORMERS,
            7,
            "Deeper",
        ),
        ("from trl import GRPOTrainer as G\ntrainer = G(model)\ntrainer.train()\n", TRANSFORMERS,
         3, "G"),
        ("import pytorch_lightning as pl\ntrainer = pl.Trainer()\ntrainer.fit(model, dm)\n",
         LIGHTNING, 3, "pl.Trainer"),
        ("from lightning.pytorch import Trainer\nTrainer(max_epochs=1).fit(model)\n", LIGHTNING, 2,
         "Trainer"),
        ("from lightning.pytorch.cli import LightningCLI\nLightningCLI(Model, DataModule)\n",
         LIGHTNING, 2, "LightningCLI"),
    ],
)  # fmt: skip
def test_library_loops_are_recognised(source: str, library: Any, line: int, trainer: str) -> None:
    found = library_loop(ast.parse(source), source)
    assert found is not None
    assert (found.library, found.line, found.trainer) == (library, line, trainer)


@pytest.mark.parametrize(
    "source",
    [
        # A trainer of the script's own, not a library's (Lightning Fabric's example).
        "from trainer import MyCustomTrainer\ntrainer = MyCustomTrainer()\ntrainer.fit(model)\n",
        # `model.train()` is torch's, and a transformers Trainer that only evaluates.
        "from transformers import Trainer\nmodel.train()\nTrainer(model).evaluate()\n",
        # A Lightning Trainer's train() is not its loop; the CLI with run=False runs nothing.
        "import lightning as L\nL.Trainer().train()\nL.pytorch.cli.LightningCLI(M, run=False)\n",
    ],
)
def test_other_trainers_are_no_library_loops(source: str) -> None:
    assert library_loop(ast.parse(source), source) is None


def test_a_script_with_its_own_loop_keeps_it_beside_a_library_import() -> None:
    source = script("""
        from transformers import Trainer, AutoModel

        for step in range(10):  # step loop
            model(step).sum().backward()
            optimizer.step()
    """)
    assert analyse(source).node.lineno == marked(source)


def test_library_loop_api() -> None:
    source = "import lightning as L\ntrainer = L.Trainer(\n    max_epochs=1,\n)\n"
    source += "trainer.fit(\n    m\n)\n"
    found = library_loop(ast.parse(source))
    assert found == LibraryLoop(LIGHTNING, 5, "trainer.fit(m)", "L.Trainer")
    assert library_loop(ast.parse(source), source) == LibraryLoop(
        LIGHTNING, 5, "trainer.fit(", "L.Trainer"
    )
    displays = (LIGHTNING.display, TRANSFORMERS.display)
    assert displays == ("Lightning Trainer", "Hugging Face Trainer")


# Step labels in logs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "labelled"),
    [
        ('wandb.log({"loss": l}, step=s)', ["s"]),
        ('writer.add_scalar("loss", l, s)', ["s"]),
        ('logkv("step", s)', ["s"]),
        ('print("iteration: ", s, now())', ["s"]),
        ('print(f"[Epoch {e}] [Step {s}/{n}] loss {l}")', ["s"]),
        ('print("Steps : {:d}, Loss : {:4.3f}".format(s, l))', ["s"]),
        ('print("it {}/{} of epoch {}".format(j, n, k))', []),
        ('sys.stdout.write("[Batch %d/%d] [iter %d]" % (i, n, s))', ["s"]),
        ('logger.info("timestep %d epoch %d", t, e)', []),
        ('log({"global_step": s, "lr": r})', []),
    ],
)
def test_step_labels(call: str, labelled: list[str]) -> None:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    assert [ast.unparse(value) for value in step_arguments(node)] == labelled


# Behaviour: the shapes that run on a CPU, under the torch stand-in ----------------------------

WINDOW = {"NSYSGEN_PROFILE_RANKS": "0", "RANK": "0"}


def numbered_run(tmp_path: Path, source: str, mode: str, first: int, last: int, **env: str) -> Run:
    """Run `source` as train.py with the numbering compile finds for it, as a compiled setup
    passes it (NSYSGEN_PROFILE_STEP_EXPR read in NSYSGEN_PROFILE_STEP_SCOPE)."""
    found = analyse(source)
    assert found.at_step is not None
    window = {
        **WINDOW,
        "NSYSGEN_PROFILE_FIRST_STEP": str(first),
        "NSYSGEN_PROFILE_LAST_STEP": str(last),
        "NSYSGEN_PROFILE_STEP_EXPR": found.at_step,
        "NSYSGEN_PROFILE_STEP_SCOPE": f"train.py:{found.scope}",
        **env,
    }
    return run_script(tmp_path, source, window, mode=mode)


LOGGED_SHAPES = {
    # 2. micro-batches, the step computed from the index // accumulation.
    "micro-batches": (MICRO_BATCHES.replace("        writer.add_scalar", "        # writer"), {}),
    # 4. a closure optimizer, the iteration logged 1-based.
    "closure": (
        script("""
            import torch

            model = torch.nn.Linear(4, 4)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for k in range(8):
                def closure():
                    optimizer.zero_grad()
                    loss = model(k)
                    loss.backward()
                    return loss

                optimizer.step(closure)
                print("@@ log", k + 1)
                print(f"Iteration {k + 1}")
        """),
        {},
    ),
    # 4. the 1-based global number computed only when logging (DLRM's log_iter).
    "computed when logging": (
        script("""
            import torch

            model = torch.nn.Linear(4, 4)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            nbatches, k = 3, 0
            while k < 3:
                for j, batch in enumerate(range(nbatches)):
                    model(batch).backward()
                    optimizer.step()
                    log_iter = nbatches * k + j + 1
                    print("@@ log", log_iter)
                    print(f"it {j + 1} step {log_iter}")
                k += 1
        """),
        {},
    ),
    # 5. three optimizers an iteration, its number assigned after them.
    "three optimizers": (CYCLEGAN, {"NSYSGEN_PROFILE_OPTIMIZER_STEPS": "3"}),
}


@pytest.mark.parametrize("mode", ["hook", "patch"])
@pytest.mark.parametrize("shape", list(LOGGED_SHAPES))
def test_steps_are_numbered_as_the_script_logs_them(tmp_path: Path, shape: str, mode: str) -> None:
    source, env = LOGGED_SHAPES[shape]
    run = numbered_run(tmp_path, source, mode, 3, 5, **env)
    assert (run.starts, run.stops) == (1, 1), run.stderr
    assert run.recorded == ["step 3", "step 4", "step 5"], run.stderr
    assert not run.mismatched, run.mismatched


STEP_MODULE = script("""
    def train_step(model, optimizer, batch, iteration):
        model(batch).backward()
        optimizer.step()
        print("@@ log", iteration)
""")
DRIVER = script("""
    import torch

    from steps import train_step

    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    iteration = 100
    for epoch in range(2):
        for batch in range(4):
            train_step(model, optimizer, batch, iteration)
            iteration += 1
""")


def test_a_step_function_of_another_file_is_numbered_by_its_parameter(tmp_path: Path) -> None:
    found = analyse(STEP_MODULE)
    assert (found.at_step, found.scope, found.counter) == ("iteration", "train_step", f.PARAMETER)
    (tmp_path / "steps.py").write_text(STEP_MODULE)
    env = {
        **WINDOW,
        "NSYSGEN_PROFILE_FIRST_STEP": "102",
        "NSYSGEN_PROFILE_LAST_STEP": "105",
        "NSYSGEN_PROFILE_STEP_EXPR": found.at_step or "",
        "NSYSGEN_PROFILE_STEP_SCOPE": f"steps.py:{found.scope}",
    }
    run = run_script(tmp_path, DRIVER, env, mode="hook")
    assert run.recorded == [f"step {n}" for n in range(102, 106)], run.stderr
    assert not run.mismatched
