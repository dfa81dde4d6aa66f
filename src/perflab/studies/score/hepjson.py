"""HEPscore's JSON in and out: a HEPscore result (hep-score's output: ``benchmarks`` with every
repetition, ``settings``, ``wl-scores``, ``score``) and a HEP Benchmark Suite report (``json_version``,
``host``, ``profiles.hepscore``, other profiles with each copy's score) read into a ScoreResult; a
ScoreResult written as a suite report, perflab's intervals and flags under a key of its own
(``perflab``) that a site's pipeline may ignore.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.studies.score.analysis import analyse_workloads, check_file, smt_note
from perflab.studies.score.flags import copy_groups
from perflab.studies.score.result import ScoreResult, WorkloadScore

JSON_VERSION = "v2.0"
OWN_KEY = "perflab"
LAYOUTS = "a HEPscore result (with 'benchmarks' and 'wl-scores') or a HEP Benchmark Suite report (with 'profiles')"


def load(path: str) -> ScoreResult:
    """The report at ``path`` as a ScoreResult (recomputed, flagged); bad input is one PerflabError."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PerflabError(f"{path}: no such file; give the path of a HEPscore or suite JSON report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PerflabError(f"{path}: cannot read it ({exc}); give a readable JSON file") from None
    except json.JSONDecodeError as exc:
        raise PerflabError(f"{path}: not JSON (line {exc.lineno}: {exc.msg}); give {LAYOUTS}") from None
    return parse(doc, p.name)


def parse(doc: Any, name: str = "report") -> ScoreResult:
    """Either layout (see the module docstring), or a PerflabError naming what is missing."""
    if not isinstance(doc, dict):
        raise PerflabError(f"{name}: the JSON is a {type(doc).__name__}, not an object; give {LAYOUTS}")
    try:
        if isinstance(doc.get(OWN_KEY), dict) and doc[OWN_KEY].get("study") == "score":
            return _own(doc, name)
        if isinstance(doc.get("profiles"), dict):
            return _suite(doc, name)
        if isinstance(doc.get("benchmarks"), dict) and isinstance(doc.get("wl-scores"), dict):
            return _result(doc, name)
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise PerflabError(f"{name}: a malformed score report ({type(exc).__name__}: {exc}); "
                           "give the file HEPscore or the suite wrote, unedited") from None
    raise PerflabError(f"{name}: neither layout perflab reads (no 'profiles', no 'benchmarks' with "
                       f"'wl-scores'); give {LAYOUTS}")


def _references(wl_scores: dict[str, Any]) -> dict[str, float]:
    refs = {k[:-4]: float(v) for k, v in wl_scores.items() if k.endswith("_ref")}
    if not refs:
        raise ValueError("a workload in 'wl-scores' has no '<metric>_ref' reference value")
    return refs


def _result(doc: dict[str, Any], name: str) -> ScoreResult:
    """hep-score's own output: every repetition of every workload, references in 'wl-scores'."""
    settings = doc.get("settings") or {}
    _check_method(settings, name)
    workloads = []
    for wl, bench in doc["benchmarks"].items():
        refs = _references(doc["wl-scores"][wl])
        runs = sorted((k for k in bench if k.startswith("run") and k[3:].isdigit()), key=lambda k: int(k[3:]))
        values = [{m: float(bench[r]["report"]["wl-scores"][m]) for m in refs} for r in runs
                  if isinstance(bench[r].get("report"), dict)]
        info = bench.get("run_info") or {}
        workloads.append(WorkloadScore(
            name=wl, references=refs, weight=float(bench.get("weight", 1.0)), values=values,
            copies=info.get("copies"), threads_per_copy=info.get("threads_per_copy"),
            unit=", ".join(refs), copy_spread=[s for s in (_stats(bench[r], refs) for r in runs) if s]))
    result = ScoreResult(
        suite=str(settings.get("name", "HEPscore")), source=f"imported from {name} (HEPscore result)",
        scaling=float(settings.get("scaling", 1)), reference_machine=str(settings.get("reference_machine", "")),
        workloads=workloads, file_score=_num(doc.get("score")), host={})
    result.notes.append("the file records no host hardware: no score per core")
    return check_file(analyse_workloads(result))


def _suite(doc: dict[str, Any], name: str) -> ScoreResult:
    """The HEP Benchmark Suite's report: host metadata, profiles.hepscore (the median repetition
    only), and profiles with each copy's score (HS06, SPEC CPU 2017)."""
    profiles = doc["profiles"]
    hs = profiles.get("hepscore")
    if not isinstance(hs, dict) or not isinstance(hs.get("wl-scores"), dict):
        raise PerflabError(f"{name}: a suite report without a 'hepscore' profile (wl-scores); "
                           "perflab imports suite reports that ran HEPscore")
    settings = hs.get("settings") or {}
    _check_method(settings, name)
    app = hs.get("app_info") or {}
    host = host_of(doc.get("host") or {})
    workloads = []
    for wl, scores in hs["wl-scores"].items():
        refs = _references(scores)
        workloads.append(WorkloadScore(name=wl, references=refs, values=[{m: float(scores[m]) for m in refs}],
                                       unit=", ".join(refs)))
    result = ScoreResult(
        suite=str(app.get("name", "HEPscore")), source=f"imported from {name} (suite report {doc.get('json_version', '')})",
        scaling=float(settings.get("scaling", 1)),
        reference_machine=str(app.get("reference_machine", settings.get("reference_machine", ""))),
        workloads=workloads, file_score=_num(hs.get("score")), file_score_per_core=_num(hs.get("score_per_core")),
        host=host, cores=host.get("cpus"))
    reps = settings.get("repetitions")
    result.cannot_tell = (f"no interval: the report keeps one value per workload (the median of {reps or 'its'} "
                          "repetitions); import the HEPscore result file, which keeps each repetition")
    analyse_workloads(result)
    for prof, body in profiles.items():
        if isinstance(body, dict) and isinstance(body.get("bmks"), dict):
            for bmk, copies in body["bmks"].items():
                if isinstance(copies, list) and copies and all(isinstance(c, (int, float)) for c in copies):
                    result.copy_groups.append(copy_groups(f"{prof} {bmk}", copies, smt_note(host)))
    return check_file(result)


