"""The versioned envelope around a study's result, as stored (a campaign's summary) and as written
by `--json`: ``{"perflab": VERSION, "schema": SCHEMA, "study": ..., "result": ...}``.

``schema`` numbers the form of the results (what their as_dict/from_dict read and write), apart
from perflab's version and from the database's SCHEMA_VERSION: a reader that meets a result of
another form knows it from the number, not from a guess at its keys. A summary stored without the
envelope (perflab 0.1.0 kept the result alone) reads as the result it is.
"""

from __future__ import annotations

from typing import Any

from perflab import __version__

SCHEMA = 1
KEYS = frozenset({"perflab", "schema", "study", "result"})


def wrap(study: str, result: Any) -> dict[str, Any]:
    """``result`` (a result's as_dict()) in its envelope; an envelope is left as it is."""
    if is_envelope(result):
        return result
    return {"perflab": __version__, "schema": SCHEMA, "study": study, "result": result}


def is_envelope(data: Any) -> bool:
    return isinstance(data, dict) and set(data) == KEYS and isinstance(data.get("schema"), int)


def unwrap(data: Any) -> Any:
    """The result inside an envelope; a summary stored without one (or None) as it is."""
    return data["result"] if is_envelope(data) else data
