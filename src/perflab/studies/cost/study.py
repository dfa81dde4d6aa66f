"""Cost study: which platform reaches a target event rate cheapest inside a power envelope?

Seed 004: the LHCb farm needed 700,000 more events/s inside 200 kW. Per platform:
nodes = ceil(target / throughput per node); cost = nodes x node price (board + memory + PSU +
chassis + sockets x CPU); power = nodes x (measured node power, else 1.6 x TDP x sockets, the
seed's estimate that "fits all measured systems within 5%"). The best platform is the cheapest
that fits the envelope (and the budget, when given).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Literal, overload

from perflab.errors import PerflabError
from perflab.studies.base import decode
from perflab.studies.cost.power import campaign_power
from perflab.fleet import state
from perflab.fleet.report import platform_throughput

POWER_FACTOR = 1.6  # seed 004: node power ~ 1.6 x TDP x sockets
PRICE_KEYS = ("board", "memory", "psu", "cpu", "chassis", "other")


NAME = "cost"  # a reading study (studies.base.ReadingStudy): its entry is read, below

@dataclass(frozen=True)


class Platform:
    name: str
    sockets: int
    tdp_w: float
    prices: dict[str, float]  # cpu is per socket; the rest per node
    throughput_per_node: float | None = None  # events/s of one node
    throughput_from_campaign: int | None = None  # an `instances` campaign's optimum_throughput
    power_from_campaign: int | None = None  # an `instances` campaign's measured watts at its optimum
    throughput_from_fleet: str | None = None  # a fleet's median host throughput on this platform
    fleet_platform: str | None = None  # which of the fleet's platforms (part of its CPU model)
    measured_power_w: float | None = None  # one node under full load
    note: str = ""

    @property
    def node_price(self) -> float:
        p = self.prices
        return sum(float(p.get(k, 0.0)) for k in PRICE_KEYS if k != "cpu") + self.sockets * float(p.get("cpu", 0.0))


@dataclass(frozen=True)


class Requirement:
    target_events_per_s: float  # the target in ``unit``: events/s, or a suite score (target_score)
    power_envelope_kw: float
    budget: float | None = None
    currency: str = "CHF"
    unit: str = "events/s"  # "events/s", or the score's name where the file gives target_score


@dataclass(frozen=True)


class CostConfig:
    platforms: tuple[Platform, ...]
    requirement: Requirement
    source: str = ""  # the TOML file
    plot: str | None = None  # SVG path


@dataclass(frozen=True)


class PlatformCost:
    name: str
    throughput_per_node: float
    throughput_source: str  # "given" or "campaign N"
    nodes: int
    node_price: float
    total_cost: float
    node_power_w: float
    power_source: str  # "measured" or "1.6 x TDP x sockets"
    total_power_kw: float
    fits_power: bool
    fits_budget: bool
    cost_per_event_s: float
    watts_per_event_s: float


@dataclass


class CostResult:
    requirement: Requirement
    platforms: list[PlatformCost]
    best: str | None
    why: str
    plot: str | None = None
    campaign_id: int | None = None

    @property
    def verdict(self) -> str:
        """The choice and the first clause of its reason: the campaign's verdict."""
        return (f"best: {self.best}" if self.best else "no platform fits") + f" ({self.why.split(';')[0]})"

    def to_dict(self) -> dict[str, Any]:
        """The stored summary and the --json result: the fields and the verdict."""
        return {**asdict(self), "verdict": self.verdict}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CostResult":
        """The result from its stored summary (the verdict is derived, not read)."""
        return decode(cls, d)


@overload
def _num(table: dict, key: str, where: str, required: Literal[True] = ..., positive: bool = ...) -> float: ...
@overload
def _num(table: dict, key: str, where: str, required: bool, positive: bool = ...) -> float | None: ...
def _num(table: dict, key: str, where: str, required: bool = True, positive: bool = True) -> float | None:
    if key not in table:
        if required:
            raise PerflabError(f"{where}: missing '{key}'; add it (see src/perflab/examples/trigger-farm-platforms.toml)")
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PerflabError(f"{where}: '{key}' must be a number, not {value!r}")
    if not math.isfinite(value):
        raise PerflabError(f"{where}: '{key}' must be a finite number, not {value}")
    if positive and value <= 0:
        raise PerflabError(f"{where}: '{key}' must be positive, not {value}")
    return float(value)


