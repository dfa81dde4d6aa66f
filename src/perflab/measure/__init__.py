"""Executes run specs: spawn, affinity, NUMA policy, gated start, rusage, metrics, perf stat."""
