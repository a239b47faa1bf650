"""A training-like loop that opens and closes an nsys capture window itself, and times every step
(issue 31: the pause at the window's edges).

    python3 pause_loop.py launch|compute WINDOW_S OUT.json

launch: a launch-bound step (400 tiny kernels: the CPU's launch rate sets the step time);
compute: a compute-bound step (8 large bf16 matmuls: the GPU sets it; PAUSE_MATMUL_N, 8192, their
size: smaller for the CPU dry run, tests/bench/test_gpu_dry_runs_legacy.py). Warm-up, then
cudaProfilerStart at the start of a step, cudaProfilerStop at the start of the first step that
begins WINDOW_S seconds later, then 30 more steps. Each step ends with a device synchronize, as a
synchronous training step does at its loss read-out, so a step's time is wall time. The calls
themselves are timed too.
"""

import json
import os
import sys
import time
from pathlib import Path

import torch

mode, window_s, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
cudart = torch.cuda.cudart()
if mode == "launch":
    x = torch.ones(64, 64, device="cuda")

    def step() -> None:
        global x
        for _ in range(400):
            x = x * 1.0001
else:
    n = int(os.environ.get("PAUSE_MATMUL_N", "8192"))
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        for _ in range(8):
            torch.mm(a, a)


steps: list[dict[str, float | str]] = []
state, opened_at = "before", 0.0
open_call_ms = close_call_ms = 0.0
for _ in range(30):  # warm-up, not recorded
    step()
torch.cuda.synchronize()
index = 0
while True:
    begin = time.perf_counter()
    edge = ""
    if state == "before" and index == 30:
        cudart.cudaProfilerStart()
        open_call_ms = (time.perf_counter() - begin) * 1e3
        state, opened_at, edge = "inside", begin, "open"
    elif state == "inside" and begin - opened_at >= window_s:
        cudart.cudaProfilerStop()
        close_call_ms = (time.perf_counter() - begin) * 1e3
        state, edge, closed_index = "after", "close", index
    step()
    torch.cuda.synchronize()
    steps.append({"ms": (time.perf_counter() - begin) * 1e3, "edge": edge, "state": state})
    index += 1
    if state == "after" and index >= closed_index + 30:
        break
with Path(out).open("w") as handle:
    json.dump({"mode": mode, "window_s": window_s, "open_call_ms": open_call_ms,
               "close_call_ms": close_call_ms, "steps": steps}, handle)  # fmt: skip
