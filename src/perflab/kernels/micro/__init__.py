"""The micro driver (micro.c): every microbenchmark in one C program, built once per ABI."""

from __future__ import annotations

from pathlib import Path

from perflab.kernels.build import BuildResult, build

SOURCE = Path(__file__).resolve().parent / "micro.c"


def build_micro(abi: str) -> BuildResult:
    """micro.c built with -{abi} (m64, m32, mx32) through the build cache."""
    return build([SOURCE], f"micro_{abi}", compiler="gcc", cflags=("-O2", f"-{abi}"), ldflags=("-lm",))
