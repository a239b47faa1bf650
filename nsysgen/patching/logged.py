"""What a training script logs: which calls are logs, what they show, and which of the values
they show is a step number (labelled as one: `step=`, a TensorBoard `global_step`,
`"Iteration {k + 1}"`, `logkv("step", ...)`)."""

from __future__ import annotations

import ast
import re
import string

from nsysgen.patching.syntax import last_name

_LOG_TOKENS = frozenset(
    {"log", "logs", "logger", "logging", "print", "report", "info", "debug", "warning", "metrics",
     "scalar", "scalars", "postfix", "description", "logkv", "logkvs"}
)  # fmt: skip
_NOT_LOGS = ("logit", "logical", "logsumexp", "log_softmax", "logaddexp", "log1p", "log2")
# The text just before a formatted value that says it is a step number: "Iteration {k + 1}",
# "[Step %d/%d]", "Steps : {:d}", "step=", "iter ". Not "timestep", not "batch", not "epoch".
_STEP_LABEL = re.compile(r"\b(?:global[ _])?(?:step|iter|iteration)s?\b[^A-Za-z0-9]*$", re.I)
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([a-zA-Z%])")
_TENSORBOARD_STEP = 2  # add_scalar(tag, value, global_step): the step's position


# Streams a script writes its console lines to itself (`sys.stdout.write(...)`, `tqdm.write`).
_CONSOLES = frozenset({"sys.stdout", "sys.stderr", "tqdm", "tqdm.tqdm"})


def is_log_call(call: ast.Call) -> bool:
    """print, logger.info, wandb.log, accelerator.log, writer.add_scalar, set_postfix,
    set_description, training_log, report_step_metrics, print_rank_0, sys.stdout.write, ..."""
    name = last_name(call.func).lower()
    if not name or name.startswith(_NOT_LOGS):
        return False
    if name == "write" and isinstance(call.func, ast.Attribute):
        return ast.unparse(call.func.value) in _CONSOLES
    return name.startswith("log") or bool(set(re.split(r"_+", name)) & _LOG_TOKENS)


def is_progress_call(call: ast.Call) -> bool:
    """`progress_bar(batch_idx, len(loader), ...)`: a function that draws the place of its
    first argument among its second, which the script passes itself."""
    return "progress" in last_name(call.func).lower() and len(call.args) >= 2


def shows(expr: ast.expr, texts: set[str], carriers: set[str]) -> bool:
    """`expr` shows the value of one of `texts` as it is: an f-string field, an argument of
    str.format or %, a dict value, `metrics["step"]` of a dict that holds it."""
    if ast.unparse(expr) in texts or ast.unparse(expr) in carriers:
        return True
    if isinstance(expr, ast.Subscript):
        return ast.unparse(expr.value) in carriers
    children: list[ast.expr] = []
    if isinstance(expr, ast.JoinedStr):
        children = expr.values
    elif isinstance(expr, ast.FormattedValue):
        children = [expr.value]
    elif isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        children = expr.elts
    elif isinstance(expr, ast.Dict):
        children = [value for value in expr.values if value is not None]
    elif isinstance(expr, ast.Starred):
        children = [expr.value]
    elif isinstance(expr, ast.Call) and last_name(expr.func) in ("format", "str", "int", "dict"):
        children = [*expr.args, *(keyword.value for keyword in expr.keywords)]
    elif isinstance(expr, ast.BinOp) and _is_template(expr):
        children = [expr.right]
    return any(shows(child, texts, carriers) for child in children)


def offset(call: ast.Call, text: str) -> str | None:
    """`logkv("step", self.step + self.resume_step)`, `log(..., step=it + start)`,
    `log(..., step=global_step + 1)`: the term the script adds to the counter when it logs the
    step number."""
    labelled: list[ast.expr] = [
        keyword.value
        for keyword in call.keywords
        if keyword.arg and ("step" in keyword.arg or "iter" in keyword.arg)
    ]
    for label, value in zip(call.args, call.args[1:], strict=False):
        text_label = label.value if isinstance(label, ast.Constant) else None
        if isinstance(text_label, str) and ("step" in text_label or "iter" in text_label):
            labelled.append(value)
    for value in labelled:
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            left, right = ast.unparse(value.left), ast.unparse(value.right)
            other = value.right if left == text else value.left if right == text else None
            if isinstance(other, (ast.Name, ast.Attribute)) and text not in ast.unparse(other):
                return ast.unparse(other)
            if isinstance(other, ast.Constant) and type(other.value) is int and other.value > 0:
                return str(other.value)  # `step=global_step + 1` before its increment
    return None


def step_arguments(call: ast.Call) -> list[ast.expr]:
    """The values a log call labels as step numbers: `step=x`, `global_step=x`,
    `add_scalar(tag, value, x)`, `logkv("step", x)`, `print("iteration:", x)`,
    `{"step": x}`, and format fields after a step label (`f"Iteration {x}"`,
    `"[Step %d]" % x`, `"Steps : {:d}".format(x)`, `logger.info("step %d", x)`)."""
    found = [k.value for k in call.keywords if k.arg and _labels_step(k.arg)]
    if last_name(call.func).startswith("add_") and len(call.args) > _TENSORBOARD_STEP:
        found.append(call.args[_TENSORBOARD_STEP])
    found += _after_labels(call.args)
    found += _logging_style(call.args)
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        for node in ast.walk(argument):
            found += _fields(node)
    return found