def load_platforms(path: str) -> CostConfig:
    """Read PLATFORMS.toml: [requirement] and [[platform]] tables."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PerflabError(f"{path}: no such file; start from src/perflab/examples/trigger-farm-platforms.toml") from None
    except UnicodeDecodeError as exc:
        raise PerflabError(f"{path}: not UTF-8 text (byte {exc.start}); a platforms file is a UTF-8 TOML file") from None
    except OSError as exc:
        raise PerflabError(f"{path}: cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise PerflabError(f"{path} is not valid TOML: {exc}; fix the syntax") from None
    req = data.get("requirement")
    if not isinstance(req, dict):
        raise PerflabError(f"{path}: no [requirement] table; add target_events_per_s and power_envelope_kw")
    where = f"{path} [requirement]"
    scored = "target_score" in req
    if scored and "target_events_per_s" in req:
        raise PerflabError(f"{where}: give target_events_per_s or target_score, not both")
    requirement = Requirement(
        target_events_per_s=_num(req, "target_score" if scored else "target_events_per_s", where),
        power_envelope_kw=_num(req, "power_envelope_kw", where),
        budget=_num(req, "budget", where, required=False),
        currency=str(req.get("currency", "CHF")),
        unit=str(req.get("score_unit", "score")) if scored else "events/s",
    )
    plats = data.get("platform")
    if not isinstance(plats, list) or not plats:
        raise PerflabError(f"{path}: no [[platform]] tables; add at least one platform")
    platforms = []
    names = set()
    for i, p in enumerate(plats):
        name = str(p.get("name") or "")
        where = f"{path} platform #{i + 1} ({name or 'no name'})"
        if not name:
            raise PerflabError(f"{where}: missing 'name'")
        if name in names:
            raise PerflabError(f"{where}: the name {name!r} is used twice; names must be unique")
        names.add(name)
        prices = p.get("prices", {})
        if not isinstance(prices, dict):
            raise PerflabError(f"{where}: 'prices' must be a table (board, memory, psu, cpu, chassis)")
        unknown = sorted(set(prices) - set(PRICE_KEYS))
        if unknown:
            raise PerflabError(f"{where}: unknown price {unknown[0]!r}; use {', '.join(PRICE_KEYS)}")
        for k in prices:
            _num(prices, k, where + " prices", positive=False)
        campaign, fleet = _throughput_keys(p, scored, where)
        if fleet is not None and not isinstance(fleet, str):
            raise PerflabError(f"{where}: throughput_from_fleet must be a fleet name (a string)")
        given = _num(p, "score_per_node" if scored else "throughput_per_node", where,
                     required=campaign is None and fleet is None)
        power_campaign = p.get("power_from_campaign")
        for key, value in (("throughput_from_campaign", campaign), ("power_from_campaign", power_campaign)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise PerflabError(f"{where}: {key} must be a campaign id (a positive integer)")
        sockets = _num(p, "sockets", where)
        if sockets != int(sockets):
            raise PerflabError(f"{where}: sockets must be a whole number")
        platforms.append(Platform(
            name=name, sockets=int(sockets), tdp_w=_num(p, "tdp_w", where),
            prices={k: float(v) for k, v in prices.items()}, throughput_per_node=given,
            throughput_from_campaign=campaign, power_from_campaign=power_campaign,
            throughput_from_fleet=fleet,
            fleet_platform=str(p["fleet_platform"]) if "fleet_platform" in p else None,
            measured_power_w=_num(p, "measured_power_w", where, required=False),
            note=str(p.get("note", "")),
        ))
    return CostConfig(platforms=tuple(platforms), requirement=requirement, source=str(path))


def _throughput_keys(p: dict, scored: bool, where: str) -> tuple[Any, Any]:
    """(campaign id, fleet name) a platform takes its throughput from; a score target takes score
    keys only (score_per_node, score_from_campaign, score_from_fleet): a node's events/s is no score."""
    wrong = ("throughput_per_node", "throughput_from_campaign", "throughput_from_fleet") if scored else (
        "score_per_node", "score_from_campaign", "score_from_fleet")
    found = [k for k in wrong if k in p]
    if found:
        need = "target_score" if not scored else "target_events_per_s"
        raise PerflabError(f"{where}: '{found[0]}' is in another unit than the requirement; give [requirement] "
                           f"{need}, or the platform's figure in the requirement's unit")
    if scored:
        return p.get("score_from_campaign"), p.get("score_from_fleet")
    return p.get("throughput_from_campaign"), p.get("throughput_from_fleet")


