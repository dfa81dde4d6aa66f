"""A fleet task's store that keeps its runs in a SQLite shard once the database server is gone.

A fleet task writes into the farm's PostgreSQL store, and each write retries a lost server for
PERFLAB_DB_RETRY_S (store/tx.py). When that time is spent the task holds runs the store did not
take. Rather than fail and lose them, every write from then on goes to the SQLite file named by
PERFLAB_FAILOVER_SHARD (the fleet script names one per slot and job, in the fleet's directory).
The hosts and campaigns this process wrote to the server are written into the shard first, under
their ids in the server's store and labelled ``failover_of`` (that store), so that
`perflab fleet collect` appends the shard's runs to the very campaigns they continue. The write
whose commit went unanswered may have landed too: collect skips a run the store already has.
The process then ends with exit status 3 and one line naming the shard.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from perflab import store as _package
from perflab.errors import PerflabError
from perflab.platform.machine import campaign_labels
from perflab.store import envelope
from perflab.store.campaigns import CampaignMethods
from perflab.store.tx import StoreUnreachable, retry_seconds
from perflab.store.values import _jsonable, _now, host_identity

SHARD_ENV = "PERFLAB_FAILOVER_SHARD"
FAILOVER_LABEL = "failover_of"  # the store (password hidden) whose campaigns a shard continues
CONTINUES_LABEL = "continues"  # a campaign of that store under its own id (else new in the shard)


class StoredInShard(PerflabError):
    """The study finished, but what the store did not take is in a shard: exit status 3."""

    exit_code = 3


def free_path(path: Path) -> Path:
    """``path``, or NAME.2.db, NAME.3.db, ... where a requeued job (same id) left one already."""
    n, out = 1, path
    while out.exists():
        n += 1
        out = path.with_name(f"{path.stem}.{n}{path.suffix}")
    return out


class FailoverStore:
    """A Store whose writes move to a SQLite shard when the server stays unreachable."""

    open_campaign = CampaignMethods.open_campaign  # its writes come back through this class

    def __init__(self, store: Any, shard_path: str) -> None:
        self._shard: _Labelled | None = None
        self._store, self._shard_path = store, Path(shard_path)
        self._hosts: dict[int, tuple[dict, dict | None]] = {}  # written to the server
        self._campaigns: dict[int, dict[str, Any]] = {}  # opened on the server by this process
        self._lock = threading.Lock()  # a host capture may lose the server on another thread

    def __repr__(self) -> str:
        return f"FailoverStore({self.display})"

    def __getattr__(self, name: str) -> Any:
        # Reads follow the writes: after the move, the shard holds this process's campaigns.
        return getattr(self._shard if self._shard is not None else self._store, name)

    @property
    def display(self) -> str:
        return (self._shard if self._shard is not None else self._store).display

    @property
    def shard(self) -> Path | None:
        """Where the writes went after the server was lost, or None while it answers."""
        return None if self._shard is None else Path(self._shard.path)

    def __enter__(self) -> "FailoverStore":
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        self.close()
        if self._shard is not None and et is None:
            fleet = os.environ.get("PERFLAB_FLEET", "NAME")
            raise StoredInShard(
                f"results store {self._store.display} stayed unreachable past its retry time "
                f"({retry_seconds():g} s, PERFLAB_DB_RETRY_S); the runs it did not take are stored "
                f"in shard {self._shard.path} (campaign(s) "
                f"{', '.join(map(str, sorted(self._campaigns))) or 'new'}); merge them with "
                f"'perflab fleet collect {fleet} --db URL'")

    def close(self) -> None:
        self._store.close()
        if self._shard is not None:
            self._shard.close()

    def _send(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._shard is None:
            try:
                return getattr(self._store, method)(*args, **kwargs)
            except StoreUnreachable as exc:
                with self._lock:
                    if self._shard is None:
                        self._fail_over(exc)
        return getattr(self._shard, method)(*args, **kwargs)

    def _fail_over(self, exc: StoreUnreachable) -> None:
        """Open the shard and copy into it the hosts and campaigns the writes refer to."""
        try:
            self._shard_path.parent.mkdir(parents=True, exist_ok=True)
            shard = _package.open_store(str(free_path(self._shard_path)))
        except (OSError, PerflabError) as err:
            raise StoreUnreachable(f"{exc}; and its shard {self._shard_path} could not be created: "
                                   f"{getattr(err, 'strerror', None) or err}") from None
        t = shard.t
        with shard.engine.execution_options(perflab_write=True).begin() as conn:
            for hid, (metadata, topology) in self._hosts.items():
                metadata, topology, hostname, fingerprint = host_identity(metadata, topology)
                conn.execute(t["hosts"].insert().values(id=hid, hostname=hostname, fingerprint=fingerprint,
                                                        metadata=metadata, topology=topology, created=_now()))
            for cid, c in sorted(self._campaigns.items()):  # a parent before its children
                conn.execute(t["campaigns"].insert().values(
                    id=cid, study=c["study"], name=c["name"], status=c["status"], config=c["config"],
                    summary=None if c["summary"] is None else envelope.wrap(c["study"], c["summary"]),
                    started=c["started"], finished=c["finished"],
                    host_id=c["host_id"] if c["host_id"] in self._hosts else None,
                    parent_id=c["parent_id"] if c["parent_id"] in self._campaigns else None,
                    labels={**c["labels"], FAILOVER_LABEL: self._store.display, CONTINUES_LABEL: True}))
        self._shard = _Labelled(shard, {FAILOVER_LABEL: self._store.display})

    # -- the writes a study makes ---------------------------------------------------------------

    def add_host(self, metadata: dict, topology: dict | None = None) -> int:
        on_server = self._shard is None
        hid = self._send("add_host", metadata, topology)
        if on_server and self._shard is None:
            self._hosts[hid] = (metadata, topology)
        return hid

    def start_campaign(self, study: str, config: dict, host_id: int | None = None,
                       parent_id: int | None = None, name: str = "", labels: dict | None = None) -> int:
        on_server = self._shard is None
        cid = self._send("start_campaign", study, config, host_id, parent_id, name, labels)
        if on_server and self._shard is None:
            self._campaigns[cid] = {
                "study": study, "name": name or "", "status": "running", "config": _jsonable(config or {}),
                "summary": None, "host_id": host_id, "parent_id": parent_id, "started": _now(),
                "finished": None, "labels": _jsonable({**campaign_labels(), **(labels or {})})}
        return cid

    def resume_campaign(self, campaign_id: int, owner: dict | None = None) -> Any:
        on_server = self._shard is None
        camp = self._send("resume_campaign", campaign_id, owner)
        if on_server and self._shard is None:
            self._campaigns[camp.id] = {
                "study": camp.study, "name": camp.name, "status": "running", "config": camp.config,
                "summary": camp.summary, "host_id": camp.host_id, "parent_id": camp.parent_id,
                "started": camp.started, "finished": None,
                "labels": _jsonable({**(camp.labels or {}), **({"owner": owner} if owner else {})})}
        return camp

    def set_campaign_host(self, campaign_id: int, host_id: int) -> None:
        self._send("set_campaign_host", campaign_id, host_id)
        if self._shard is None and campaign_id in self._campaigns:
            self._campaigns[campaign_id]["host_id"] = host_id

    def finish_campaign(self, campaign_id: int, status: str = "done", summary: dict | None = None) -> None:
        self._send("finish_campaign", campaign_id, status, summary)
        if self._shard is None and campaign_id in self._campaigns:
            # Closed on the server: a later move must not copy it as still running.
            self._campaigns[campaign_id].update(status=status, summary=_jsonable(summary),
                                                finished=None if status == "running" else _now())

    def add_measurement(self, *args: Any, **kwargs: Any) -> int:
        return self._send("add_measurement", *args, **kwargs)

    def add_measurements(self, *args: Any, **kwargs: Any) -> None:
        return self._send("add_measurements", *args, **kwargs)

    def add_artifact(self, *args: Any, **kwargs: Any) -> int:
        return self._send("add_artifact", *args, **kwargs)


class _Labelled:
    """The shard's Store, whose new campaigns also carry the failover label."""

    def __init__(self, store: Any, labels: dict) -> None:
        self._store, self._labels = store, labels

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def start_campaign(self, study: str, config: dict, host_id: int | None = None,
                       parent_id: int | None = None, name: str = "", labels: dict | None = None) -> int:
        return self._store.start_campaign(study, config, host_id, parent_id, name,
                                          {**(labels or {}), **self._labels})
