"""lightning.pytorch of the stand-in."""