def campaign_score(store: Any, campaign_id: int, name: str) -> float:
    """A stored score campaign's score (measured by perflab score, or imported)."""
    camp = store.campaign(campaign_id)
    value = (camp.summary or {}).get("score")
    if camp.study != "score" or not isinstance(value, (int, float)) or value <= 0:
        raise PerflabError(f"platform {name}: campaign {campaign_id} is no score campaign with a score "
                           f"({camp.study}, {camp.status}); give the id of a 'perflab score' or 'perflab import' "
                           "campaign (perflab results)")
    return float(value)


MAX_NODES = 1e9  # more nodes than any farm has: the throughput or the target is mistyped


def platform_cost(p: Platform, req: Requirement, throughput: float, source: str,
                  power: tuple[float, str] | None = None) -> PlatformCost:
    """The numbers for one platform (pure arithmetic, tested by hand); ``power`` is (watts per
    node, where they come from) when a campaign measured them."""
    ratio = req.target_events_per_s / throughput
    if not ratio <= MAX_NODES:
        # A denormal or tiny rate (5e-324) makes the node count infinite or absurd: a typo, not a farm.
        raise PerflabError(f"platform '{p.name}': {throughput:g} {req.unit} per node ({source}) needs "
                           f"{ratio:.3g} nodes for {req.target_events_per_s:g} {req.unit}: give one "
                           f"node's {req.unit} (e.g. {'throughput_per_node = 986' if req.unit == 'events/s' else 'score_per_node = 870'})")
    nodes = math.ceil(ratio - 1e-9)
    if power is not None:
        node_power, psource = power
    elif p.measured_power_w is not None:
        node_power, psource = p.measured_power_w, "measured"
    else:
        node_power, psource = POWER_FACTOR * p.tdp_w * p.sockets, f"{POWER_FACTOR} x TDP x sockets"
    total_cost = nodes * p.node_price
    total_kw = nodes * node_power / 1000.0
    return PlatformCost(
        name=p.name, throughput_per_node=throughput, throughput_source=source, nodes=nodes,
        node_price=p.node_price, total_cost=total_cost, node_power_w=node_power, power_source=psource,
        total_power_kw=total_kw, fits_power=total_kw <= req.power_envelope_kw,
        fits_budget=req.budget is None or total_cost <= req.budget,
        cost_per_event_s=total_cost / req.target_events_per_s,
        watts_per_event_s=total_kw * 1000.0 / req.target_events_per_s,
    )


