"""The Hydra baseline: a no-op @hydra.main app on nsysgen's own config tree.

It composes exactly what nsysgen composes and does nothing with it, so any time it takes is
Hydra's (composition, run directories, logging set-up, and for multirun the basic launcher).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from nsysgen.resources import CONF_DIR


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    del cfg  # no-op task


if __name__ == "__main__":
    main()
