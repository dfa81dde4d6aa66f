"""`perflab frontend` on the command line: bad input ends with exit status 2."""

from __future__ import annotations

import pytest


def test_a_bad_size_exits_2():
    from perflab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["frontend", "--max-size", "lots"])
    assert exc.value.code == 2
