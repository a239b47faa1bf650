"""A stand-in for lightning: the Trainer's automatic optimization as Lightning 2.x orders it."""

from lightning.pytorch.trainer.trainer import Trainer as Trainer
