"""Named baselines: a name for a stored campaign (e.g. 'main'), with the machine it ran on.

A CI job saves the campaign of the default branch under a name and gates later campaigns
against it; setting a name again moves it to the new campaign (the previous one is kept in
the store, only the name moves). Every save is also kept in ``baseline_saves``, the name's
history: the gate reads the drift between its campaigns and the change since its oldest recent
save from it (``fresh=True`` starts the history anew, after an accepted change of level).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from perflab.errors import PerflabError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/@+-]{0,199}")


@dataclass(frozen=True)
class Baseline:
    """A named campaign and the host it was measured on."""

    name: str
    campaign_id: int
    host_id: int | None
    note: str
    created: datetime

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "campaign_id": self.campaign_id, "host_id": self.host_id,
                "note": self.note, "created": self.created.isoformat()}


def check_name(name: str) -> str:
    """A baseline name: letters, digits and . _ / @ + - (a branch name fits), at most 200."""
    if not _NAME.fullmatch(name or ""):
        raise PerflabError(f"baseline name {name!r} is not usable: use letters, digits and . _ / @ + - "
                           "(e.g. main or release-1.2), starting with a letter or digit")
    return name


class BaselineMethods:
    """Store methods for the `baselines` table (mixed into Store; uses its engine and tables)."""

    # Set or defined by Store (store/db.py), which mixes this class in.
    engine: Any
    t: Any
    _sa: Any
    display: str
    campaign: Callable[..., Any]
    _write: Callable[..., Any]

    def set_baseline(self, name: str, campaign_id: int, note: str = "", fresh: bool = False) -> Baseline:
        """Point NAME at a campaign (replacing where it pointed), recording the campaign's host;
        the save joins the name's history (which ``fresh`` forgets first)."""
        check_name(name)
        camp = self.campaign(campaign_id)
        if camp.status == "running":
            raise PerflabError(f"campaign {campaign_id} is still running: save a baseline of a "
                               "finished campaign")
        t = self.t["baselines"]
        sa = self._sa
        values = dict(campaign_id=camp.id, host_id=camp.host_id, note=note or "", created=datetime.now(timezone.utc))
        with self._write() as conn:
            # Delete then insert in one transaction: portable across SQLite and PostgreSQL.
            conn.execute(sa.delete(t).where(t.c.name == name))
            conn.execute(t.insert().values(name=name, **values))
            saves = self.t["baseline_saves"]
            if fresh:
                conn.execute(sa.delete(saves).where(saves.c.name == name))
            conn.execute(saves.insert().values(name=name, campaign_id=camp.id, host_id=camp.host_id,
                                               created=values["created"]))
        return self.baseline(name)

    def baseline_history(self, name: str, last: int = 10) -> list[Baseline]:
        """The last ``last`` saves of NAME, oldest first (the newest is where NAME points)."""
        sa = self._sa
        t = self.t["baseline_saves"]
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t).where(t.c.name == name)
                                .order_by(t.c.id.desc()).limit(last)).all()
        return [Baseline(r.name, int(r.campaign_id), r.host_id, "", _utc(r.created)) for r in reversed(rows)]

    def baseline(self, name: str) -> Baseline:
        """The baseline called NAME, or a one-line error listing the known names."""
        sa = self._sa
        t = self.t["baselines"]
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(t).where(t.c.name == name)).first()
        if row is None:
            known = [b.name for b in self.baselines()]
            hint = (f"known: {', '.join(known)}" if known else "none is saved yet; save one with "
                    "'perflab baseline set NAME CAMPAIGN' or 'perflab run --baseline-save NAME'")
            raise PerflabError(f"no baseline named {name!r} in {self.display} ({hint})")
        return _baseline(row)

    def baselines(self) -> list[Baseline]:
        """Every baseline, by name."""
        sa = self._sa
        t = self.t["baselines"]
        with self.engine.connect() as conn:
            return [_baseline(r) for r in conn.execute(sa.select(t).order_by(t.c.name))]

    def remove_baseline(self, name: str) -> Baseline:
        """Forget the name (the campaign stays in the store); return what it was."""
        sa = self._sa
        t = self.t["baselines"]
        old = self.baseline(name)
        saves = self.t["baseline_saves"]
        with self._write() as conn:
            conn.execute(sa.delete(t).where(t.c.name == name))
            conn.execute(sa.delete(saves).where(saves.c.name == name))
        return old


def _utc(created: Any) -> Any:
    if created is not None and created.tzinfo is None:  # SQLite hands back naive UTC times
        created = created.replace(tzinfo=timezone.utc)
    return created


def _baseline(row: Any) -> Baseline:
    return Baseline(row.name, int(row.campaign_id), row.host_id, row.note or "", _utc(row.created))
