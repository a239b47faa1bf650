"""The step loop and step numbering nsysgen.patching.find gets for the loop shapes users hit:
one small script per shape, the step loop marked `# step loop`. Each case asserts the loop's
line, `step` (the number at the top of an iteration), `at_step` (read in the frame of `scope`
while the optimizer steps) and the accumulation form."""

from __future__ import annotations

import ast
import textwrap

import pytest

from nsysgen.patching import step_loop as f
from nsysgen.patching.patch import PatchError, analyse
from nsysgen.patching.step_loop import StepLoop


def script(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def marked(source: str) -> int:
    """The line that says `# step loop`."""
    lines = [n for n, line in enumerate(source.splitlines(), 1) if line.endswith("# step loop")]
    assert len(lines) == 1, lines
    return lines[0]


def shape(found: StepLoop) -> tuple[int, str | None, str | None, str, str]:
    return found.node.lineno, found.step, found.at_step, found.scope, found.accumulation


def numbering(found: StepLoop) -> tuple[int, str | None, str | None, str, str]:
    return found.node.lineno, found.step, found.at_step, found.scope, found.counter


def check(source: str, step: str | None, at_step: str | None, scope: str, form: str) -> StepLoop:
    found = analyse(source)
    assert shape(found) == (marked(source), step, at_step, scope, form)
    assert found.accumulation in f.ACCUMULATIONS
    for expression in (found.step, found.at_step):
        if expression is not None:
            ast.parse(expression, mode="eval")
    return found


# 1. Accumulation by `continue`: the loop variable counts micro-batches, the counter steps.
CONTINUE = script("""
    import torch

    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    global_step = 0
    for micro_step, batch in enumerate(loader):  # step loop
        loss = model(batch).sum() / 4
        loss.backward()
        if (micro_step + 1) % 4 != 0:
            continue
        optimizer.step()
        optimizer.zero_grad()
        global_step += 1
""")


def test_continue_accumulation_numbers_by_the_counter() -> None:
    found = check(CONTINUE, "global_step", "global_step", "<module>", f.CONTINUE)
    assert found.counter == f.COUNTER
    assert found.site.block is not None and found.site.block[0].lineno == marked(CONTINUE) + 5


def test_continue_accumulation_without_a_counter_numbers_by_the_optimizer() -> None:
    source = CONTINUE.replace("    global_step += 1\n", "")
    found = check(source, None, None, "<module>", f.CONTINUE)
    assert found.counter == f"{f.OPTIMIZER_COUNT} (the loop counts micro-batches)"


def test_a_continue_before_backward_is_not_accumulation() -> None:
    # Skipping batches (a resume, a bad batch) before the backward is no gradient accumulation.
    source = script("""
        for step, batch in enumerate(loader):  # step loop
            if step % 2 == 1:
                continue
            loss = model(batch)
            loss.backward()
            optimizer.step()
    """)
    check(source, "step", "step", "<module>", f.NO_ACCUMULATION)


# 2. A counter incremented after the optimizer step and logged after that (Hugging Face style).
INCREMENT_THEN_LOG = script("""
    global_step = 0
    while global_step < max_steps:  # step loop
        loss = model(next(batches)).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        global_step += 1
        LOG
""")


@pytest.mark.parametrize(
    "log",
    [
        'print(f"step {global_step}: loss {loss.item():.3f}")',
        'logger.info("step %d loss %f", global_step, loss.item())',
        "logger.info('step {} loss {}'.format(global_step, loss.item()))",
        "progress_bar.set_postfix(step=global_step, loss=loss.item())",
        'wandb.log({"loss": loss.item()}, step=global_step)',
        'if global_step % 10 == 0:\n        accelerator.log({"step": global_step})',
        'metrics = {"loss": loss.item(), "step": global_step}\n    writer.log_dict(metrics)',
    ],
)
def test_a_counter_logged_after_its_increment_numbers_by_the_value_logged(log: str) -> None:
    source = INCREMENT_THEN_LOG.replace("LOG", log)
    found = check(source, "global_step + 1", "global_step + 1", "<module>", f.NO_ACCUMULATION)
    assert found.counter == f.COUNTER_LOGGED


@pytest.mark.parametrize(
    "source",
    [
        # Logged before its increment: the value read while the optimizer steps.
        INCREMENT_THEN_LOG.replace("    global_step += 1\n    LOG", "    print(global_step)\n")
        + "    global_step += 1\n",
        # Not logged at all, or only in a computation (not the counter as it stands).
        INCREMENT_THEN_LOG.replace("LOG", "save(f'ckpt-{global_step}')"),
        INCREMENT_THEN_LOG.replace("LOG", "print(global_step * accumulation)"),
    ],
)
def test_a_counter_not_logged_after_its_increment_keeps_its_value(source: str) -> None:
    found = check(source, "global_step", "global_step", "<module>", f.NO_ACCUMULATION)
    assert found.counter == f.COUNTER


def test_a_counter_incremented_before_the_optimizer_step_is_one_more_there() -> None:
    source = script("""
        class Trainer:
            def train(self):
                while self.step < self.max_steps:  # step loop
                    self.step += 1
                    self.train_step(next(self.batches))
                    print(f"step {self.step}")

            def train_step(self, batch):
                self.model(batch).sum().backward()
                self.optimizers.step()
    """)
    found = check(source, "self.step + 1", "self.step", "train", f.NO_ACCUMULATION)
    assert found.counter == f.COUNTER_BEFORE


# 3. DeepSpeed engines step every micro-batch and accumulate inside.
DEEPSPEED = script("""
    import deepspeed

    def main():
        model_engine, optimizer, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config="ds_config.json"
        )
        for epoch in range(3):
            for step, batch in enumerate(loader):  # step loop
                loss = model_engine(batch)
                model_engine.backward(loss)
                model_engine.step()
                LOG

    main()
""")


def test_a_deepspeed_engine_numbers_by_the_optimizer() -> None:
    found = check(DEEPSPEED.replace("LOG", "pass"), None, None, "main", f.ENGINE)
    assert found.counter == (
        f"{f.OPTIMIZER_COUNT} (the loop counts micro-batches; the loop's index restarts every "
        "epoch)"
    )


def test_an_engine_is_known_by_its_name_too() -> None:
    # Without deepspeed.initialize the name says engine: `engine`, `model_engine`.
    source = DEEPSPEED.replace("deepspeed.initialize(", "build_engine(")
    check(source.replace("LOG", "pass"), None, None, "main", f.ENGINE)


def test_a_loop_counter_does_not_number_engine_micro_batches() -> None:
    source = DEEPSPEED.replace("LOG", "micro_steps += 1")
    check(source, None, None, "main", f.ENGINE)


def test_the_engines_global_steps_number_steps_where_the_script_reads_them() -> None:
    # DeepSpeed increments global_steps after each optimizer step (engine.py, _take_model_step):
    # logged after engine.step(), it is one more than while the optimizer steps.
    source = DEEPSPEED.replace("LOG", 'print(f"step {model_engine.global_steps}")')
    expected = "model_engine.global_steps + 1"
    found = check(source, expected, expected, "main", f.ENGINE)
    assert found.counter == f.ENGINE_COUNTER_LOGGED
    source = DEEPSPEED.replace("LOG", "if model_engine.global_steps >= 100:\n                break")
    found = check(
        source, "model_engine.global_steps", "model_engine.global_steps", "main", f.ENGINE
    )
    assert found.counter == f.ENGINE_COUNTER


def test_an_engine_counter_at_the_accumulation_boundary_numbers_steps() -> None:
    source = script("""
        global_step = 0

        def train(model, loader):
            global global_step
            for _, batch in enumerate(loader):  # step loop
                loss = model.network(batch)
                model.network.backward(loss)
                if model.network.is_gradient_accumulation_boundary():
                    report_step_metrics(loss, global_step)
                    model.network.step()
                    global_step += 1
                else:
                    model.network.step()

        model.network, optimizer, _, _ = deepspeed.initialize(model=model.network)
        for epoch in range(10):
            train(model, loader)
    """)
    check(source, "global_step", "global_step", "train", f.ENGINE)


# 4. A loop target that is an attribute (nanotron).
def test_an_attribute_loop_target_numbers_steps() -> None:
    source = script("""
        class Trainer:
            def train(self):
                for self.iteration_step in range(self.start + 1, self.total + 1):  # step loop
                    outputs = self.training_step(next(self.batches))

            def training_step(self, batch):
                self.model(batch).sum().backward()
                self.optimizer.step()
    """)
    found = check(source, "self.iteration_step", "self.iteration_step", "train", f.NO_ACCUMULATION)
    assert found.counter == f.LOOP_VARIABLE


# 5. zip(loader, range(start, end)) (detectron2's plain_train_net.py).
def test_the_range_of_a_zip_numbers_steps() -> None:
    source = script("""
        def do_train(model, optimizer, data_loader, start_iter, max_iter):
            for data, iteration in zip(data_loader, range(start_iter, max_iter)):  # step loop
                losses = sum(model(data).values())
                optimizer.zero_grad()
                losses.backward()
                optimizer.step()

        do_train(model, optimizer, loader, 0, 100)
    """)
    check(source, "iteration", "iteration", "do_train", f.NO_ACCUMULATION)


# 6. A counter in `if accelerator.sync_gradients:` after `with accelerator.accumulate(...)`.
DIFFUSERS = script("""
    global_step = 0
    for epoch in range(first_epoch, args.num_train_epochs):
        for step, batch in enumerate(train_dataloader):  # step loop
            with accelerator.accumulate(unet):
                loss = unet(batch).mean()
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                progress_bar.update(1)
                global_step += 1
                LOG
            overall += 1
""")


def test_a_counter_synced_with_the_accumulation_numbers_steps() -> None:
    found = check(DIFFUSERS.replace("LOG", "pass"), "global_step", "global_step", "<module>",
                  f.ACCUMULATE)  # fmt: skip
    assert found.site.when == "accelerator.sync_gradients"
    logged = DIFFUSERS.replace("LOG", 'accelerator.log({"train_loss": 0.0}, step=global_step)')
    expected = "global_step + 1"
    check(logged, expected, expected, "<module>", f.ACCUMULATE)


def test_an_optimizer_step_under_sync_gradients_is_accumulation() -> None:
    source = script("""
        for step, batch in enumerate(loader):  # step loop
            accelerator.backward(model(batch))
            if accelerator.sync_gradients:
                optimizer.step()
                completed_steps += 1
    """)
    check(source, "completed_steps", "completed_steps", "<module>", f.SYNC_GRADIENTS)


# 7. A counter inside `if not self._optimizer_in_bwd:` inside the accumulation block (torchtune).
TORCHTUNE = script("""
    class Recipe:
        def setup(self):
            SETUP

        def train(self):
            for curr_epoch in range(self.epochs_run, self.total_epochs):
                for idx, batch in enumerate(self._dataloader):  # step loop
                    loss = self._loss_step(batch)
                    loss.backward()
                    if (idx + 1) % self._gradient_accumulation_steps == 0:
                        if not self._optimizer_in_bwd:
                            self._optimizer.step()
                            self._optimizer.zero_grad(set_to_none=True)
                            self.global_step += 1
                        self._lr_scheduler.step()
""")


def test_a_counter_behind_a_setting_inside_the_accumulation_block_numbers_steps() -> None:
    source = TORCHTUNE.replace("SETUP", "self._optimizer = build_optimizer(self._model)")
    found = check(source, "self.global_step", "self.global_step", "train", f.IF_BLOCK)
    # The step is the accumulation block, not the branch the setting picks inside it.
    assert found.site.block is not None
    assert found.site.block[0].lineno == marked(source) + 4


# 8. Optimizer in backward: the optimizer steps inside gradient hooks.
def test_optimizer_in_backward_as_an_option_is_detected() -> None:
    source = TORCHTUNE.replace(
        "SETUP", "training.register_optim_in_bwd_hooks(model=self._model, optim_dict=optims)"
    )
    form = f"{f.IN_BACKWARD}, else {f.IF_BLOCK}"
    check(source, "self.global_step", "self.global_step", "train", form)


def test_optimizer_in_backward_by_hooks_only_is_detected() -> None:
    source = script("""
        import torch

        optimizer_dict = {p: torch.optim.Adam([p]) for p in model.parameters()}

        def optimizer_hook(parameter):
            optimizer_dict[parameter].step()
            optimizer_dict[parameter].zero_grad()

        for p in model.parameters():
            p.register_post_accumulate_grad_hook(optimizer_hook)

        for step in range(10):  # step loop
            loss = model(torch.randn(8, 4)).sum()
            loss.backward()
    """)
    check(source, "step", "step", "<module>", f.IN_BACKWARD)
    # A counter after the backward is incremented after the optimizer steps (inside it).
    source = source.replace("for step in range(10):", "while step < 10:") + "    step += 1\n"
    check(source, "step", "step", "<module>", f.IN_BACKWARD)


# 9. The backward of a pipeline-parallel branch runs in booster.execute_pipeline (ColossalAI).
def test_a_pipeline_branch_reaches_backward_through_execute_pipeline() -> None:
    source = script("""
        def main():
            if use_pipeline:
                data_iter = iter(dataloader)
                for step in tqdm(range(len(dataloader))):  # step loop
                    outputs = booster.execute_pipeline(
                        data_iter, model, criterion, optimizer, return_loss=True
                    )
                    optimizer.step()
                    optimizer.zero_grad()
            else:
                for step, batch in enumerate(tqdm(dataloader)):
                    loss = model(**batch)[0]
                    booster.backward(loss, optimizer)
                    optimizer.step()
                    optimizer.zero_grad()

        main()
    """)
    line = marked(source)
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert str(error.value) == (
        f"found several step loops: line {line} (in main), line {line + 7} (in main); set "
        "loop_line to the line of the step loop's `for` or `while`"
    )
    found = analyse(source, loop_line=line)
    assert shape(found) == (line, "step", "step", "main", f.NO_ACCUMULATION)


# 10. The step loop runs once per epoch: its index numbers no steps.
TRAIN_ONE_EPOCH = script("""
    def train_one_epoch(model, criterion, data_loader, optimizer, epoch):
        for i, (samples, targets) in enumerate(data_loader):  # step loop
            loss = criterion(model(samples), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i % 10 == 0:
                print(f"epoch {epoch} iteration {i} loss {loss.item()}")
""")


UNLOGGED = TRAIN_ONE_EPOCH.replace("epoch {epoch} iteration {i} loss", "loss")


def test_an_epoch_loop_in_another_file_numbers_by_the_optimizer() -> None:
    found = check(UNLOGGED, None, None, "train_one_epoch", f.NO_ACCUMULATION)
    assert found.counter == (
        f"{f.OPTIMIZER_COUNT} (the loop's index restarts whenever train_one_epoch, called from "
        "another file, runs)"
    )
    # Where the log shows the index that restarts, the compile asks instead (with the
    # caller's epoch, which this file cannot see start).
    with pytest.raises(PatchError) as asked:
        analyse(TRAIN_ONE_EPOCH)
    assert asked.value.setting == "step_expr"
    assert "shows each step as `i` (line 8), which restarts whenever train_one_epoch, called " in (
        str(asked.value)
    )
    assert str(asked.value).endswith(
        "(candidates: `epoch * len(data_loader) + i` (where epoch counts from 0))"
    )


def test_an_epoch_loop_in_this_file_numbers_by_the_optimizer() -> None:
    caller = "\nfor epoch in range(10):\n    train_one_epoch(m, c, d, o, epoch)\n"
    found = check(UNLOGGED + caller, None, None, "train_one_epoch", f.NO_ACCUMULATION)
    assert found.counter == f"{f.OPTIMIZER_COUNT} (the loop's index restarts every epoch)"
    with pytest.raises(PatchError, match=r"`i` \(line 8\), which restarts every epoch;"):
        analyse(TRAIN_ONE_EPOCH + caller)


def test_a_loop_this_file_runs_once_numbers_by_its_index() -> None:
    source = TRAIN_ONE_EPOCH + "\ntrain_one_epoch(m, c, d, o, 0)\n"
    check(source, "i", "i", "train_one_epoch", f.NO_ACCUMULATION)


def test_a_micro_batch_loop_inside_the_step_is_named() -> None:
    source = script("""
        iter_num = 0
        while True:  # step loop
            for micro_step in range(gradient_accumulation_steps):
                loss = model(X, Y) / gradient_accumulation_steps
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            if iter_num % log_interval == 0:
                print(f"iter {iter_num}: loss {loss.item():.4f}")
            iter_num += 1
    """)
    check(source, "iter_num", "iter_num", "<module>", f.MICRO_LOOP)


def test_step_expr_is_read_at_the_step_too() -> None:
    found = analyse(CONTINUE, step_expr="global_step")
    assert (found.step, found.at_step, found.counter) == ("global_step", "global_step", "step_expr")


def test_a_return_before_the_step_in_a_function_the_loop_calls_is_accumulation() -> None:
    source = script("""
        def optimizer_step_and_log():
            global global_step
            if micro_steps % accumulation != 0:
                return
            optimizer.step()
            optimizer.zero_grad()
            global_step += 1

        global_step = micro_steps = 0
        for batch in loader:  # step loop
            model(batch).sum().backward()
            micro_steps += 1
            optimizer_step_and_log()
    """)
    check(source, "global_step", "global_step", "<module>", f.CONTINUE)


def test_a_name_logged_by_a_function_the_loop_calls_is_that_functions_own() -> None:
    # Megatron: save_checkpoint(iteration) logs its own parameter, not the loop's counter; the
    # loop logs its counter after the increment (training_log), and an evaluation at the top of
    # the loop reports the step about to run.
    source = script("""
        def save_checkpoint(iteration):
            print(f"saving checkpoint at iteration {iteration}")

        def train(model, optimizer):
            iteration = 0
            while iteration < train_iters:  # step loop
                if iteration % eval_interval == 0:
                    print(f"evaluating before iteration {iteration}")
                model(next(data)).sum().backward()
                optimizer.step()
                save_checkpoint(iteration)
                iteration += 1
                training_log(loss, iteration)

        train(model, optimizer)
    """)
    check(source, "iteration + 1", "iteration + 1", "train", f.NO_ACCUMULATION)


def test_several_optimizers_are_named_in_order() -> None:
    source = (
        "import torch\nd, g = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)\n"
        "opt_d = torch.optim.Adam(d.parameters())\nopt_g = torch.optim.Adam(g.parameters())\n"
        "scaler = torch.amp.GradScaler()\n"
        "for i in range(10):\n    d(i).backward()\n    opt_d.step()\n"
        "    g(i).backward()\n    scaler.step(opt_g)\n"
    )
    assert analyse(source).optimizers == ("opt_d", "opt_g")
    assert analyse(
        source.replace("    g(i).backward()\n    scaler.step(opt_g)\n", "")
    ).optimizers == ("opt_d",)
