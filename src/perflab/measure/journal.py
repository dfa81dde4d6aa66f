"""A journaling executor: what makes ``perflab lab --resume`` repeat no finished measurement.

Every run the wrapped executor completes is appended (and fsync'd) to a JSON-lines journal,
keyed by the run spec and how many identical specs came before it. On resume, a study is run
again from the start with the same seed: each spec whose key is in the journal gets its recorded
result back instantly instead of a new process, so the study takes the same decisions (shuffled
orders, adaptive stops) and records the same measurements, and only the runs that never finished
are executed.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, fields
from typing import Any, Sequence

from perflab.model import RunResult, RunSpec


def spec_key(spec: RunSpec) -> str:
    """A stable text key for a spec: everything that changes what the run measures."""
    return json.dumps(
        {
            "argv": list(spec.argv), "shell": spec.shell,
            "cpus": list(spec.cpus) if spec.cpus is not None else None,
            "mem_node": spec.mem_node, "env": sorted((spec.env or {}).items()),
            "cwd": spec.cwd, "stdin": spec.stdin, "label": spec.label,
            "perf": list(spec.perf_events) if spec.perf_events else None,
            "params": {str(k): str(v) for k, v in sorted((spec.params or {}).items())},
        },
        sort_keys=True,
    )


def _result_from(d: dict) -> RunResult:
    names = {f.name for f in fields(RunResult)}
    return RunResult(**{k: v for k, v in d.items() if k in names})


class JournalExecutor:
    """Wraps an executor; records each finished run, replays recorded runs on resume."""

    def __init__(self, inner: Any, path: str, replay: bool = True) -> None:
        self.inner = inner
        self.path = path
        self.replayed = 0
        self.executed = 0
        self._seen: Counter[str] = Counter()
        self._recorded: dict[str, dict] = {}
        if replay and os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        break  # a torn last line from a kill: everything before it is good
                    self._recorded[entry["key"]] = entry
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _next_key(self, base: str) -> str:
        self._seen[base] += 1
        return f"{base}#{self._seen[base]}"

    def _append(self, entry: dict) -> None:
        self._fh.write(json.dumps(entry) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def run(self, spec: RunSpec) -> RunResult:
        key = self._next_key("run:" + spec_key(spec))
        if key in self._recorded:
            self.replayed += 1
            return _result_from(self._recorded[key]["result"])
        result = self.inner.run(spec)
        self.executed += 1
        self._append({"key": key, "result": asdict(result)})
        return result

    def run_concurrent(self, specs: Sequence[RunSpec], gate: bool = True) -> Any:
        key = self._next_key("conc:" + json.dumps([spec_key(s) for s in specs]) + f":{gate}")
        if key in self._recorded:
            self.replayed += len(specs)
            rec = self._recorded[key]
            from perflab.measure.executor import ConcurrentResult

            return ConcurrentResult(
                results=[_result_from(r) for r in rec["results"]],
                start_spread_ns=rec["start_spread_ns"], release_ns=rec["release_ns"],
            )
        out = self.inner.run_concurrent(specs, gate=gate)
        self.executed += len(specs)
        self._append({
            "key": key, "results": [asdict(r) for r in out.results],
            "start_spread_ns": out.start_spread_ns, "release_ns": out.release_ns,
        })
        return out

    def close(self) -> None:
        self._fh.close()
