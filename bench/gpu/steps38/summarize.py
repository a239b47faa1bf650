"""The summary of one steps38 device run (standard library only):

    summarize.py RESULTS_DIR SETUPS_TXT > steps38.json

Per setup (setups.txt: name, program, first and last step, optimizer steps a training step,
whether nsysgen read the program): the job's exit and wall time, nsysgen's own summary of the
compile (generated/NAME.txt) and the helper's messages ("nsysgen: ..." in the task log), the
first error of each log, the verifier's exit and verdict, and check.py's verdict with, per
"step N" range, the proof keys inside and the numbers the framework logged for them. A setup is
ok when its job and verify exited 0 and every export's check is ok; the run when all are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _json(path: Path) -> Any:
    text = _read(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text[-500:]}


def _int(text: str | None) -> int | None:
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def setup(results: Path, fields: list[str]) -> dict[str, Any]:
    name, program, first, last, per_step, source = fields[:6]
    folder = results / name
    job = _json(folder / "job.json") or {}
    said: list[str] = []
    errors = []
    for log in sorted((folder / "logs").glob("*")):
        lines = (_read(log) or "").splitlines()
        said += [x.strip()[:300] for x in lines if x.startswith("nsysgen:") and x not in said]
        bad = [i for i, x in enumerate(lines) if "Traceback" in x or "Error" in x]
        if bad:
            errors.append({"log": log.name, "first": lines[bad[0]][:300], "tail": lines[-8:]})
    verify = _json(folder / "verify.json") or {}
    out: dict[str, Any] = {
        "program": program,
        "window": f"{first}..{last}",
        "optimizer_steps_per_step": int(per_step),
        "source_given": source != "no",
        # "answer": compiled with the step_expr the compile asked for (its question kept).
        "nsysgen_asked": (_read(results / "generated" / f"{name}-asked.txt") or "").strip(),
        "nsysgen_compile": (_read(results / "generated" / f"{name}.txt") or "").splitlines(),
        "job_status": job.get("status"),
        "job_wall_s": job.get("wall_s"),
        "job_skipped": job.get("skipped"),
        "helper_said": said[:12],
        "errors": errors[:3],
        "verify_exit": _int(_read(folder / "verify.rc")),
        "verify_complete": verify.get("complete"),
        "verify_reports": [
            {k: r.get(k) for k in ("label", "status", "report", "problems", "causes", "notes")}
            for r in verify.get("reports", [])
        ],
        "verify_notes": verify.get("notes"),
        "proof_log_lines": len((_read(folder / "proof.jsonl") or "").splitlines()),
        "reports": (_read(folder / "reports.txt") or "").splitlines()[-6:],
    }
    checks = {}
    for path in sorted(folder.glob("check-*.json")):
        data = _json(path) or {}
        report = path.name[len("check-") : -len(".json")]
        checks[report] = data.get("ok")
        out["steps"] = data.get("steps")
        out["ranges"] = [
            {k: row.get(k) for k in ("step", "keys", "logged", "nsysgen_marks", "ms", "problems")}
            for row in data.get("ranges", [])
        ]
        out["problems"] = data.get("problems")
    out["checks"] = checks
    out["check_ok"] = all(v is True for v in checks.values()) if checks else None
    out["ok"] = out["job_status"] == 0 and out["verify_exit"] == 0 and out["check_ok"] is True
    return out


def main(argv: list[str]) -> int:
    results, setups_txt = Path(argv[0]), Path(argv[1])
    env = (_read(results / "env.txt") or "").splitlines()
    versions = {}
    for line in env:
        words = line.split()
        if words and words[0] in ("torch", "transformers", "lightning", "accelerate", "ignite"):
            versions[words[0]] = " ".join(words[1:])
        elif line.startswith("NVIDIA Nsight Systems version"):
            versions["nsys"] = line.split()[-1]
    setups = {}
    for line in setups_txt.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) >= 6:
            setups[fields[0]] = setup(results, fields)
    summary = {
        "env": env,
        "versions": versions,
        "setups": setups,
        "ok": bool(setups) and all(s["ok"] for s in setups.values()),
    }
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
