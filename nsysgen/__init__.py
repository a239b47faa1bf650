"""nsysgen: profiling-as-code for distributed GPU training with Nsight Systems."""

__version__ = "0.1.0"