def _own(doc: dict[str, Any], name: str) -> ScoreResult:
    """perflab's own export: the full result under its key, checked against the suite part."""
    result = ScoreResult.from_dict(doc[OWN_KEY])
    hs = (doc.get("profiles") or {}).get("hepscore") or {}
    file_score = _num(hs.get("score"))
    if file_score is not None and result.score is not None and abs(file_score - result.score) > 0.001:
        result.mismatch.append(f"the file's profiles.hepscore score {file_score:g} differs from its "
                               f"'{OWN_KEY}' section's {result.score:g}")
    result.source = f"imported from {name} (perflab export of: {result.source})"
    result.campaign_id = None
    return result


def _stats(run: dict[str, Any], refs: dict[str, float]) -> dict[str, float] | None:
    """The copies' summary of one repetition from its wl-stats: flat, per metric, or under
    throughput_score (the CMS workloads' name for the copies' event rate)."""
    stats = (run.get("report") or {}).get("wl-stats") or {}
    metric = next(iter(refs))
    s = stats if "min" in stats else stats.get(metric) or stats.get("throughput_score") or {}
    keys = ("min", "median", "max", "count")
    if all(isinstance(s.get(k), (int, float)) for k in keys) and s["median"] > 0:
        return {k: float(s[k]) for k in keys}
    return None


def _check_method(settings: dict[str, Any], name: str) -> None:
    m = settings.get("method", "geometric_mean")
    if m != "geometric_mean":
        raise PerflabError(f"{name}: method '{m}': perflab recomputes HEPscore's geometric_mean only")


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def host_of(host: dict[str, Any]) -> dict[str, Any]:
    """The suite report's host section in perflab's words (hostname, CPU model, CPUs, sockets, SMT)."""
    cpu = ((host.get("HW") or {}).get("CPU") or {})

    def num(key: str) -> int | None:
        try:
            return int(str(cpu.get(key)))
        except ValueError:
            return None

    out = {"hostname": host.get("hostname"), "cpu_model": cpu.get("CPU_Model"), "cpus": num("CPU"),
           "sockets": num("Sockets"), "threads_per_core": num("Threads_per_core"),
           "cores_per_socket": num("Cores_per_socket"),
           "numa": {k: v for k, v in cpu.items() if k.startswith("NUMA_node")},
           "software": dict(host.get("SW") or {})}
    return {k: v for k, v in out.items() if v not in (None, {}, "")}


def export(result: ScoreResult) -> dict[str, Any]:
    """The suite report layout a site's pipeline reads, with perflab's whole result under its key."""
    h = result.host
    cpu = {"CPU_Model": h.get("cpu_model"), "CPU": str(h["cpus"]) if h.get("cpus") else None,
           "Sockets": str(h["sockets"]) if h.get("sockets") else None,
           "Threads_per_core": str(h["threads_per_core"]) if h.get("threads_per_core") else None}
    wl_scores = {}
    for w in result.workloads:
        chosen = w.values[w.chosen[0]] if w.values and len(w.chosen) == 1 else None
        entry: dict[str, Any] = {}
        for metric, ref in w.references.items():
            if chosen is not None:
                entry[metric] = chosen[metric]
            elif w.values:
                entry[metric] = sum(w.values[i][metric] for i in w.chosen) / len(w.chosen)
            entry[f"{metric}_ref"] = ref
        wl_scores[w.name] = entry
    reps = max((len(w.values or w.rep_ratios) for w in result.workloads), default=0)
    hepscore = {"app_info": {"name": result.suite, "reference_machine": result.reference_machine},
                "settings": {"method": "geometric_mean", "repetitions": reps, "scaling": result.scaling},
                "wl-scores": wl_scores, "score": result.score,
                "status": "success" if result.score is not None else "failed"}
    if result.score_per_core is not None:
        hepscore["score_per_core"] = result.score_per_core
    return {"json_version": JSON_VERSION,
            "host": {"hostname": h.get("hostname"), "SW": dict(h.get("software") or {}),
                     "HW": {"CPU": {k: v for k, v in cpu.items() if v is not None}}},
            "profiles": {"hepscore": hepscore}, OWN_KEY: result.as_dict()}


def write(result: ScoreResult, path: str) -> None:
    try:
        Path(path).write_text(json.dumps(export(result), indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise PerflabError(f"cannot write {path}: {exc.strerror}; give a writable path") from None
