"""torch.optim of the stand-in: SGD keeps no step count, Adam and AdamW do."""

from torch.optim.optimizer import SGD, Adam, AdamW, Optimizer

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]
