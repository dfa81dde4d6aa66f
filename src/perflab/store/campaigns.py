"""A campaign as a context manager: done when the block ends, interrupted on Ctrl-C or SIGTERM,
failed on any other error, so no study writes the open/close block by hand."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from perflab.errors import PerflabError
from perflab.platform import owner as _owner
from perflab.store.url import _one_line


class Terminated(KeyboardInterrupt):
    """SIGTERM turned into an interrupt, so a campaign closes as 'interrupted' (batch systems
    send SIGTERM before SIGKILL at the end of a job's time)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


@dataclass
class OpenCampaign:
    """The campaign a ``with store.open_campaign(...)`` block measures into; set ``summary`` to keep it."""

    id: int
    resumed: bool = False
    summary: dict | None = None


class CampaignMethods:
    """The Store's campaign context manager (mixed into Store)."""

    # Defined by Store (store/db.py), which mixes this class in.
    start_campaign: Callable[..., Any]
    resume_campaign: Callable[..., Any]
    finish_campaign: Callable[..., Any]

    @contextmanager
    def open_campaign(
        self, study: str, config: dict, host_id: int | None = None, parent_id: int | None = None,
        name: str = "", labels: dict | None = None, resume: int | None = None,
    ) -> Iterator[OpenCampaign]:
        """Open (or reopen, with ``resume``) a campaign and close it as the block ends.

        done when the block finishes, interrupted on Ctrl-C or SIGTERM, failed on any other
        error (with the error's first line in the summary); the exception goes on either way.
        This process is recorded as the campaign's owner (platform/owner.py): a perflab killed
        before it could close the campaign shows as gone, not running.
        """
        me = _owner.identity()
        if resume is not None:
            camp = self.resume_campaign(resume, owner=me)
            if camp.study != study:
                raise PerflabError(f"campaign {resume} is a {camp.study} campaign, not {study}")
            handle = OpenCampaign(id=camp.id, resumed=True)
        else:
            labels = {**(labels or {}), "owner": me} if me else labels
            handle = OpenCampaign(id=self.start_campaign(study, config, host_id, parent_id, name, labels))
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _raise_terminated)
        try:
            yield handle
        except KeyboardInterrupt as exc:
            self.finish_campaign(handle.id, "interrupted", summary=handle.summary)
            # The innermost campaign is the one to resume; the CLI names it in its last line.
            if getattr(exc, "campaign_id", None) is None:
                exc.campaign_id = handle.id  # type: ignore[attr-defined]  # the CLI reads it back to name the campaign to resume
            raise
        except BaseException as exc:
            error = {"error": _one_line(exc) if not isinstance(exc, PerflabError) else str(exc)}
            try:
                self.finish_campaign(handle.id, "failed", summary={**(handle.summary or {}), **error})
            except PerflabError:
                pass  # the store itself failed: the original error says more
            raise
        else:
            self.finish_campaign(handle.id, "done", summary=handle.summary)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