def choose(costs: list[PlatformCost], req: Requirement) -> tuple[str | None, str]:
    """The cheapest platform inside the envelope (and budget); ties go to less power."""
    cur = req.currency
    ok = sorted([c for c in costs if c.fits_power and c.fits_budget], key=lambda c: (c.total_cost, c.total_power_kw))
    out_power = [c for c in costs if not c.fits_power]
    out_budget = [c for c in costs if c.fits_power and not c.fits_budget]
    excluded = "".join(
        [f"; {c.name} needs {c.total_power_kw:.1f} kW > {req.power_envelope_kw:g} kW" for c in out_power]
        + [f"; {c.name} costs {c.total_cost:,.0f} {cur} > budget {req.budget:,.0f}" for c in out_budget])
    if not ok:
        least = min(costs, key=lambda c: c.total_power_kw)
        return None, (f"no platform fits: the least power-hungry, {least.name}, needs "
                      f"{least.total_power_kw:.1f} kW for {req.target_events_per_s:,.0f} {req.unit}{excluded}")
    best = ok[0]
    why = (f"{best.name} is the cheapest platform inside {req.power_envelope_kw:g} kW: "
           f"{best.nodes} nodes, {best.total_cost:,.0f} {cur}, {best.total_power_kw:.1f} kW")
    if len(ok) > 1:
        nxt = ok[1]
        why += (f"; next {nxt.name} costs {nxt.total_cost:,.0f} {cur} "
                f"(+{(nxt.total_cost / best.total_cost - 1) * 100:.1f}%)")
    return best.name, why + excluded


def _campaign_throughput(store: Any, campaign_id: int, name: str) -> float:
    camp = store.campaign(campaign_id)
    if camp.study != "instances":
        raise PerflabError(
            f"platform {name}: campaign {campaign_id} is a '{camp.study}' campaign, not 'instances'; "
            "give the id of a 'perflab instances' campaign (perflab results --study instances)")
    value = (camp.summary or {}).get("optimum_throughput")
    if not isinstance(value, (int, float)) or value <= 0:
        raise PerflabError(
            f"platform {name}: campaign {campaign_id} has no optimum_throughput in its summary "
            f"(status {camp.status}); finish the instances scan or give throughput_per_node")
    return float(value)


def run_cost(config: CostConfig, store: Any, console: Any = None,
             draw: Callable[[CostResult, str], str] | None = None) -> CostResult:
    """Cost, power and fit of every platform, the best one, and the SVG plot where config.plot
    names a file: ``draw(result, path)`` (report.cost_plot.plot) writes it and returns its path,
    stored with the campaign; the study draws nothing itself."""
    req = config.requirement
    with store.open_campaign(NAME, {
        "source": config.source, "requirement": asdict(req),
        "platforms": [asdict(p) for p in config.platforms],
    }) as camp:
        campaign = camp.id
        costs = []
        for p in config.platforms:
            if p.throughput_from_campaign is not None and req.unit != "events/s":
                thr = campaign_score(store, p.throughput_from_campaign, p.name)
                src = f"campaign {p.throughput_from_campaign}"
            elif p.throughput_from_campaign is not None:
                thr = _campaign_throughput(store, p.throughput_from_campaign, p.name)
                src = f"campaign {p.throughput_from_campaign}"
            elif p.throughput_from_fleet is not None:
                if req.unit != "events/s" and state.load(store, p.throughput_from_fleet).study != "score":
                    raise PerflabError(f"platform {p.name}: fleet {p.throughput_from_fleet} ran no score; give "
                                       "score_from_fleet the name of a fleet that ran 'perflab score'")
                thr, plat, n = platform_throughput(store, p.throughput_from_fleet, p.fleet_platform)
                src = f"fleet {p.throughput_from_fleet}: median of {n} hosts ({plat})"
            else:
                thr, src = float(p.throughput_per_node), "given"  # type: ignore[arg-type]  # required without a campaign or fleet (load checks)
            power = (campaign_power(store, p.power_from_campaign, p.name)
                     if p.power_from_campaign is not None else None)
            costs.append(platform_cost(p, req, thr, src, power))
        best, why = choose(costs, req)
        result = CostResult(requirement=req, platforms=costs, best=best, why=why, campaign_id=campaign)
        if config.plot:
            if draw is None:
                raise ValueError("run_cost: config.plot needs draw (report.cost_plot.plot)")
            result.plot = draw(result, config.plot)
            store.add_artifact(campaign, "plot", result.plot, {"format": "svg"})
        camp.summary = result.to_dict()
        return result


# The reading study's shape (studies.base.ReadingStudy): NAME, Config, read(config, store) -> Result.
Config = CostConfig
read = run_cost
