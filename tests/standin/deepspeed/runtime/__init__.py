"""deepspeed.runtime of the stand-in."""
