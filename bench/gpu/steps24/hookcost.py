"""The step helper's cost per optimizer step, alone: SGD on one small CUDA tensor, stepped in a
loop at module level whose counter is `iter_num` (as nanoGPT's), timed in blocks.

    python3 hookcost.py [STEPS_PER_BLOCK] [BLOCKS]   -> one JSON line

Run it plain, and with the zero-patch helper armed on a window that never opens
(PYTHONPATH=<tree>/nsysgen-site NSYSGEN_PROFILE_FIRST_STEP=1000000 ...LAST_STEP=1000000
NSYSGEN_PROFILE_RANKS=0 NSYSGEN_PROFILE_STEP_EXPR=iter_num
NSYSGEN_PROFILE_STEP_SCOPE=hookcost.py:<module>): the difference of the per-step medians is
what the hooks cost (reading iter_num from this frame, the NVTX mark and range push/pop with
no tool attached). Prints whether the helper's hooks were installed.
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.optim.optimizer as optimizer_module

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 7
param = torch.zeros(1024, device=os.environ.get("HOOKCOST_DEVICE", "cuda"), requires_grad=True)
param.grad = torch.zeros_like(param)
optimizer = torch.optim.SGD([param], lr=0.0)
iter_num = 0
# iter_num is read by the helper (NSYSGEN_PROFILE_STEP_EXPR) from this frame, not by the loop.
for iter_num in range(200):  # noqa: B007 - warm-up (and the helper's first messages)
    optimizer.step()
if param.is_cuda:
    torch.cuda.synchronize()
per_step_us = []
for block in range(blocks):
    start = time.perf_counter()
    for iter_num in range(200 + block * steps, 200 + (block + 1) * steps):  # noqa: B007
        optimizer.step()
    if param.is_cuda:
        torch.cuda.synchronize()
    per_step_us.append((time.perf_counter() - start) / steps * 1e6)
window = getattr(optimizer_module, "_nsysgen_window", None)
print(
    json.dumps(
        {
            "hooked": window is not None,
            "helper_steps_seen": getattr(window, "seen", None),
            "steps_per_block": steps,
            "block_us": [round(x, 3) for x in per_step_us],
            "median_us": round(statistics.median(per_step_us[1:]), 3),
        }
    )
)
