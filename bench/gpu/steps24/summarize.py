"""The summary of one steps24 device run (stdlib only): summarize.py RESULTS_DIR > steps24.json.

Per setup: the job's exit and wall time, the helper's own messages ("nsysgen: ...") from the task
logs, verify's exit and verdict, and count.py's verdict with, per process, the steps and what
each held. Cost: nanoGPT's median iteration time (iterations >= SKIP of each run, from its
"iter N: loss L, time T ms" lines) per run, the median of the run medians, the spread of the
run medians, and the helper's difference against no nsysgen; the same for hookcost.py.
"""

import json
import re
import statistics
import sys
from pathlib import Path

SKIP = 5  # nanoGPT's first iterations (eval at 0, warm-up) are not steady
ITER = re.compile(r"^iter (\d+): loss [-\d.naif]+, time ([\d.]+)ms")


def _read(path, default=None):
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return default


def _json(path):
    text = _read(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text[-500:]}


def setup(folder):
    folder = Path(folder)
    name = folder.name
    job = _json(folder / "job.json") or {}
    said = []
    for log in sorted((folder / "logs").glob("*.log")):
        for line in (_read(log) or "").splitlines():
            if "nsysgen:" in line and line not in said:
                said.append(line.strip()[:300])
    errors = []
    for log in sorted((folder / "logs").glob("*")):
        lines = (_read(log) or "").splitlines()
        bad = [i for i, x in enumerate(lines) if "Traceback" in x or "Error" in x]
        if bad:
            errors.append({"log": log.name, "tail": lines[bad[0] :][-8:]})
    verify = _json(folder / "verify.json") or {}
    out = {
        "job_status": job.get("status"),
        "job_wall_s": job.get("wall_s"),
        "helper_said": said[:12],
        "errors": errors[:3],
        "verify_exit": (_read(folder / "verify.rc") or "").strip() or None,
        "verify_complete": verify.get("complete"),
        "verify_reports": [
            {k: r.get(k) for k in ("label", "status", "report", "problems", "causes", "notes")}
            for r in verify.get("reports", [])
        ],
        "verify_notes": verify.get("notes"),
        "reports": (_read(folder / "reports.txt") or "").splitlines()[-6:],
    }
    counts, steps = {}, {}
    for path in sorted(folder.glob("count-*.json")):
        data = _json(path) or {}
        report = path.name[len("count-") : -len(".json")]
        counts[report] = data.get("ok")
        for pid, proc in (data.get("processes") or {}).items():
            rows = proc.get("steps", [])
            if not rows and not proc.get("kernels"):
                continue
            steps[f"{report}:{pid}"] = {
                "steps": [r["step"] for r in rows],
                "marks": [r["marks"] for r in rows],
                "optimizer_kernels": [r["optimizer_kernels"] for r in rows],
                "forward_kernels": [r["forward_kernels"] for r in rows],
                "kernels": [r["kernels"] for r in rows],
                "ms": [r["ms"] for r in rows],
                "kernels_outside_steps": proc.get("kernels_outside_steps"),
                "marks_outside_steps": proc.get("marks_outside_steps"),
                "problems": proc.get("problems"),
                "top_kernels_first_step": rows[0].get("top_kernels") if rows else None,
            }
        out["count_by"] = data.get("by")
        out["other_ranges"] = data.get("other_ranges")
    out["count_ok"] = all(counts.values()) if counts else None
    out["steps"] = steps
    return name, out


def _spread(values):
    if not values:
        return None
    mid = statistics.median(values)
    return {
        "median": round(mid, 4),
        "runs": [round(v, 4) for v in values],
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "spread_pct": round((max(values) - min(values)) / mid * 100, 2) if mid else None,
    }


def _diff(none, helper):
    if not none or not helper:
        return None
    a, b = none["median"], helper["median"]
    return {"abs": round(b - a, 4), "pct": round((b - a) / a * 100, 2) if a else None}


def cost(folder):
    folder = Path(folder)
    nano = {"none": [], "helper": []}
    runs = {}
    for path in sorted(folder.glob("nanogpt-*.log")):
        label = path.name.split("-")[1]
        times = []
        said = []
        for line in (_read(path) or "").splitlines():
            found = ITER.match(line)
            if found and int(found.group(1)) >= SKIP:
                times.append(float(found.group(2)))
            elif "nsysgen:" in line:
                said.append(line.strip()[:200])
        entry = {"iterations": len(times), "helper_said": said[:4]}
        if times:
            entry["median_ms"] = round(statistics.median(times), 4)
            nano.setdefault(label, []).append(statistics.median(times))
        runs[path.name] = entry
    micro = {"none": [], "helper": []}
    hooked = {}
    for path in sorted(folder.glob("hookcost-*.log")):
        label = path.name.split("-")[1]
        for line in (_read(path) or "").splitlines():
            if line.startswith("{"):
                data = json.loads(line)
                micro.setdefault(label, []).append(data["median_us"])
                hooked[path.name] = data.get("hooked")
    out = {
        "nanogpt_iteration_ms": {k: _spread(v) for k, v in nano.items()},
        "nanogpt_runs": runs,
        "hookcost_step_us": {k: _spread(v) for k, v in micro.items()},
        "hookcost_hooked": hooked,
    }
    n = out["nanogpt_iteration_ms"]
    out["nanogpt_helper_minus_none_ms"] = _diff(n.get("none"), n.get("helper"))
    m = out["hookcost_step_us"]
    out["hookcost_helper_minus_none_us"] = _diff(m.get("none"), m.get("helper"))
    return out


def main():
    results = Path(sys.argv[1])
    setups = dict(
        setup(folder) for folder in sorted([*results.glob("*-hook"), *results.glob("*-patch")])
    )
    summary = {
        "env": (_read(results / "env.txt") or "").splitlines(),
        "setups": setups,
        "cost": cost(results / "cost"),
    }
    json.dump(summary, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
