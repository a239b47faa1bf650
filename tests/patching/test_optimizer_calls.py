"""Schedulers, weight averages and loss scalers are no optimizers, however they are built or
named (nsysgen/patching/optimizer_calls.py)."""

from __future__ import annotations

from nsysgen.patching import step_loop as f
from nsysgen.patching.patch import analyse
from tests.patching.test_find_shapes import marked, numbering, script

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
