"""Which arguments of a log call label the step's number: `step=`, a TensorBoard global_step,
`f"Iteration {k}"` (nsysgen/patching/logged.py)."""

from __future__ import annotations

import ast

import pytest

from nsysgen.patching.logged import step_arguments

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
