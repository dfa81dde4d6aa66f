"""The report's Markdown shows C++ symbols as code: `std::vector<mh::Particle>` in a code span,
never '&lt;' in a file people read as text; the HTML escapes them as before."""

from __future__ import annotations

from types import SimpleNamespace

from perflab.report.model import Code, Table
from perflab.report.render import table_to_markdown
from perflab.report.html.profile import profile_section
from perflab.studies.profile.study import ProfileResult

SYMBOL = "std::vector<mh::Particle, std::allocator<mh::Particle> >::_M_realloc_insert<mh::Particle const&>"


def _campaign():
    return SimpleNamespace(study="profile", id=4, status="done", labels={})


def test_profile_symbols_are_code_spans_in_markdown():
    summary = {"message": "hottest: push_back", "event": "cycles",
               "top": [{"share": 0.31, "samples": 1200, "symbol": SYMBOL, "dso": "minihlt"},
                       {"share": 0.02, "samples": 80, "symbol": None, "dso": "[kernel.kallsyms]"}]}
    md = table_to_markdown(profile_section(_campaign(), ProfileResult.from_dict(summary), []).tables[0])
    assert f"| `{SYMBOL}` | `minihlt` |" in md
    assert "&lt;" not in md and "| — | `[kernel.kallsyms]` |" in md


def test_callgrind_symbols_are_code_spans_too():
    summary = {"instrument": "callgrind", "count_events": ["Ir"], "top": [],
               "count_top": [{"share": 0.5, "self_": [10], "incl": [20], "symbol": "a<b>::c", "obj": "x.so", "spread": 0.0}]}
    md = table_to_markdown(profile_section(_campaign(), ProfileResult.from_dict(summary), []).tables[0])
    assert "| `a<b>::c` | `x.so` |" in md


def test_a_code_span_holds_what_would_break_it():
    md = table_to_markdown(Table("t", ["s", "plain"], [[Code("a|b`c"), "<x>*"]]))
    # a pipe escaped for the table, a fence longer than the backtick inside; plain text still escaped
    assert md.splitlines()[-1] == "| ``a\\|b`c`` | &lt;x>\\* |"
