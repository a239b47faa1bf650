"""What is wrong with a readable report: its capture, traced APIs and collectors."""

from __future__ import annotations

from nsysgen.reports.contract import CollectorsContract, Expect
from nsysgen.shipped.verify.contents import Contents
from nsysgen.shipped.verify.model import (
    Finding,
)
from nsysgen.shipped.verify.steps import check_steps, never_opened


def _check_window(asked: float, tolerance_s: float, got: float | None, found: Finding) -> None:
    tolerance = max(tolerance_s, asked * 0.1)
    if got is None:
        found.notes.append("capture length not in the report: not checked")
    elif abs(got - asked) > tolerance:
        found.problems.append(
            f"capture lasted {got:.1f} s, asked {asked:g} s (tolerance {tolerance:.1f} s)"
        )
        found.causes.append(
            "the program ended (or the job was stopped) before the window's end"
            if got < asked
            else "the capture was not stopped at the window's end"
        )


def _check_capture(expect: Expect, contents: Contents, found: Finding) -> None:
    capture = expect["capture"]
    steps = capture.get("steps")
    if capture["mode"] == "steps" and steps:
        check_steps(expect, steps, contents, found)
    elif capture["mode"] == "nvtx" and capture["nvtx_range"] not in contents.ranges:
        found.problems.append(f"no NVTX range '{capture['nvtx_range']}'")
        found.causes.append(never_opened(expect))
    elif capture["mode"] == "window" and capture["duration"]:
        duration = float(capture["duration"])
        _check_window(duration, float(expect["tolerance_s"]), contents.duration_s, found)


def _check_traced(trace: set[str], contents: Contents, found: Finding) -> None:
    if trace & {"cuda", "cuda-sw", "cuda-hw"} and contents.kernels == 0:
        found.problems.append("no CUDA kernels although cuda is traced")
        if contents.dropped:
            found.causes.append(
                f"nsys dropped CUDA events ({'; '.join(contents.dropped)}): the CUDA hardware "
                "trace (Blackwell, nsys 2026.x) loses them in a capture that starts or stops "
                "while the program runs; trace cuda-sw (capture.cuda_trace=auto or software)"
            )
        else:
            found.causes.append(
                "no GPU work inside the capture (window outside the training loop), or CUDA "
                "tracing failed (CUPTI errors in the job log)"
            )
    if "nvtx" in trace and not contents.ranges:
        found.problems.append("no NVTX ranges although nvtx is traced")
        found.causes.append(
            "the program emits no NVTX ranges in the window (PyPI nvtx >= 0.2.12 records none "
            "under nsys 2023.4)"
        )
    if "osrt" in trace and contents.osrt == 0:
        found.problems.append("no OS runtime calls although osrt is traced")
        found.causes.append("OS runtime tracing failed to inject (see the job log)")


def _check_collectors(
    planned: CollectorsContract, collectors: bool, contents: Contents, found: Finding
) -> None:
    if planned.get("gpu_metrics"):
        if collectors and contents.gpu_metrics == 0:
            found.problems.append("no GPU metrics although this report should hold them")
            found.causes.append("GPU metrics need counter access (ERR_NVGPUCTRPERM) on the node")
        if not collectors and contents.gpu_metrics:
            found.problems.append("GPU metrics in a report that should not collect them")
            found.causes.append("a second collector per node: the samples are duplicated")
    if planned.get("efa_metrics"):
        _check_efa(collectors, contents, found)


def _check_efa(collectors: bool, contents: Contents, found: Finding) -> None:
    if collectors and contents.efa_samples == 0:
        found.problems.append("no EFA metrics although this report should hold them")
        failed = "; ".join(contents.plugin_failures)
        found.causes.append(
            (f'nsys says "{failed}": ' if failed else "")
            + "the efa_metrics plugin found no EFA device (nic_sampler reads "
            "/sys/class/infiniband/<device>/ports/<port>/hw_counters: on EKS mount it into the "
            "container or pass -efa-sysfs), or the plugin is missing from this nsys build"
        )
    elif collectors:
        found.notes.append(
            f"EFA metrics: {contents.efa_samples} samples of {contents.efa_devices} device ports"
        )
    if not collectors and contents.efa_samples:
        found.problems.append("EFA metrics in a report that should not collect them")
        found.causes.append("a second collector per node: the samples are duplicated")


def check_contents(expect: Expect, contents: Contents, collectors: bool) -> Finding:
    """What is wrong with a readable report: the capture, the traced APIs, the collectors."""
    found = Finding(label="", node="", status="ok")
    _check_capture(expect, contents, found)
    _check_traced(set(expect["trace"]), contents, found)
    _check_collectors(expect["collectors"], collectors, contents, found)
    if found.problems:
        found.status = "wrong"
    return found
