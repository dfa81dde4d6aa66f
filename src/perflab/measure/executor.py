"""Executors: run a RunSpec and return what it measured.

The pieces live in their own modules: the interface (interface.py: Executor, ConcurrentResult),
the real executor (real.py), the spawn server it uses for one run at a time (server.py), the start
barrier for concurrent copies (barrier.py) and the deterministic mock (mock.py). This module is the one
import point studies and the CLI use.
"""

from __future__ import annotations

from perflab.measure.barrier import spawnrun_trampoline
from perflab.measure.interface import ConcurrentResult, Executor
from perflab.measure.mock import MockExecutor
from perflab.measure.real import RealExecutor, check_cpus, default_executor
from perflab.measure.server import build_helper

__all__ = ["ConcurrentResult", "Executor", "MockExecutor", "RealExecutor", "build_helper",
           "check_cpus", "default_executor", "spawnrun_trampoline"]
