"""The names the helper shares with nsysgen and verify: environment variables, NVTX marks,
the learning limit."""

from __future__ import annotations

FIRST_STEP = "NSYSGEN_PROFILE_FIRST_STEP"
LAST_STEP = "NSYSGEN_PROFILE_LAST_STEP"
RANKS = "NSYSGEN_PROFILE_RANKS"
OPTIMIZER_STEPS = "NSYSGEN_PROFILE_OPTIMIZER_STEPS"
STEP_EXPR = "NSYSGEN_PROFILE_STEP_EXPR"
STEP_SCOPE = "NSYSGEN_PROFILE_STEP_SCOPE"
# A file the helper also writes what it says to (nsys-exec sets it in the task's own folder under
# the run's .nsysgen/): verify gives the helper's own reason where the window did not record.
HELPER_LOG = "NSYSGEN_HELPER_LOG"
VARIABLES = (FIRST_STEP, LAST_STEP, RANKS, OPTIMIZER_STEPS, STEP_EXPR, STEP_SCOPE, HELPER_LOG)
OPTIMIZER_MARK = "nsysgen optimizer step"
NUMBERING_MARK = "nsysgen numbering"
HINT_COUNTER = "the number given to window.open() at the top of the patched loop"
# Optimizer steps seen before the order of several optimizers must have shown its cycle twice.
LEARN_LIMIT = 64
# Training steps the number the program prints must have been read at (two advances checked)
# before it numbers the steps.
LATE_READS = 3
