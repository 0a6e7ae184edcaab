"""The memory document and `Hit`. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

Every memory is one document in the `memories` collection, facts (helpers.memory.facts) and episodes alike:

    {user_id, kind: "fact"|"episode", text, embedding, embedding_model, content_hash,
     source: {session_id, seq}, created_at, updated_at, seen_count,
     superseded_by: None|ObjectId, valid_to: None|datetime, active: bool, expires_at: None|datetime}

`embedding` is a BSON binary vector (subtype 9, float32): 1.5 KB instead of ~5 KB for a list of 384
doubles, decoded with one `np.frombuffer`, exactly the embedder's float32, and indexed natively by
MongoDB Atlas Vector Search. mongomock and the local SecantusDB server store it as opaque bytes.
`active` mirrors `superseded_by is None` as a boolean, because `$vectorSearch` pre-filters on booleans.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
from bson.binary import Binary, BinaryVectorDtype

__all__ = [
    "KINDS",
    "EPISODE_USER_CHARS",
    "EPISODE_ASSISTANT_CHARS",
    "Hit",
    "check_user_id",
    "check_source",
    "check_kinds",
    "utc_now",
    "as_utc",
    "normalise_text",
    "content_hash",
    "encode_vector",
    "decode_vector",
    "clip",
    "episode_text",
    "TURN_CHARS",
    "TurnUnit",
    "turn_text",
    "date_notes",
]

KINDS = ("fact", "episode")
EPISODE_USER_CHARS = 1000  # an episode keeps the user's words (up to this many characters) ...
EPISODE_ASSISTANT_CHARS = 400  # ... and the start of the reply
_FLOAT32 = BinaryVectorDtype.FLOAT32.value  # b"\x27": the dtype byte of a float32 BSON vector


def check_user_id(user_id: Any) -> str:
    """Ids are non-empty str; anything else (a dict like {'$ne': None}) never reaches a query."""
    if not isinstance(user_id, str):
        raise ValueError(f"user_id must be a str, got {type(user_id).__name__}: {user_id!r}")
    if not user_id:
        raise ValueError("user_id must be a non-empty string")
    return user_id


def check_source(source: Any) -> dict:
    """`{session_id: str|None, seq: int|None}`: where a memory came from."""
    if source is None:
        return {"session_id": None, "seq": None}
    if not isinstance(source, dict) or set(source) - {"session_id", "seq"}:
        raise ValueError(f"source must be a dict with keys session_id and seq, got {source!r}")
    session_id, seq = source.get("session_id"), source.get("seq")
    if session_id is not None and not isinstance(session_id, str):
        raise ValueError(f"source session_id must be a str or None, got {session_id!r}")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        raise ValueError(f"source seq must be an int or None, got {seq!r}")
    return {"session_id": session_id, "seq": seq}


def check_kinds(kinds: Any) -> tuple[str, ...]:
    """A non-empty tuple of memory kinds ("fact", "episode"); a single str is accepted too."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not kinds or any(kind not in KINDS for kind in kinds):
        raise ValueError(f"kinds must be a non-empty subset of {KINDS}, got {kinds!r}")
    return kinds


def utc_now() -> datetime:
    """UTC now, truncated to milliseconds as BSON stores it."""
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def as_utc(value: datetime | None) -> datetime | None:
    """Datetimes from any client as aware UTC (a naive one is taken to be UTC, as BSON dates are)."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def normalise_text(text: str) -> str:
    """The text a content hash is taken of: NFKC, case-folded, single spaces, no trailing punctuation."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split()).rstrip(" .!?;,")


def content_hash(text: str) -> str:
    """sha256 of the normalised text: equal for 'The user lives in Denver.' and 'the user lives in denver'."""
    return hashlib.sha256(normalise_text(text).encode("utf-8", "surrogatepass")).hexdigest()


def encode_vector(vector: np.ndarray) -> Binary:
    """A float vector as a BSON binary vector (subtype 9, float32, little-endian), like `Binary.from_vector`."""
    data = np.ascontiguousarray(vector, dtype="<f4").ravel().tobytes()
    return Binary(_FLOAT32 + b"\x00" + data, subtype=9)


def decode_vector(value: Any) -> np.ndarray:
    """A stored embedding (binary vector or a plain list of numbers) as float32 numpy."""
    if isinstance(value, (bytes, Binary)):
        raw = bytes(value)
        if raw[:1] != _FLOAT32:
            raise ValueError("only float32 binary vectors are supported (BinaryVectorDtype.FLOAT32)")
        return np.frombuffer(raw, dtype="<f4", offset=2)
    return np.asarray(value if value is not None else [], dtype=np.float32)


