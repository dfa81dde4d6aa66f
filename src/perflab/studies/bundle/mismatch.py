"""Why a bundle's output differs from a normal run's: the first differing lines, and what to
compare instead (a checksum metric) when the program's output changes run to run."""

from __future__ import annotations

import difflib
import re
from typing import Sequence

SHOWN_DIFFERENCES = 3


def output_differences(bundle: str, normal: str, shown: int = SHOWN_DIFFERENCES) -> list[str]:
    """The first ``shown`` lines that differ (difflib), as 'line N: bundle ... | normal ...'."""
    a, b = bundle.splitlines(), normal.splitlines()
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            x = a[i1 + k] if i1 + k < i2 else "(no line)"
            y = b[j1 + k] if j1 + k < j2 else "(no line)"
            out.append(f"line {min(i1, len(a)) + k + 1}: bundle {x[:100]!r} | normal {y[:100]!r}")
            if len(out) == shown:
                return out
    return out


def mismatch_hint(differences: list[str], metric_names: Sequence[str]) -> str:
    """Why a stdout mismatch may be no fault of the bundle, and what to compare instead."""
    numbers_only = bool(differences) and all(
        re.sub(r"\d+(\.\d+)?", "#", d.split(" | normal ")[0].split("bundle ", 1)[-1])
        == re.sub(r"\d+(\.\d+)?", "#", d.split(" | normal ")[-1]) for d in differences)
    why = ("the lines differ only in numbers (timings or rates change run to run), so stdout cannot "
           "match" if numbers_only else "stdout is compared byte for byte")
    have = f" (its metrics: {', '.join(metric_names)})" if metric_names else ""
    return (f"{why}: set checksum_metric in perflab.toml to a metric that names the result{have}, "
            "e.g. metrics = ['(?m)^checksum: (?P<checksum>\\S+)'] and checksum_metric = \"checksum\"")
