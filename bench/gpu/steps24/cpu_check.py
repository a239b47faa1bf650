"""A CPU rehearsal of the steps24 setups (no GPU, no nsys): runs a script with a real torch whose
CUDA profiler and NVTX calls are recorded instead of made, and prints, as JSON, what each
"step N" range would hold: the helper's optimizer-step marks and the cross-entropy calls
(forward passes). Used on the CPU machine before the device run, for example:

    PYTHONPATH=<tree>/nsysgen-site NSYSGEN_PROFILE_FIRST_STEP=10 ... \
      python3 cpu_check.py nanogpt_train.py --device=cpu --dtype=float32 ...

The script runs as __main__ from its own path (runpy), so the helper's NSYSGEN_PROFILE_STEP_SCOPE
finds its frame as it would. A script given with --driver=DRIVER runs DRIVER SCRIPT ARGS instead.
"""

import json
import runpy
import sys
from pathlib import Path

import torch  # the zero-patch helper (when on PYTHONPATH) hooks the optimizers here

events = []  # (kind, text)


def _record(kind):
    def call(*args, **kwargs):
        events.append((kind, str(args[0]) if args else ""))

    return call


class _CudaRT:
    def cudaProfilerStart(self):
        events.append(("start", ""))
        return 0

    def cudaProfilerStop(self):
        events.append(("stop", ""))
        return 0


torch.cuda.synchronize = lambda *a, **k: None
torch.cuda.cudart = lambda: _CudaRT()
torch.cuda.nvtx.range_push = _record("push")
torch.cuda.nvtx.range_pop = _record("pop")
torch.cuda.nvtx.mark = _record("mark")
_cross_entropy = torch.nn.functional.cross_entropy


def _counted_cross_entropy(*args, **kwargs):
    events.append(("forward", ""))
    return _cross_entropy(*args, **kwargs)


torch.nn.functional.cross_entropy = _counted_cross_entropy


def summary():
    steps, stack, recording, opened = [], [], False, []
    for kind, text in events:
        if kind == "start":
            recording = True
            opened.append(len(steps))
        elif kind == "stop":
            recording = False
        elif kind == "push":
            stack.append({"range": text, "marks": [], "forwards": 0, "recorded": recording})
        elif kind == "pop" and stack:
            steps.append(stack.pop())
        elif kind == "mark" and stack:
            stack[-1]["marks"].append(text)
        elif kind == "forward" and stack:
            stack[-1]["forwards"] += 1
    recorded = [s for s in steps if s["recorded"]]
    return {
        "starts": sum(1 for k, _ in events if k == "start"),
        "stops": sum(1 for k, _ in events if k == "stop"),
        "ranges": len(steps),
        "recorded": recorded,
        "first_ranges": steps[:3],
        "marks_outside": sum(1 for k, _ in events if k == "mark")
        - sum(len(s["marks"]) for s in steps),
    }


def main():
    args = sys.argv[1:]
    driver = None
    if args and args[0].startswith("--driver="):
        driver = args.pop(0).split("=", 1)[1]
    target = driver or args[0]
    sys.argv = [target, *([] if driver is None else [args[0]]), *args[1:]]
    sys.path.insert(0, str(Path(args[0]).resolve().parent))
    try:
        runpy.run_path(target, run_name="__main__")
    finally:
        print("cpu_check: " + json.dumps(summary()), flush=True)


if __name__ == "__main__":
    main()
