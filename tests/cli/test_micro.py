"""`perflab micro` on the command line: bad input ends with exit status 2."""

from __future__ import annotations

import pytest


def test_an_unknown_benchmark_exits_2():
    from perflab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["micro", "--bench", "nope", "--db", "/nonexistent/x.db"])
    assert exc.value.code == 2
