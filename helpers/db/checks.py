"""Plumbing: the checks every store query and write passes (ids, ints, field names) and the store's clock.

Used by helpers.db.store (sessions) and helpers.db.logs (the log): an id is a non-empty str, so a dict such as
{'$ne': None} never reaches a query; a field dict names plain fields, none of them the store's own.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

__all__ = ["RESERVED", "check_id", "check_int", "check_fields", "now_ms"]

RESERVED = frozenset({"_id", "user_id", "session_id", "version", "created_at", "updated_at"})  # the store sets these


def check_id(name: str, value: Any) -> str:
    """Ids are non-empty str; anything else (a dict like {'$ne': None}) never reaches a query."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}: {value!r}")
    if not value:
        raise ValueError(f"{name} must be a non-empty string")
    return value


def check_int(name: str, value: Any, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    return value


def check_fields(name: str, fields: Any, reserved: frozenset) -> dict:
    if fields is None:
        return {}
    if not isinstance(fields, dict):
        raise ValueError(f"{name} must be a dict, got {type(fields).__name__}")
    for key in fields:
        if not isinstance(key, str) or not key or key.startswith("$") or "." in key:
            raise ValueError(f"{name} keys must be plain field names (no '$' prefix, no '.'), got {key!r}")
        if key in reserved:
            raise ValueError(f"{name} may not set {key!r}; the store manages {sorted(reserved)}")
    return dict(fields)


def now_ms() -> datetime:
    """UTC now, truncated to milliseconds as BSON stores it (so returned docs equal re-loaded ones)."""
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
