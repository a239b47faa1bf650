"""The GPU of the bench/gpu CPU dry runs (tests/bench/): in a program that the stand-in nsys
(tests/bench/standin/bin/nsys) runs, real torch's CUDA profiler and NVTX calls are recorded
instead of made, and what nsys would capture between cudaProfilerStart and Stop is written to
STANDIN_REPORT as the NVTX_EVENTS table of an nsys SQLite export (push/pop ranges 59, marks 34),
which the proofs' checks read as they read the device's exports; and, as its GPU work, one row
of CUPTI_ACTIVITY_KIND_KERNEL per optimizer step taken while recording, with the
CUPTI_ACTIVITY_KIND_RUNTIME call that launched it (a CPU launches no kernels; the verifier asks
for some in a CUDA-traced report, and nsysgen's analysis places each by its launch).

A capture of the whole run (the stand-in nsys without --capture-range sets STANDIN_WHOLE=1) records
from the start and writes at the program's exit.

STANDIN_GPUS=N (the dry runs of programs that ask for "cuda" themselves: bench/gpu/x2.sh,
device.sh, ..., tests/bench/test_gpu_dry_runs_legacy.py) goes further, in every Python process
that imports torch, recorded or not: the CUDA device is the CPU (a TorchFunctionMode moves every
"cuda" device argument and .cuda() to the CPU), torch.cuda says N GPUs and does nothing
(set_device, synchronize, NVTX, the profiler API), and torch.distributed's NCCL is gloo (the
program still believes it asked for NCCL); DistributedDataParallel drops its device_ids, and
FullyShardedDataParallel gets the CPU as its device_id.

nsysgen's own sitecustomize (nsysgen-site, first on the recorded task's PYTHONPATH) runs this one
first, as it runs an image's. Without STANDIN_REPORT (every process that nsys does not start)
nothing is recorded, and without STANDIN_GPUS too torch is not imported.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

_report = os.environ.get("STANDIN_REPORT")
_gpus = os.environ.get("STANDIN_GPUS")
_recording = [bool(_report) and os.environ.get("STANDIN_WHOLE") == "1"]
_since = [0]  # when the capture started
_open: list[tuple[int, str]] = []
_rows: list[tuple[int, int | None, int, str]] = []
_kernels: list[tuple[int, int]] = []


def _write() -> None:
    assert _report is not None
    tid = (os.getpid() << 24) | 1
    with sqlite3.connect(_report) as db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS NVTX_EVENTS (start INTEGER, end INTEGER, eventType "
            "INTEGER, text TEXT, textId INTEGER, globalTid INTEGER, domainId INTEGER, "
            "binaryData BLOB)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS StringIds (id INTEGER, value TEXT)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, "
            "deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, "
            "shortName INTEGER)"
        )
        db.execute(
            "CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, "
            "globalTid INTEGER, correlationId INTEGER, nameId INTEGER)"
        )
        db.execute("DELETE FROM StringIds WHERE id IN (0, 1)")
        db.execute("INSERT INTO StringIds VALUES (0, 'standin_optimizer_step')")
        db.execute("INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000')")
        # This process's whole capture again at each stop (a report may hold several: one
        # nsys per node, over torchrun's workers).
        db.execute("DELETE FROM NVTX_EVENTS WHERE globalTid = ?", (tid,))
        db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = ?", (tid & ~0xFFFFFF,))
        db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid = ?", (tid,))
        db.executemany(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, NULL, ?, 0, NULL)",
            [(start, end, kind, text, tid) for start, end, kind, text in _rows],
        )
        # Each kernel launched by a CUDA API call of the process, just before it runs.
        device = int(os.environ.get("LOCAL_RANK", "0"))
        ids = os.getpid() << 20  # correlation ids, apart from another process's
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 7, ?, ?, 0)",
            [(s, e, device, ids + i, tid & ~0xFFFFFF) for i, (s, e) in enumerate(_kernels, 1)],
        )
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, 1)",
            [(s - 500, s - 100, tid, ids + i) for i, (s, _) in enumerate(_kernels, 1)],
        )


class _Cudart:
    def cudaProfilerStart(self) -> int:  # noqa: N802 - CUDA's name
        _recording[0] = True
        _since[0] = time.perf_counter_ns()
        return 0

    def cudaProfilerStop(self) -> int:  # noqa: N802 - CUDA's name
        # A range pushed inside the capture and still open is kept, ended at the stop (nsys
        # 2025.3.1 kept the step range whose pop a program's own range had taken: issue 15).
        now = time.perf_counter_ns()
        _rows.extend((start, now, 59, text) for start, text in _open if start >= _since[0])
        _recording[0] = False
        _write()
        return 0


def _push(text: object) -> int:
    _open.append((time.perf_counter_ns(), str(text)))
    return len(_open) - 1


def _pop() -> int:
    if _open:
        start, text = _open.pop()
        if _recording[0]:  # nsys keeps a range that ends inside the capture
            _rows.append((start, time.perf_counter_ns(), 59, text))
    return len(_open)


def _mark(text: object) -> None:
    if _recording[0]:
        _rows.append((time.perf_counter_ns(), None, 34, str(text)))


def _optimizer_stepped(optimizer: object, args: object, kwargs: object) -> None:
    if _recording[0]:
        now = time.perf_counter_ns()
        _kernels.append((now, now + 1000))


def _started(cuda: Any) -> None:
    """CUDA is "started" for the program and nsysgen's helper (which opens windows only in a
    process that uses CUDA); torch's own code (torch.compile) sees the CPU it runs on."""
    started = getattr(cuda.is_initialized, "standin_real", cuda.is_initialized)

    def is_initialized() -> bool:
        caller = str(sys._getframe(1).f_globals.get("__name__", ""))
        return bool(started()) if caller.startswith("torch") else True

    is_initialized.standin_real = started  # type: ignore[attr-defined]
    cuda.is_initialized = is_initialized


