"""The names the helper shares with nsysgen and verify: environment variables, NVTX marks,
the learning limit."""

from __future__ import annotations

FIRST_STEP = "NSYSGEN_PROFILE_FIRST_STEP"
LAST_STEP = "NSYSGEN_PROFILE_LAST_STEP"
RANKS = "NSYSGEN_PROFILE_RANKS"
OPTIMIZER_STEPS = "NSYSGEN_PROFILE_OPTIMIZER_STEPS"
STEP_EXPR = "NSYSGEN_PROFILE_STEP_EXPR"
STEP_SCOPE = "NSYSGEN_PROFILE_STEP_SCOPE"
VARIABLES = (FIRST_STEP, LAST_STEP, RANKS, OPTIMIZER_STEPS, STEP_EXPR, STEP_SCOPE)
OPTIMIZER_MARK = "nsysgen optimizer step"
NUMBERING_MARK = "nsysgen numbering"
HINT_COUNTER = "the number given to window.open() at the top of the patched loop"
# Optimizer steps seen before the order of several optimizers must have shown its cycle twice.
LEARN_LIMIT = 64
