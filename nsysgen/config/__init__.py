"""Configs as data: compose Hydra trees and sweeps, interpolate, check values and schemas.
Dicts in, a dict or issues out; nothing here knows a target or a workload by name."""