def dict_steps(node: ast.AST) -> list[ast.expr]:
    """`{"step": x, "steps": y}`: the values a metrics dict keys as step numbers (what a log
    shows; not a number to count by: a dict may hold several)."""
    if not isinstance(node, ast.Dict):
        return []
    return [
        value
        for key, value in zip(node.keys, node.values, strict=True)
        if isinstance(key, ast.Constant)
        and isinstance(key.value, str)
        and _labels_step(key.value.removesuffix("s"))
    ]


def position_arguments(call: ast.Call) -> list[ast.expr]:
    """The values a log call shows as a place among a total: `f"[{i}/{n}]"`, `"Iter[%3d/%3d]"
    % (i + 1, n)`, `"{}/{}".format(i, n)`, and the first argument of a progress call."""
    if is_progress_call(call):
        return [call.args[0]]
    found: list[ast.expr] = []
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        for node in ast.walk(argument):
            found += _place_fields(node)
    return found


def _place_fields(node: ast.AST) -> list[ast.expr]:
    """The fields of one template that a `/` and another field follow."""
    if isinstance(node, ast.JoinedStr):
        parts: list[str | ast.expr] = [
            value.value if isinstance(value, ast.FormattedValue) else str(value.value)
            for value in node.values
            if isinstance(value, (ast.FormattedValue, ast.Constant))
        ]
        return [
            part
            for part, after, then in zip(parts, parts[1:], parts[2:], strict=False)
            if isinstance(part, ast.expr) and isinstance(after, str)
            and after.strip().startswith("/") and not isinstance(then, str)
        ]  # fmt: skip
    if isinstance(node, ast.BinOp) and _is_template(node):
        right = node.right
        values = right.elts if isinstance(right, ast.Tuple) else [right]
        text = str(text_of(node.left))
        matches = [m for m in _PERCENT.finditer(text) if m.group(1) != "%"]
        return [
            values[position]
            for position, (match, following) in enumerate(zip(matches, matches[1:], strict=False))
            if text[match.end() : following.start()].strip() == "/" and position < len(values)
        ]
    template = format_template(node)
    if isinstance(node, ast.Call) and template is not None and "/" in template:
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError:
            return []
        found, position = [], 0
        for (_, field, _, _), (after, following, _, _) in zip(parsed, parsed[1:], strict=False):
            if field is None:
                continue
            index = int(field) if field.isdigit() else position if field == "" else None
            position += field == ""
            if after.strip() == "/" and following is not None and index is not None:
                found += node.args[index : index + 1]
        return found
    return []


def _labels_step(name: str) -> bool:
    lowered = name.lower()
    return lowered.endswith(("step", "iter", "iteration")) and not lowered.startswith("max")


def _labelled(text: str) -> bool:
    return bool(_STEP_LABEL.search(text))


def _after_labels(arguments: list[ast.expr]) -> list[ast.expr]:
    """`logkv("step", x)`, `print("iteration: ", x)`: a value after a label."""
    return [
        value
        for label, value in zip(arguments, arguments[1:], strict=False)
        if isinstance(label, ast.Constant)
        and isinstance(label.value, str)
        and _labelled(label.value)
        and not _PERCENT.search(label.value)
    ]


def _logging_style(arguments: list[ast.expr]) -> list[ast.expr]:
    """`logger.info("step %d loss %f", step, loss)`: % fields filled from the arguments."""
    if not arguments or not isinstance(arguments[0], ast.Constant):
        return []
    template = arguments[0].value
    if not isinstance(template, str):
        return []
    return _percent_fields(template, arguments[1:])


def _fields(node: ast.AST) -> list[ast.expr]:
    """The labelled values of an f-string, a `"...".format(...)`, a `"..." % (...)`."""
    if isinstance(node, ast.JoinedStr):
        return _fstring_fields(node)
    template = format_template(node)
    if isinstance(node, ast.Call) and template is not None:
        return _format_fields(template, node)
    if isinstance(node, ast.BinOp) and _is_template(node):
        right = node.right
        values = right.elts if isinstance(right, ast.Tuple) else [right]
        return _percent_fields(str(text_of(node.left)), values)
    return []


def format_template(node: ast.AST) -> str | None:
    """`"step {}".format(...)`: the text formatted, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return node.func.value.value
    return None


def _is_template(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and text_of(node.left) is not None
    )


def text_of(node: ast.expr) -> str | None:
    """A text written as one constant, or as constants added (`"Epoch Step: %6d | " + "..."`)."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = text_of(node.left), text_of(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _fstring_fields(node: ast.JoinedStr) -> list[ast.expr]:
    found, before = [], ""
    for value in node.values:
        if isinstance(value, ast.FormattedValue):
            if _labelled(before):
                found.append(value.value)
            before = ""
        elif isinstance(value, ast.Constant):
            before += str(value.value)
    return found


def _format_fields(template: str, call: ast.Call) -> list[ast.expr]:
    found, position = [], 0
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return []
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    for literal, field, _, _ in parsed:
        if field is None:
            continue
        value: ast.expr | None
        if field == "":
            value = call.args[position] if position < len(call.args) else None
            position += 1
        elif field.isdigit():
            value = call.args[int(field)] if int(field) < len(call.args) else None
        else:
            value = keywords.get(field)
        if value is not None and _labelled(literal):
            found.append(value)
    return found


def _percent_fields(template: str, values: list[ast.expr]) -> list[ast.expr]:
    found, start, position = [], 0, 0
    for match in _PERCENT.finditer(template):
        if match.group(1) == "%":
            continue
        if position < len(values) and _labelled(template[start : match.start()]):
            found.append(values[position])
        position, start = position + 1, match.end()
    return found