def clip(text: str, limit: int) -> str:
    """`text` on one line (whitespace collapsed), cut to `limit` characters with a trailing '…'."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def episode_text(user_text: str, assistant_text: str) -> str:
    """One exchange as an episode memory: "User: …\\nAssistant: …" (the reply's start only)."""
    return f"User: {clip(user_text, EPISODE_USER_CHARS)}\nAssistant: {clip(assistant_text, EPISODE_ASSISTANT_CHARS)}"


@dataclass(frozen=True)
class Hit:
    """One retrieved memory. `score` is what it was ranked by (RRF, cosine or BM25, times the recency weight)."""

    id: str
    kind: str
    text: str
    score: float
    created_at: datetime | None
    source: dict | None
    updated_at: datetime | None = None
    similarity: float | None = None  # cosine to the query (vector and hybrid modes)
    lexical: float | None = None  # BM25 score (lexical and hybrid modes)
    seen_count: int = 1

    @property
    def date(self) -> datetime | None:
        """When this memory was last stated (updated_at), else when it was recorded."""
        return self.updated_at or self.created_at

    def to_dict(self) -> dict:
        """The hit as JSON-ready data (dates as ISO strings)."""
        data = asdict(self)
        for key in ("created_at", "updated_at"):
            data[key] = data[key].isoformat() if data[key] else None
        return data


# ---------------------------------------------------------------------------- the turn unit

TURN_CHARS = 1200  # a turn memory keeps this many characters of the message


@dataclass(frozen=True)
class TurnUnit:
    """One message to remember as an `episode` memory: where it is in the logs, who said it and when.

    Why turns, not exchanges: in a long real conversation one exchange can hold a long story and a short
    answer; indexing each turn (either speaker) lets a small budget carry many small, relevant pieces.
    """

    seq: int
    role: str
    text: str
    when: datetime | None = None
    speaker: str | None = None


def turn_text(role: str, text: str, speaker: str | None = None, when: datetime | None = None) -> str:
    """`Caroline: …` when the speaker is named, else `User: …` / `Assistant: …` (one line, clipped); with `when`,
    relative dates it uses are resolved in a note after it: `… yesterday … (yesterday = Sunday 7 May 2023)`."""
    who = speaker or ("User" if role == "user" else "Assistant")
    body = clip(text, TURN_CHARS)
    notes = date_notes(body, when) if when is not None else []
    return f"{who}: {body}" + (f" ({'; '.join(notes)})" if notes else "")


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SHORT_DAYS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
}
_RELATIVE = re.compile(
    r"(?i)\b(?:(?P<day>yesterday|today|tomorrow|tonight)"
    r"|(?P<which>last|next|this past|this coming) (?P<unit>week(?:end)?|month|year|"
    + "|".join(_WEEKDAYS + tuple(sorted(_SHORT_DAYS, key=len, reverse=True)))
    + r")"
    r"|(?P<n>\d+|a couple of|a few|few|an?|"
    + "|".join(w for w in _NUMBERS if w.isalpha() and w not in ("a", "an", "few"))
    + r") (?P<units>days?|weeks?|"
    r"months?|years?) ago)\b"
)


def _day(when: datetime) -> str:
    return f"{when:%A} {when.day} {when:%B %Y}"


def date_notes(text: str, when: datetime) -> list[str]:
    """Each relative date in `text` ("yesterday", "last Friday", "two weeks ago", "last year") resolved
    against `when`, the day it was said: ["yesterday = Sunday 7 May 2023", ...] (each phrase once)."""
    notes = {}
    for m in _RELATIVE.finditer(text):
        phrase = m.group(0).lower()
        if phrase in notes:
            continue
        if m["day"]:
            shift = {"yesterday": -1, "tomorrow": 1}.get(m["day"].lower(), 0)
            notes[phrase] = _day(when + timedelta(days=shift))
        elif m["which"]:
            back, unit = m["which"].lower() in ("last", "this past"), m["unit"].lower()
            unit = _WEEKDAYS[_SHORT_DAYS[unit]] if unit in _SHORT_DAYS else unit  # "last Fri" is last Friday
            if unit in _WEEKDAYS:
                gap = (when.weekday() - _WEEKDAYS.index(unit)) % 7 or 7
                notes[phrase] = _day(when - timedelta(days=gap) if back else when + timedelta(days=(7 - gap) or 7))
            elif unit == "year":
                notes[phrase] = str(when.year - 1 if back else when.year + 1)
            elif unit == "month":
                month = (
                    (when.replace(day=1) - timedelta(days=1)) if back else (when.replace(day=28) + timedelta(days=4))
                )
                notes[phrase] = f"{month:%B %Y}"
            else:
                notes[phrase] = f"the {unit} {'before' if back else 'after'} {_day(when)}"
        else:
            n = int(m["n"]) if m["n"].isdigit() else _NUMBERS[m["n"].lower()]
            unit = m["units"].lower().rstrip("s")
            if unit == "year":
                notes[phrase] = str(when.year - n)
            elif unit == "month":
                notes[phrase] = f"about {_day(when - timedelta(days=30 * n))}"
            else:
                notes[phrase] = _day(when - timedelta(days=n * (7 if unit == "week" else 1)))
    return [f"{phrase} = {value}" for phrase, value in notes.items()]
