"""How a bundle looks in a terminal: what was packed and how to run and check it; and what
`perflab bundle verify` found."""

from __future__ import annotations

from typing import Any

from perflab.platform.sysfs import format_size
from perflab.studies.bundle.study import BundleResult
from perflab.studies.bundle.verify import VerifyResult


def render(result: BundleResult, console: Any) -> None:
    """The archive's size (against the budget), its files by top directory, how to run and check it."""
    console.print(f"wrote {result.output}: {result.files} files, {result.links} symlinks, "
                  f"{format_size(result.unpacked_bytes)} unpacked, {format_size(result.archive_bytes)} compressed"
                  + (f" (budget {format_size(result.budget_bytes)})" if result.budget_bytes else ""))
    for t in result.by_top:
        console.print(f"  {t.top:<8} {t.files:>5} files {format_size(t.bytes):>10}")
    console.print(f"run it: tar xzf {result.given_output} -C DIR && DIR/run.sh   "
                  f"(isolation here: {result.isolation_here or 'none available'})")
    console.print(f"check it: perflab bundle verify {result.given_output}   (campaign {result.campaign_id})")


def render_verify(result: VerifyResult, console: Any) -> None:
    """Where it ran, what was compared, the two values, the outcome, the lines that differ and the hint."""
    console.print(f"unpacked into {result.workdir}{' (removed)' if result.removed else ''}; "
                  f"ran isolated with {result.isolation} in {result.bundle_wall_s * 1e3:.1f} ms")
    console.print(f"compared {result.compared} with the {result.normal_source}:")
    console.print(f"  bundle: {result.bundle_value}\n  normal: {result.normal_value}")
    console.print(("OK: same output" if result.same else "MISMATCH: the bundle's output differs")
                  + f"  (campaign {result.campaign_id})")
    if result.differences:
        console.print("first differing lines:", markup=False)
        for line in result.differences:
            console.print(f"  {line}", markup=False)
    if result.hint:
        console.print(f"hint: {result.hint}", markup=False)
