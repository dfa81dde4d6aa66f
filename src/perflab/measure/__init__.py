"""Executes run specs: spawn, affinity, NUMA policy, start barrier for concurrent copies, rusage, metrics, perf stat."""
