"""Where the store lives: a file path, sqlite:///PATH or postgresql://USER[:PASS]@HOST/DB.

A URL is shown with its password hidden everywhere perflab prints or stores it.
"""

from __future__ import annotations

import os
import re
from typing import Any

from perflab.errors import PerflabError

DEFAULT_PATH = "perflab.db"


def _sa() -> Any:
    try:
        import sqlalchemy
    except ImportError as exc:  # pragma: no cover - a dependency
        raise PerflabError("the results store needs SQLAlchemy: pip install 'SQLAlchemy>=2'") from exc
    return sqlalchemy


def _resolve_url(url_or_path: str | None) -> tuple[str, str, str | None]:
    """(SQLAlchemy URL, display string, sqlite file path or None) for a --db value."""
    value = (url_or_path or "").strip() or os.environ.get("PERFLAB_DB", "").strip() or DEFAULT_PATH
    if value.startswith(("postgresql://", "postgres://", "postgresql+")):
        if value.startswith("postgres://"):
            value = "postgresql://" + value[len("postgres://"):]
        if value.startswith("postgresql://"):
            value = "postgresql+psycopg://" + value[len("postgresql://"):]
        if value.startswith("postgresql+psycopg://"):
            try:
                import psycopg  # noqa: F401 - imported only to find whether it is installed
            except ImportError:
                raise PerflabError(
                    "a PostgreSQL results store needs psycopg 3: pip install -e '.[postgres]' in perflab's checkout (make setup does)"
                ) from None
        sa = _sa()
        try:
            display = sa.engine.make_url(value).render_as_string(hide_password=True)
        except Exception:
            shown = redact_url(value).replace("postgresql+psycopg://", "postgresql://")
            raise PerflabError(
                f"cannot parse results store URL {shown!r}: use postgresql://USER[:PASS]@HOST[:PORT]/DB"
            ) from None
        return value, display.replace("postgresql+psycopg://", "postgresql://"), None
    if value.startswith("sqlite:///"):
        path = value[len("sqlite:///"):]
    elif "://" in value:
        scheme = value.split("://", 1)[0]
        raise PerflabError(
            f"unsupported results store URL scheme {scheme!r}: use a file path, sqlite:///PATH "
            "or postgresql://USER@HOST/DB"
        )
    else:
        path = value
    if path == ":memory:":
        return "sqlite://", "sqlite in-memory (not kept)", None
    p = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(os.path.dirname(p)):
        raise PerflabError(
            f"cannot open results store {p}: directory {os.path.dirname(p)} does not exist; create "
            "it or pass another --db"
        )
    if os.path.isdir(p):
        raise PerflabError(f"cannot open results store {p}: it is a directory; pass a file path to --db")
    return f"sqlite:///{p}", p, p


def redact_url(url: str) -> str:
    """The URL with its password replaced by ***, for anything printed, logged or stored."""
    return re.sub(r"(://[^:/@\s]*:)\S*@", r"\1***@", url)


def _one_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = " ".join(str(orig).split())
    return text[:300] or type(orig).__name__
