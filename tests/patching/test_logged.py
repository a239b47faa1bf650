"""Which arguments of a log call label the step's number: `step=`, a TensorBoard global_step,
`f"Iteration {k}"` (nsysgen/patching/logged.py)."""

from __future__ import annotations

import ast

import pytest

from nsysgen.patching.logged import (
    dict_steps,
    is_log_call,
    position_arguments,
    step_arguments,
    text_of,
)

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


# Places among a total, texts added together, metrics dicts, console writes ----------------


@pytest.mark.parametrize(
    ("call", "places"),
    [
        ('print(f"Train: {epoch} [{idx:>4d}/{n} ({p:.0f}%)]")', ["idx"]),
        ('print("[%d/%d][%d/%d] Loss" % (epoch, niter, i, len(d)))', ["epoch", "i"]),
        ('log("epoch: {}/{}, iter: {}/{}".format(e + 1, m, it + 1, n))', ["e + 1", "it + 1"]),
        ("progress_bar(batch_idx, len(loader), msg)", ["batch_idx"]),
        ('print(f"step {s} of {n}")', []),
    ],
)
def test_places_among_a_total(call: str, places: list[str]) -> None:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    assert [ast.unparse(value) for value in position_arguments(node)] == places


def test_texts_added_together_metrics_dicts_and_console_writes() -> None:
    added = ast.parse('("Epoch Step: %6d | " + "Loss: %6.2f") % (i, l)', mode="eval").body
    assert isinstance(added, ast.BinOp)
    assert text_of(added.left) == "Epoch Step: %6d | Loss: %6.2f"
    assert text_of(ast.parse('"a" + name', mode="eval").body) is None
    logged = ast.parse('print(("Epoch Step: %6d | " + "x") % (i, l))', mode="eval").body
    assert isinstance(logged, ast.Call)
    assert [ast.unparse(v) for v in step_arguments(logged)] == ["i"]
    metrics = ast.parse('{"step": a, "steps": b, "max_steps": c, "loss": d}', mode="eval").body
    assert [ast.unparse(v) for v in dict_steps(metrics)] == ["a", "b"]
    for text, logs in [
        ('sys.stdout.write("x")', True),
        ('tqdm.write("x")', True),
        ('file.write("x")', False),
    ]:
        call = ast.parse(text, mode="eval").body
        assert isinstance(call, ast.Call)
        assert is_log_call(call) is logs, text
