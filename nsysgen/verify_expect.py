"""What `nsysgen verify` expects of a job's reports, from the same plan `nsysgen plan` shows.

nsysgen writes this as nsysgen-expect.json into every folder, next to nsysgen-verify.py (a copy of
nsysgen/verify_core.py), so the check runs where nsysgen is not installed. Report names become
regular expressions over the file name: the parts that are known before the job runs (rank, node
index, job name) are literal; the job id, the node name and anything nsys alone knows (%p, %h) are
groups, matched against the files the job left.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from nsysgen import nsys_cmd
from nsysgen.model import Config
from nsysgen.plan import ProfilePlan, RecordedTask, build_plan
from nsysgen.render import ArtifactSpec
from nsysgen.resources import PACKAGE_DIR
from nsysgen.targets import eks
from nsysgen.verify_core import EXPECT_FILE, EXPECT_FORMAT

VERIFY_SCRIPT = "nsysgen-verify.py"
# Window captures: how far the recorded length may differ from capture.duration (at least).
WINDOW_TOLERANCE_S = 2.0
# The step helper and the training-loop patch name every step's NVTX range "step N".
STEP_REGEX = r"step (\d+)"
_TOKEN = re.compile(r"<([A-Za-z0-9_]+)>")
_NSYS_PLACEHOLDER = re.compile(r"%q\{([^}]*)\}|%[hpn%]|%\{[^}]*\}|\{[A-Z_]+\}")
_ANY = r"[^/]*?"


def _name_regex(name: str) -> tuple[str, str | None]:
    """(regex, format string or None) of a planned report name with <token> placeholders."""
    regex, fmt, pos, node_seen, formattable = [], [], 0, False, True
    for match in _TOKEN.finditer(name):
        literal = name[pos : match.start()]
        regex.append(re.escape(literal))
        fmt.append(literal.replace("{", "{{").replace("}", "}}"))
        token = match.group(1)
        if token == "jobid":
            regex.append("(?P<job>[0-9]+)")
            fmt.append("{job}")
        elif token.startswith("host") and token[4:].isdigit():
            regex.append("(?P=node)" if node_seen else "(?P<node>[^/]+?)")
            fmt.append("{node}")
            node_seen = True
        else:
            regex.append(_ANY)
            formattable = False
        pos = match.end()
    regex.append(re.escape(name[pos:]))
    fmt.append(name[pos:].replace("{", "{{").replace("}", "}}"))
    return "".join(regex), ("".join(fmt) if formattable else None)


def generic_regex(template: str) -> str:
    """A regex matching any name the -o template can produce; %q{VAR} become named groups."""
    parts, pos, seen = [], 0, set()
    for match in _NSYS_PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[pos : match.start()]))
        var = match.group(1)
        if match.group(0) == "%%":
            parts.append("%")
        elif var and var.isidentifier() and var not in seen:
            parts.append(f"(?P<{var}>{_ANY})")
            seen.add(var)
        else:
            parts.append(_ANY)
        pos = match.end()
    parts.append(re.escape(template[pos:]))
    return "".join(parts)


def _label(config: Config, task: RecordedTask) -> str:
    if config.target.name == "eks":
        return "pod master-0" if task.node == 0 else f"pod worker-{task.node - 1}"
    return f"{'rank' if config.workload.launch == 'per_gpu' else 'node'} {task.task}"


def expectations(config: Config, plan: ProfilePlan | None = None) -> dict[str, Any]:
    plan = plan or build_plan(config)
    capture = config.capture
    on_eks = config.target.name == "eks"
    template = eks.report_output(config) if on_eks else nsys_cmd.report_output(config)
    reports = []
    for task in plan.recorded:
        regex, fmt = _name_regex(posixpath.basename(task.report))
        reports.append(
            {
                "task": task.task,
                "node": task.node,
                "label": _label(config, task),
                "regex": regex,
                "name": fmt,
                "collectors": task.collectors,
            }
        )
    return {
        "format": EXPECT_FORMAT,
        "job": config.job.name,
        "target": config.target.name,
        "nsys_version": config.nsight.version,
        "nsys": config.nsys_path,
        "importer": config.importer_path,
        "report_dir": capture.report_dir,
        "job_in_name": any("<jobid>" in t.report for t in plan.recorded),
        "reports": reports,
        "generic_regex": generic_regex(posixpath.basename(template)),
        "capture": {
            "mode": capture.mode,
            "delay": capture.delay,
            "duration": capture.duration,
            "first_step": capture.first_step,
            "last_step": capture.last_step,
            "nvtx_range": capture.nvtx_range,
            # NeMo records its own steps (no per-step NVTX ranges of nsysgen's helper).
            "step_regex": None if config.workload.kind == "nemo" else STEP_REGEX,
        },
        "trace": list(capture.trace),
        "collectors": {"gpu_metrics": capture.gpu_metrics, "efa_metrics": capture.efa_metrics},
        "tolerance_s": WINDOW_TOLERANCE_S,
    }


def verify_files(config: Config) -> list[ArtifactSpec]:
    """nsysgen-verify.py (nsysgen's verify, standalone) and what it expects of this job."""
    source = (PACKAGE_DIR / "verify_core.py").read_text(encoding="utf-8")
    text = json.dumps(expectations(config), indent=1, sort_keys=True)
    return [
        ArtifactSpec(VERIFY_SCRIPT, "common/nsysgen-verify.py.j2", {"source": source}, True),
        ArtifactSpec(EXPECT_FILE, "common/raw.j2", {"text": text}),
    ]
