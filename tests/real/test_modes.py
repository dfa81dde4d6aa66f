"""stats.modes in a fresh interpreter: which libraries a small sample loads."""

from __future__ import annotations

import subprocess
import sys


def test_a_noisy_sample_too_small_for_tailed_speeds_keeps_scipy_unloaded():
    # 10 runs of `true` with one outlier (CV 10 %): no rule can call two speeds at n < 20 unless the
    # plain mixture does, so the ex-Gaussian (scipy, ~240 ms of a `perflab run --runs 10`) is skipped
    code = ("import sys; from perflab.stats.modes import detect_modes; "
            "m = detect_modes([594e-6, 571e-6, 600e-6, 566e-6, 778e-6, 590e-6, 610e-6, 585e-6, 620e-6, 575e-6]); "
            "assert not m.multimodal; print('scipy' in ' '.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
