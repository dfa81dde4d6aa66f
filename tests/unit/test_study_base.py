"""The JSON form every study's Config and Result share (studies/base.py, model.known_fields)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from perflab.model import Workload, known_fields
from perflab.stats.interval import CI
from perflab.studies.cores import study as cores
from perflab.studies.frontend import study as frontend
from perflab.studies.instances import study as instances
from perflab.studies.lab import study as lab
from perflab.studies.micro import study as micro
from perflab.studies.base import StudyConfig

WORKLOAD = Workload(name="w", argv=("prog", "-n", "3"), env={"A": "1"}, fork_arg=("--fork", "{n}"))


@pytest.mark.parametrize("config", [
    cores.CoresConfig(workload=WORKLOAD, cpus=(0, 1)),
    instances.InstancesConfig(workload=WORKLOAD, ns=(1, 2, 4), policies=("spread", "pack")),
    frontend.FrontendConfig(per_cpu=(0,), modes=("4k",)),
    micro.MicroConfig(benches=("getpid",), abis=("m64",)),
    lab.LabConfig(studies=("run", "cores"), workload_args=("-n", "3")),
], ids=lambda c: type(c).__name__)
def test_config_survives_json_and_a_newer_key(config):
    stored = json.loads(json.dumps({**config.as_dict(), "added_later": 1}))
    assert type(config).from_dict(stored) == config


@dataclass(frozen=True)
class Nested(StudyConfig):
    pairs: tuple[tuple[str, tuple[int, ...]], ...] = ()
    workload: Workload | None = None

    decoders = {"workload": Workload.from_dict}


def test_nested_lists_become_tuples_and_a_null_record_stays_null():
    back = Nested.from_dict({"pairs": [["a", [1, 2]], ["b", []]], "workload": None})
    assert back == Nested(pairs=(("a", (1, 2)), ("b", ())))
    assert Nested.from_dict(json.loads(json.dumps(Nested(workload=WORKLOAD).as_dict()))).workload == WORKLOAD


def test_results_keep_the_shared_fields_and_drop_unknown_keys():
    res = micro.MicroResult(abis=["m64"], runs=5, failures={"exit 1": 2}, notes=["n"], campaign_id=7)
    d = json.loads(json.dumps({**res.as_dict(), "gone": True}))
    assert micro.MicroResult.from_dict(d) == res
    assert known_fields(micro.MicroResult, {"runs": 1, "nope": 2}) == {"runs": 1}


def test_ci_from_optional():
    assert CI.from_optional(None) is None
    assert CI.from_optional({"low": 1, "high": 2, "level": 0.95}) == CI(1.0, 2.0, 0.95)
