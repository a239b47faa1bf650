"""`nsysgen plan`: what a profile (or every point of a sweep) will do, writing nothing."""

from __future__ import annotations

import json

from nsysgen.cli.args import _MAX_EXPAND, Arguments
from nsysgen.config.compose import Composer
from nsysgen.drivers.build import name_points
from nsysgen.drivers.pipeline import build_config
from nsysgen.drivers.plan_report import Expand, as_json, as_table, sweep_table
from nsysgen.errors import EXIT_INVALID, EXIT_OK
from nsysgen.textwidth import output_width


def run_plan(args: Arguments, composer: Composer) -> int:

    if args.multirun:
        _, points = name_points(composer, args.overrides)
        rows = []
        for point in points:
            composed = composer.compose(point.overrides, values={"job.name": point.job_name})
            rows.append((point.name, *build_config(composed, stop_on_lint_errors=False)))
        if args.json:
            data = {row[0]: json.loads(as_json(*row[1:])) for row in rows}
            print(json.dumps(data, indent=2))
        else:
            print(sweep_table(rows, output_width()))
        errors = any(f.severity == "error" for *_, findings in rows for f in findings)
        return EXIT_INVALID if errors else EXIT_OK
    config, plan, findings = build_config(
        composer.compose(args.overrides), stop_on_lint_errors=False
    )
    if args.ranks is not None:
        expand = Expand(args.expand or _MAX_EXPAND, *args.ranks)
    else:
        expand = Expand(args.expand) if args.expand else Expand()
    if args.json:
        print(as_json(config, plan, findings, expand))
    else:
        print(as_table(config, plan, findings, expand, output_width()))
    return EXIT_INVALID if any(f.severity == "error" for f in findings) else EXIT_OK
