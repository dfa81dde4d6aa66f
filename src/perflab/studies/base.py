"""What every study's Config and Result share: their JSON form (stored with the campaign, read
back by resume) and the runs a result rests on; and the two kinds of study, each a Protocol a
study module meets (``MeasuringStudy``, ``ReadingStudy``: studies/__init__.py tells them apart)."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol

from perflab.model import known_fields

if TYPE_CHECKING:
    from perflab.store import Store
    from perflab.studies.session import Session


class StudyConfig:
    """A study's frozen config: ``as_dict`` for the campaign, ``from_dict`` to re-plan it."""

    # Fields holding a record of their own (e.g. a Workload): name -> how to rebuild it from JSON.
    decoders: ClassVar[dict[str, Callable[[Any], Any]]] = {}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]  # a subclass is a dataclass; this mixin is not

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        """The inverse of ``as_dict``: JSON's lists back into tuples (nested ones too), each field in
        ``decoders`` through its function; keys that name no field are dropped."""
        kw = {k: _tuples(v) for k, v in known_fields(cls, d).items()}
        for name, decode in cls.decoders.items():
            if kw.get(name) is not None:
                kw[name] = decode(kw[name])
        return cls(**kw)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def decode(cls: type, data: Mapping[str, Any]) -> Any:
    """A dataclass from its JSON form (``asdict`` of it), by its fields' type hints: nested
    dataclasses (a CI among them), lists, tuples, dicts and optional values; keys that name no
    field are dropped (a form stored by another perflab version) and a missing field takes its
    default. A hand-written ``from_dict`` is left for the forms this cannot read (an older
    summary's patched keys)."""
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _decode(hints[f.name], data[f.name])
                  for f in dataclasses.fields(cls) if f.init and f.name in data})


def _decode(tp: Any, value: Any) -> Any:
    if value is None and tp is float:
        return math.nan  # the store writes NaN as null (PostgreSQL's json has no NaN)
    if value is None or tp is Any:
        return value
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        kinds = [a for a in args if a is not type(None)]
        # one kind besides None is decoded as that kind; a union of several is kept as stored
        return _decode(kinds[0], value) if len(kinds) == 1 else value
    if origin is list:
        return [_decode(args[0], v) for v in value] if args else list(value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in value)
        return tuple(_decode(a, v) for a, v in zip(args, value)) if args else tuple(value)
    if origin is dict:
        return {k: _decode(args[1], v) for k, v in value.items()} if args else dict(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(value, Mapping):
        return decode(tp, value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # JSON writes 2.0 as 2
    return value


@dataclass(kw_only=True)
class StudyResult:
    """The runs analysed, the failed runs by reason (left out of every statistic), notes, and the
    campaign the result is stored in; a study's Result adds its findings as fields."""

    failures: dict[str, int] = field(default_factory=dict)  # why -> runs left out
    runs: int = 0
    notes: list[str] = field(default_factory=list)
    campaign_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(kw_only=True)
class VerdictResult(StudyResult):
    """A Result whose stored form and --json carry its one-line ``verdict`` (a property of the
    subclass), which the listing and the report read; read back by its fields' type hints."""

    @property
    def verdict(self) -> str:
        raise NotImplementedError

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Any:
        return decode(cls, d)


class MeasuringStudy(Protocol):
    """A measuring study module (run, cores, instances, variants, frontend, micro, profile, lab,
    score, footprint, bundle, bundle-verify): it starts processes, through a Session only.

    ``Config`` (frozen, ``from_dict`` re-plans a stored campaign), ``plan(config, machine, ...)``
    (pure: the runs in order), ``execute(config, session, machine)`` (each run through the
    Session, stored as it completes and replayed on resume) and ``analyse(config, runs, ...)``
    (pure) -> a Result with ``as_dict``/``from_dict`` (the lab runs other studies, each in a
    child campaign, and gathers their results: it has no analyse of its own).
    ``studies.run_study`` opens the campaign around it; ``perflab resume`` re-plans it from the
    stored config."""

    @property
    def NAME(self) -> str: ...  # read-only members: a module's own types fit them

    @property
    def Config(self) -> type: ...

    def execute(self, config: Any, session: Session, machine: Any) -> Any: ...


class ReadingStudy(Protocol):
    """A reading study module (compare, gate, cost): it reads what measuring studies stored and
    never measures: no executor, no Session, no process.

    ``Config`` names the stored campaigns (or baseline, fleets) to read and how to judge them;
    ``read(config, store)`` -> the typed Result (``as_dict`` for --json; report/ renders it). It
    may keep its result as a campaign of its own without runs (cost does), so a report finds it."""

    @property
    def NAME(self) -> str: ...

    @property
    def Config(self) -> type: ...

    def read(self, config: Any, store: Store) -> Any: ...
