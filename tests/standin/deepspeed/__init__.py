"""A stand-in for deepspeed: the engine's step as DeepSpeed orders it."""

from deepspeed.runtime.engine import DeepSpeedEngine as DeepSpeedEngine
