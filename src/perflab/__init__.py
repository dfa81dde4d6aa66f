"""perflab: a performance lab for CPU-bound throughput workloads."""

__version__ = "0.1.0"
