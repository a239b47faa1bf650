"""Which calls and variables are optimizers (not LR schedulers, weight averages or loss
scalers), DeepSpeed engines, and set-ups of an optimizer that steps inside backward.
"""

from __future__ import annotations

import ast
import re

from nsysgen.patching.syntax import last_name

# Calls that set up an optimizer that steps inside backward, from gradient hooks (torchtune's
# optimizer_in_bwd, torch.distributed.optim._apply_optimizer_in_backward).
IN_BACKWARD_SETUPS = frozenset(
    {"register_optim_in_bwd_hooks", "OptimizerInBackward", "_apply_optimizer_in_backward",
     "apply_optimizer_in_backward"}
)  # fmt: skip


GRAD_HOOKS = frozenset({"register_post_accumulate_grad_hook", "register_hook"})


# Things stepped in a training loop that are not optimizers, however they were built
# (`torch.optim.lr_scheduler.OneCycleLR(...)`, `torch.optim.swa_utils.SWALR(...)`) or named
# (`opt_param_scheduler`, `ema_optimizer`): LR schedulers, weight averages, loss scalers.
_NOT_OPTIMIZER_PARTS = ("sched", "swa", "scaler", "warmup", "averag")


_NOT_OPTIMIZER_WORDS = frozenset({"ema", "lr", "sched", "schedule", "scheduler", "swa"})


def says_not_optimizer(name: str) -> bool:
    """`lr_scheduler`, `opt_param_scheduler`, `ema_optimizer`, `WeightEMA`, `GradScaler`."""
    lowered = name.lower()
    words = set(re.split(r"[_.]+|(?<=[a-z])(?=[A-Z])", name.replace("EMA", "_ema_").strip("_")))
    return any(part in lowered for part in _NOT_OPTIMIZER_PARTS) or bool(
        {word.lower() for word in words} & _NOT_OPTIMIZER_WORDS
    )


def names_optimizer(name: str) -> bool:
    lowered = name.lower()
    if says_not_optimizer(name):
        return False
    return "optim" in lowered or lowered.startswith("opt")


def builds_optimizer(call: ast.Call) -> bool:
    """`torch.optim.AdamW(...)`, `build_optimizer(...)`; not `optim.lr_scheduler.LambdaLR(...)`,
    `torch.optim.swa_utils.AveragedModel(...)`."""
    text = ast.unparse(call.func)
    if says_not_optimizer(text):
        return False
    return names_optimizer(last_name(call.func)) or "optim" in text.lower()


def names_engine(name: str) -> bool:
    """`engine`, `model_engine`, `self.engine`: what DeepSpeed's examples call their engine."""
    lowered = name.lower()
    return lowered == "engine" or lowered.endswith("_engine")


def deepspeed_engines(tree: ast.Module, optimizers: set[str]) -> set[str]:
    """`model_engine, optimizer, _, _ = deepspeed.initialize(...)`: {"model_engine"}, and the
    optimizer it returns goes into `optimizers`."""
    engines: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        if ast.unparse(node.value.func).split(".")[-2:] != ["deepspeed", "initialize"]:
            continue
        for target in node.targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            engines.add(ast.unparse(elements[0]))
            if len(elements) > 1:
                optimizers.add(ast.unparse(elements[1]))
    return engines
