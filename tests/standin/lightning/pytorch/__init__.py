"""lightning.pytorch of the stand-in."""

from typing import Any


class Callback:
    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, index: int) -> None:
        pass
