"""Fits nsysgen's report-size model to real reports and writes nsysgen/profile/calibration.json.

    python bench/calibration/fit.py          # prints each report's estimate and error

Model, per report (bytes):
  CUDA traced:  base_cuda + per_kernel * kernels (+ gpu_metrics_bytes with GPU metrics)
  CPU only:     base_cpu + per_cpu_second * seconds
Least squares of the relative error over the reports of each kind (gpu.csv: nsys 2025.3.1 on
H200; cpu.csv: nsys 2023.4.4 on the CPU test machine, --trace=nvtx,osrt). The GPU-metrics term
is the mean excess of the reports that had it (2 reports, one 32 ms window: a rough constant,
not a rate).
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE.parent.parent / "nsysgen" / "profile" / "calibration.json"


def rows(name: str) -> list[dict[str, str]]:
    with (HERE / name).open() as handle:
        return list(csv.DictReader(handle))


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """intercept, slope minimising the squared *relative* errors (reports span 100 KB-10 MB)."""
    weights = [1 / y**2 for _, y in points]
    total = sum(weights)
    mean_x = sum(w * x for w, (x, _) in zip(weights, points, strict=True)) / total
    mean_y = sum(w * y for w, (_, y) in zip(weights, points, strict=True)) / total
    covariance = sum(
        w * (x - mean_x) * (y - mean_y) for w, (x, y) in zip(weights, points, strict=True)
    )
    variance = sum(w * (x - mean_x) ** 2 for w, (x, _) in zip(weights, points, strict=True))
    slope = covariance / variance
    return mean_y - slope * mean_x, slope


def fit() -> dict[str, object]:
    gpu = rows("gpu.csv")
    plain = [(float(r["kernels"]), float(r["bytes"])) for r in gpu if r["gpu_metrics"] == "0"]
    base_cuda, per_kernel = line_fit(plain)
    excess = [
        float(r["bytes"]) - (base_cuda + per_kernel * float(r["kernels"]))
        for r in gpu
        if r["gpu_metrics"] == "1"
    ]
    cpu = rows("cpu.csv")
    base_cpu, per_second = line_fit([(float(r["seconds"]), float(r["bytes"])) for r in cpu])
    return {
        "base_cuda_bytes": round(base_cuda),
        "bytes_per_kernel": round(per_kernel, 1),
        "gpu_metrics_bytes": round(statistics.mean(excess)),
        "base_cpu_bytes": round(base_cpu),
        "bytes_per_cpu_second": round(per_second),
        "reports": len(gpu) + len(cpu),
    }


def estimate(model: dict[str, object], row: dict[str, str]) -> float:
    if "cuda" in row["traced"]:
        return (
            float(model["base_cuda_bytes"])
            + float(model["bytes_per_kernel"])  # type: ignore[arg-type]
            * float(row["kernels"])
            + float(model["gpu_metrics_bytes"]) * int(row["gpu_metrics"])
        )  # type: ignore[arg-type]
    return float(model["base_cpu_bytes"]) + float(model["bytes_per_cpu_second"]) * float(
        row["seconds"]
    )  # type: ignore[arg-type]


def errors(model: dict[str, object]) -> list[tuple[str, int, int, float]]:
    result = []
    for row in rows("gpu.csv") + rows("cpu.csv"):
        guess = estimate(model, row)
        actual = int(row["bytes"])
        result.append((row["report"], actual, round(guess), (guess - actual) / actual * 100))
    return result


def main() -> int:
    model = fit()
    table = errors(model)
    model["max_abs_error_percent"] = round(max(abs(e[3]) for e in table), 1)
    TARGET.write_text(json.dumps(model, indent=2, sort_keys=True) + "\n")
    for name, actual, guess, error in table:
        print(f"{name:45} actual {actual:>9} estimate {guess:>9} error {error:+6.1f} %")
    print(json.dumps(model, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
