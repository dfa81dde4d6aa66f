"""The study shape's core: the campaign context manager and the Session's store-backed resume."""

from __future__ import annotations

import os
import signal
import types
from dataclasses import asdict, dataclass, field

import pytest

from perflab.measure.executor import MockExecutor
from perflab.model import RunSpec
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.session import Session


def _machine() -> Machine:
    return Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})


@dataclass(frozen=True)
class ToyConfig:
    n: int = 6

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ToyConfig":
        return cls(**d)


@dataclass
class ToyResult:
    walls: list[float] = field(default_factory=list)
    campaign_id: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)


class Boom(KeyboardInterrupt):
    pass


def _toy(stop_after: int | None = None) -> types.ModuleType:
    mod = types.ModuleType("toy")
    mod.NAME = "toy"
    mod.Config = ToyConfig

    def execute(config, session, machine):
        out = ToyResult()
        session.warmup(RunSpec(argv=("sleep", "0.5"), label="warm"))
        for i in range(config.n):
            if stop_after is not None and session.executed == stop_after:
                raise Boom()
            r = session.run(RunSpec(argv=("sleep", f"0.{i + 1}"), label="s", params={"i": i}), rep=0)
            out.walls.append(r.wall_s)
        return out

    mod.execute = execute
    return mod


def test_campaign_marks_done_interrupted_failed(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        with store.open_campaign("toy", {}) as c:
            c.summary = {"ok": 1}
        assert store.campaign(c.id).status == "done" and store.campaign(c.id).summary == {"ok": 1}
        with pytest.raises(KeyboardInterrupt):
            with store.open_campaign("toy", {}) as c2:
                raise KeyboardInterrupt
        assert store.campaign(c2.id).status == "interrupted"
        with pytest.raises(ValueError):
            with store.open_campaign("toy", {}) as c3:
                raise ValueError("bad thing")
        camp = store.campaign(c3.id)
        assert camp.status == "failed" and "bad thing" in camp.summary["error"]


def test_sigterm_marks_interrupted(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        with pytest.raises(KeyboardInterrupt):
            with store.open_campaign("toy", {}) as c:
                os.kill(os.getpid(), signal.SIGTERM)
        assert store.campaign(c.id).status == "interrupted"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_resume_repeats_no_stored_run(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        ex = MockExecutor()
        with pytest.raises(Boom):
            run_study(_toy(stop_after=4), ToyConfig(), store, ex, machine=_machine())
        camp = store.campaigns()[-1]
        assert camp.status == "interrupted" and camp.n_measurements == 4
        ex2 = MockExecutor()
        result = run_study(_toy(), ToyConfig(), store, ex2, machine=_machine(), resume=camp.id)
        # the warm-up and the 4 stored runs are not executed again; the last 2 are
        assert [s.argv[1] for s in ex2.calls] == ["0.5", "0.6"]
        assert result.walls == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
        camp = store.campaign(camp.id)
        assert camp.status == "done" and camp.n_measurements == 6 and camp.summary["walls"][-1] == 0.6


def test_concurrent_copies_need_distinct_keys(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        cid = store.start_campaign("toy", {})
        session = Session(MockExecutor(), store, cid)
        specs = [RunSpec(argv=("sleep", "0.1"), label="c", params={"copy": k}) for k in range(3)]
        out = session.run_concurrent(specs, rep=0)
        assert len(out.results) == 3 and store.campaign(cid).n_measurements == 3
        with pytest.raises(ValueError):
            session.run_concurrent([specs[0], specs[0]])
