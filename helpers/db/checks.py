"""Plumbing: the checks every store query and write passes (ids, ints, field names) and the store's clock.

Used by helpers.db.store (sessions) and helpers.db.logs (the log): an id is a non-empty str, so a dict such as
{'$ne': None} never reaches a query; a field dict names plain fields, none of them the store's own; and nothing is
written that BSON cannot hold (`check_storable`: objects and arrays nested at most 100 levels, as MongoDB documents
it, every int within 64 bits), so a bad value is a clear error before the write instead of a driver OverflowError
or a document the local server stores and then cannot read back.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

__all__ = [
    "RESERVED",
    "BSON_MAX_DEPTH",
    "BSON_DEPTH_DOCS",
    "INT64_MIN",
    "INT64_MAX",
    "check_id",
    "check_int",
    "check_fields",
    "check_storable",
    "now_ms",
]

RESERVED = frozenset({"_id", "user_id", "session_id", "version", "created_at", "updated_at"})  # the store sets these
# "MongoDB supports no more than 100 levels of nesting for BSON documents" (objects and arrays count alike; the
# document itself is the first level). The local server does not enforce it: a deeper document is stored, and every
# later command on it fails ("internal server error"), so the store enforces it before writing.
BSON_MAX_DEPTH = 100
BSON_DEPTH_DOCS = "https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-Nested-Depth-for-BSON-Documents"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # BSON's widest integer; pymongo raises OverflowError beyond it


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
    check_storable(name, fields, BSON_MAX_DEPTH)  # the fields sit at the document's top level
    return dict(fields)


def check_storable(name: str, value: Any, levels: int) -> None:
    """Raise ValueError naming the place unless BSON can store `value` within `levels` levels of nesting.

    `levels` counts objects and arrays (a dict holding a list holding a scalar is 2 levels); every int must fit
    BSON's int64 and every key must be a str. Walked without recursion, so a value nested 200,000 levels deep gets
    this error too, not a RecursionError.
    """
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]  # (value, its depth, (parent entry, key) for the path)
    while stack:
        item, depth, parent = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth + 1 > levels:
                raise ValueError(
                    f"{_path(name, parent)}: nested more than {levels} levels deep; MongoDB stores at most "
                    f"{BSON_MAX_DEPTH} levels of objects and arrays in a document ({BSON_DEPTH_DOCS})"
                )
            entry = (parent, item)
            if isinstance(item, dict):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        raise ValueError(f"{_path(name, parent)}: key {key!r} is not a string; BSON keys are text")
                    stack.append((inner, depth + 1, (entry, key)))
            else:
                stack.extend((inner, depth + 1, (entry, i)) for i, inner in enumerate(item))
        elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            raise ValueError(
                f"{_path(name, parent)}: the integer {str(item)[:30]}{'…' if len(str(item)) > 30 else ''} does not "
                "fit in 64 bits (BSON's widest integer); store it as a string"
            )


def _path(name: str, parent: Any) -> str:
    """`name.key[0].key` for a place inside a value checked by `check_storable` (at most 8 steps shown)."""
    steps: list[str] = []
    while parent is not None:
        (parent, _), key = parent
        steps.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    shown = steps[::-1]
    return name + ("".join(shown) if len(shown) <= 8 else "".join(shown[:4]) + "…" + "".join(shown[-3:]))


def now_ms() -> datetime:
    """UTC now, truncated to milliseconds as BSON stores it (so returned docs equal re-loaded ones)."""
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
