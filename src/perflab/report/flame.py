"""The flame graph of a profile, and the differential one of a profile diff, as one HTML box.

The box carries the call tree as JSON and the script that draws it (templates/flame.js, inline:
the report opens with no network): frames as positioned boxes, widths by inclusive samples, the
root at the bottom; click to zoom into a frame and list its callers and callees; a search box
that highlights the frames a regular expression matches and says their share of the samples; a
tooltip with the samples, the share of the windows and, over 2+ recordings, the share's
interval. The differential graph draws B's frames at B's widths, coloured by the change of their
inclusive share against A (orange grew, blue shrank, deeper for more), marks with an outline
and "*" only the frames whose function the flat diff's test calls different, and names the
frames found only on one side.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any, Mapping

_CSS = """
.flame { position: relative; font-size: 11px; margin: 0.4em 0 1em; }
.flame-bar { display: flex; gap: 0.8em; align-items: center; margin-bottom: 0.3em; }
.flame-graph { position: relative; width: 100%; overflow: hidden; border: 1px solid var(--line); }
.flame-frame { position: absolute; height: 17px; box-sizing: border-box; padding: 0 3px; line-height: 17px;
  overflow: hidden; white-space: nowrap; text-overflow: ellipsis; border-right: 1px solid #fff; cursor: pointer; }
.flame-frame.flame-above { opacity: 0.55; }
.flame-frame.flame-hit { background: #c51b7d !important; color: #fff; }
.flame-frame.flame-marked { outline: 2px solid #1b2631; outline-offset: -2px; font-weight: bold; }
.flame-frame.flame-new { border: 1px dashed #1b2631; }
.flame-tip { position: absolute; z-index: 2; max-width: 320px; background: #fff; border: 1px solid var(--muted);
  padding: 0.3em 0.5em; box-shadow: 0 1px 4px rgba(0,0,0,.2); pointer-events: none; }
.flame-info { color: var(--fg); margin-top: 0.4em; }
.flame-info ul { margin: 0.2em 0; }
.flame-legend { color: var(--muted); }
"""


def _script() -> str:
    return (resources.files("perflab.report") / "templates" / "flame.js").read_text()


def _json(data: Mapping[str, Any]) -> str:
    # inside <script> no "<" at all: nothing from a program can close it or open a comment
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def flame_box(flame: Mapping[str, Any], key: str, legend: str, extra: Mapping[str, Any] | None = None,
              only: list[str] | None = None) -> str:
    """One flame graph (a profile's `flame`, or a diff's with `extra` labels) as an HTML box."""
    data = {**flame, **(extra or {})}
    named = "".join(f"<li>{html.escape(o)}</li>" for o in only or [])
    return (f'<style>{_CSS}</style><div class="flame" id="flame-{html.escape(key)}">'
            '<div class="flame-bar"><input type="search" class="flame-search" '
            'placeholder="search frames (regular expression)" aria-label="search frames">'
            '<button type="button" class="flame-reset">reset zoom</button>'
            '<span class="flame-found" aria-live="polite"></span></div>'
            f'<div class="flame-graph" role="img" aria-label="{html.escape(legend)}"></div>'
            '<div class="flame-tip" hidden></div><div class="flame-info"></div>'
            f'<p class="flame-legend">{html.escape(legend)}</p>'
            + (f'<ul class="flame-only">{named}</ul>' if named else "")
            + f'<script type="application/json" class="flame-data">{_json(data)}</script>'
            f'<script>{_script()}</script></div>')
