"""`perflab profile --tree`: the call tree top-down, as `perf report --children` shows it.

Each line is a frame: its inclusive share of the windows' samples (with its interval across
recordings where there are 2 or more), its self share, and its name indented by depth; frames
under the prune share are left out, and a line never passes WIDTH columns (names are cut with
"…", and past MAX_INDENT the depth is written as a number instead of drawn).
"""

from __future__ import annotations

from typing import Any, Iterator

from rich.markup import escape

from perflab.studies.profile.stacks import Flame, Node
from perflab.studies.profile.study import ProfileResult

WIDTH = 100
MAX_INDENT = 40


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(1, room - 1)] + "…"


def tree_lines(flame: Flame, prune: float, width: int = WIDTH, unit: str = "samples") -> Iterator[str]:
    """The tree's lines, each at most `width` columns; children largest first."""
    total = flame.root.total or 1.0
    ci = flame.recordings >= 2
    head = f"{'total':>7} {f'{flame.level:.0%} CI':>13} {'self':>6}  frame" if ci else \
        f"{'total':>7} {'self':>6}  frame"
    yield head

    def figures(n: Node) -> str:
        share = f"{100 * n.total / total:6.2f}%"
        interval = ""
        if ci:
            interval = f"{100 * n.ci[0]:5.1f}-{100 * n.ci[1]:5.1f}% " if n.ci else f"{'':13} "
        return f"{share} {interval}{100 * n.self_ / total:5.1f}%  "

    def walk(n: Node, prefix: str, depth: int) -> Iterator[str]:
        kids = [c for c in sorted(n.children.values(), key=lambda c: (-c.total, c.name))
                if c.total / total >= prune]
        for i, c in enumerate(kids):
            last = i == len(kids) - 1
            branch = "└─ " if last else "├─ "
            if len(prefix) + 3 <= MAX_INDENT:
                lead, below = prefix + branch, prefix + ("   " if last else "│  ")
            else:  # too deep to draw: the depth as a number keeps the line inside the width
                lead, below = f"{prefix[:MAX_INDENT - 8]}[{depth + 1:>3}] ", prefix
            fig = figures(c)
            yield fig + lead + _cut(c.name, width - len(fig) - len(lead))
            yield from walk(c, below, depth + 1)

    fig = figures(flame.root)
    yield fig + f"{flame.root.name} ({flame.root.total:,.0f} {unit} in {flame.recordings} recording(s))"
    yield from walk(flame.root, "", 0)


def render_tree(result: ProfileResult, console: Any, prune: float) -> None:
    """The call tree, or the one line that says why there is none."""
    if result.flame is None:
        console.print("no call tree: the recordings kept no stacks (record with --call-graph fp)")
        return
    unit = "instructions" if result.instrument == "callgrind" else "samples"
    for line in tree_lines(result.flame, prune, unit=unit):
        console.print(escape(line), highlight=False, soft_wrap=True)
    console.print(f"frames under {prune:.1%} of the {unit} left out (--prune)"
                  + (f"; intervals: Student's t over the {result.flame.recordings} recordings' shares, "
                     f"{result.flame.level:.0%}" if result.flame.recordings >= 2 else ""))
