"""The expected reports of a job, one at a time, and how each one's file is named."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from nsysgen.reports.contract import Expect, grid_tasks
from nsysgen.reports.runs import job_of
from nsysgen.shipped.verify.model import ANY, TOKEN


def expand_parts(parts: Sequence[str | int], coordinates: Sequence[int]) -> str:
    """A report name from its pattern: literal text, and 0/1/2 for the task, node, local id."""
    return "".join(part if isinstance(part, str) else str(coordinates[part]) for part in parts)


def name_regex(name: str) -> tuple[str, str | None]:
    """(regex, format string or None) of a planned report name with <token> placeholders."""
    regex, fmt, pos, node_seen, formattable = [], [], 0, False, True
    for match in TOKEN.finditer(name):
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
            regex.append(ANY)
            formattable = False
        pos = match.end()
    regex.append(re.escape(name[pos:]))
    fmt.append(name[pos:].replace("{", "{{").replace("}", "}}"))
    return "".join(regex), ("".join(fmt) if formattable else None)


def expected_reports(expect: Expect) -> Iterator[dict[str, Any]]:
    """Every expected report, one at a time: nsysgen-expect.json keeps a grid of ranks (every
    node of a range times some local ids) as its shape and name pattern, so that its size does
    not grow with the job; a short list of tasks is kept as it is."""
    for group in expect["reports"]:
        unit = group["unit"]
        if "tasks" in group:
            for task, node, local, name, collects in group["tasks"]:
                yield _with_pod(expect, _entry(unit, task, node, local, name, collects))
            continue
        collecting = set(group["collecting_locals"])
        for task, node, local in grid_tasks(group):
            name = expand_parts(group["name"], (task, node, local))
            entry = _entry(unit, task, node, local, name, local in collecting)
            yield _with_pod(expect, entry)


def _with_pod(expect: Expect, entry: dict[str, Any]) -> dict[str, Any]:
    """EKS: the name of the entry's pod (its node's), whose folder under .nsysgen/ is nsys's
    TMPDIR, where a capture the pod's end cut off stays."""
    pods = expect.get("pods")
    if pods:
        node = entry["node"]
        entry["pod"] = pods[0] if node == 0 else pods[1].format(node=node, worker=node - 1)
    return entry


def _entry(
    unit: str, task: int, node: int, local: int, name: str, collects: bool
) -> dict[str, Any]:
    regex, fmt = name_regex(name)
    return {
        "task": task,
        "node": node,
        "local": local,
        "label": f"{unit} {task}",
        "regex": regex,
        "name": fmt,
        "collectors": collects,
    }


def report_files(report_dir: Path) -> list[Path]:
    files = [p for p in report_dir.iterdir() if p.suffix in (".nsys-rep", ".qdstrm")]
    return sorted(p for p in files if p.is_file())


def report_name(path: Path) -> str:
    return path.name[: -len(path.suffix)]


def job_in(expect: Expect, path: Path) -> str | None:
    """The job id in a report's name, through nsys's own -o pattern."""
    return job_of(report_name(path), expect["generic_regex"])