def _cpu_for_cuda(torch: Any) -> None:
    """The CUDA device is the CPU (STANDIN_GPUS, above)."""
    import torch.distributed as dist
    from torch.overrides import TorchFunctionMode

    cpu = torch.device("cpu")

    def moved(value: object) -> object:
        if isinstance(value, torch.device) and value.type == "cuda":
            return cpu
        if isinstance(value, str) and value.startswith("cuda"):
            return "cpu"
        return value

    class CpuForCuda(TorchFunctionMode):
        def __torch_function__(
            self, func: Any, types: object, args: Sequence[Any] = (), kwargs: Any = None
        ) -> Any:
            if getattr(func, "__name__", "") == "cuda" and args:
                return args[0]  # Tensor.cuda(): already where "cuda" is
            kwargs = {k: moved(v) if k == "device" else v for k, v in (kwargs or {}).items()}
            return func(*[moved(a) for a in args], **kwargs)

    mode: Any = CpuForCuda()
    mode.__enter__()  # for the whole process
    cuda: Any = torch.cuda
    count = int(_gpus or "1")
    _started(cuda)
    cuda.is_available = lambda: True
    cuda.device_count = lambda: count
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda *args, **kwargs: None
    cuda.cudart = lambda: type("Cudart", (), {"cudaProfilerStart": lambda self: 0,
                                              "cudaProfilerStop": lambda self: 0})()  # fmt: skip
    cuda.nvtx.range_push = lambda text: 0
    cuda.nvtx.range_pop = lambda: 0
    cuda.nvtx.mark = lambda text: None

    init = dist.init_process_group

    def init_process_group(backend: str | None = None, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("device_id", None)
        return init(backend.replace("nccl", "gloo") if backend else "gloo", *args, **kwargs)

    dist.init_process_group = init_process_group
    ddp = torch.nn.parallel.DistributedDataParallel
    ddp_init = ddp.__init__

    def ddp_on_cpu(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("device_ids", None)
        kwargs.pop("output_device", None)
        ddp_init(self, module, **kwargs)

    ddp.__init__ = ddp_on_cpu


def _fsdp_on_cpu(fsdp: Any) -> None:
    """FSDP on the CPU, which it takes only as its device_id (without: "FSDP needs a non-CPU
    accelerator device")."""
    import torch

    wrapper = fsdp.FullyShardedDataParallel
    init = wrapper.__init__

    def on_cpu(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["device_id"] = torch.device("cpu")
        init(self, module, *args, **kwargs)

    wrapper.__init__ = on_cpu


_AFTER = {"torch": _cpu_for_cuda, "torch.distributed.fsdp": _fsdp_on_cpu}


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Runs _AFTER's function of a module once it is imported, by whoever imports it first."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        patch = _AFTER.pop(name, None)
        if patch is None:
            return None
        if not _AFTER:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            patch(module)

        loader.exec_module = exec_module
        return spec


def _install() -> None:
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    cuda: Any = torch.cuda
    _started(cuda)
    cuda.is_current_stream_capturing = lambda: False
    cuda.synchronize = lambda *args, **kwargs: None
    cuda.cudart = _Cudart
    cuda.nvtx.range_push = _push
    cuda.nvtx.range_pop = _pop
    cuda.nvtx.mark = _mark
    register_optimizer_step_post_hook(_optimizer_stepped)


if _gpus:
    sys.meta_path.insert(0, _AfterTorch())
if _report:
    _install()
    if _recording[0]:
        atexit.register(_write)
