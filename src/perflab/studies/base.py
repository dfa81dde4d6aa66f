"""What every study's Config and Result share: their JSON form (stored with the campaign, read
back by resume) and the runs a result rests on."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar

from perflab.model import known_fields


class StudyConfig:
    """A study's frozen config: ``as_dict`` for the campaign, ``from_dict`` to re-plan it."""

    # Fields holding a record of their own (e.g. a Workload): name -> how to rebuild it from JSON.
    decoders: ClassVar[dict[str, Callable[[Any], Any]]] = {}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

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
