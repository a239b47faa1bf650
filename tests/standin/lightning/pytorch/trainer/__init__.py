"""lightning.pytorch.trainer of the stand-in."""
