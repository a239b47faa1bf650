"""The process's one window, hooked now in a patched script or once torch is imported
(zero-patch: sitecustomize calls arm())."""

from __future__ import annotations

import sys

from nsysgen.shipped.step_window.loop import StepWindow

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


window = StepWindow()
if "torch.optim.optimizer" in sys.modules:
    # Imported by a patched script, after its own imports: hook the optimizers now, so that
    # optimizer steps before the loop's first open() (a warm-up, a CUDA graph's capture) count.
    window.install()


def arm() -> None:
    """Zero-patch: hook the optimizers once torch is imported (sitecustomize calls this)."""
    if getattr(sys, "_nsysgen_armed", False) or not window.active:
        return  # armed already (another copy of the site folder), or nothing to record here
    sys._nsysgen_armed = True  # type: ignore[attr-defined]
    if "torch" in sys.modules and "torch.optim.optimizer" in sys.modules:
        window.install()
        return
    sys.meta_path.insert(0, _AfterTorch())


class _AfterTorch:
    """Finds nothing itself: wraps the loader of every spec found for torch (a library may look
    torch up without importing it), so that the hooks go in once torch is imported whole
    (torch.optim and torch.amp included); leaves when they are in."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> Any:
        if name != "torch" or window.installed:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            mine = type(finder).__name__ == "_AfterTorch"  # this one, or another copy's
            spec = find(name, path, target) if find and not mine else None
            if spec is not None:
                break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is None:
            return spec
        finder = self

        def exec_module(module: ModuleType) -> None:
            run(module)
            window.install()
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)

        spec.loader.exec_module = exec_module
        return spec
