"""Real torch on a CPU machine: what the step helper asks of CUDA and NVTX is printed one event
a line (`@@ start`, `@@ push step 3`, `@@ mark ...`) instead of being done, so that the tests in
tests/shipped/test_step_window_real_torch.py run torch's own optimizer hooks, GradScaler,
torch.compile and autograd without a GPU."""

from typing import Any

import torch


def _event(*words: object) -> None:
    print("@@", *words, flush=True)


class _Cudart:
    def cudaProfilerStart(self) -> None:  # noqa: N802 - torch's name
        _event("start")

    def cudaProfilerStop(self) -> None:  # noqa: N802 - torch's name
        _event("stop")


cuda: Any = torch.cuda
cuda.cudart = _Cudart
cuda.synchronize = lambda *args: None
cuda.is_initialized = lambda: True
cuda.nvtx.range_push = lambda label: _event("push", label)
cuda.nvtx.range_pop = lambda: _event("pop")
cuda.nvtx.mark = lambda label: _event("mark", label)
