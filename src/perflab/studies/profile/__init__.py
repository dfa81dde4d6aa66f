"""Where the time of a slow event goes: perf or Callgrind profiles, whole run or marker windows.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Config": "study",
    "NAME": "study",
    "ProfileResult": "study",
    "analyse": "study",
    "execute": "study",
    "plan": "study",
    "MIN_TEST_RECORDINGS": "diff",
    "ProfileDiffConfig": "diff",
    "ProfileDiffResult": "diff",
    "Side": "diff",
    "load_side": "diff",
    "unit_of": "diff",
    "Function": "parse",
    "Profile": "parse",
    "Sample": "parse",
    "aggregate": "parse",
    "annotate": "parse",
    "demangle": "parse",
    "diff_profiles": "parse",
    "fold_symbol": "parse",
    "parse_annotate": "parse",
    "parse_script": "parse",
    "read_samples": "parse",
    "strip_params": "parse",
    "top_functions": "parse",
    "attach_targets": "window",
    "compile_marker": "window",
    "event_markers": "window",
})
