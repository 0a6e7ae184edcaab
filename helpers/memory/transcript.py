"""Read a dated chat transcript (JSONL) for `--import`: turns keep their time and their conversation. Taught in 06_long_conversations, section 'Dated turns'.

One JSON object per line: `{"role": "user"|"assistant", "content": ..., "ts": "2023-05-08T13:56:00"}`;
`ts` (ISO 8601, or a plain date such as "8 May, 2023") and `speaker` (a name) are optional. A line
`(conversation on DATE)` — bare, or as the `content` of a JSON line — starts a new conversation on that
date: the turns after it carry that date until the next marker or an explicit `ts`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from dateutil import parser as _dateparser  # python-dateutil, pinned in requirements.txt

__all__ = ["Turn", "parse_when", "read_transcript", "read_transcript_file", "number_conversations", "MARKER"]

MARKER = re.compile(r"^\s*\(?\s*conversation\s+on\s+(?P<date>[^()]+?)\s*\)?\s*$", re.I)


@dataclass
class Turn:
    """One imported message: role, content, when it was said, which conversation (0, 1, …), who said it."""

    role: str
    content: str | list
    ts: datetime | None = None
    conversation: int = 0
    speaker: str | None = None

    def message(self) -> dict:
        return {"role": self.role, "content": self.content}


def parse_when(value: str) -> datetime:
    """An ISO 8601 timestamp or a written date ("1:56 pm on 8 May, 2023") as an aware UTC datetime."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a date or timestamp, got {value!r}")
    text = value.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = _dateparser.parse(text.replace(" on ", " "), fuzzy=False)
        except (ValueError, OverflowError):
            raise ValueError(f"cannot read {value!r} as a date; use ISO 8601 such as 2023-05-08T13:56:00") from None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def read_transcript(lines: Iterable[str], name: str = "<transcript>") -> list[Turn]:
    """Parse transcript lines into turns; raises ValueError naming the line that is wrong (nothing half-read)."""
    turns: list[Turn] = []
    conversation, date = -1, None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        marker = MARKER.match(line)
        if marker is None and not line.lstrip().startswith("{"):
            raise ValueError(f"{name}:{n}: expected a JSON object or a '(conversation on DATE)' line")
        if marker is None:
            try:
                item = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{name}:{n}: not valid JSON ({err})") from None
            if not isinstance(item, dict):
                raise ValueError(f"{name}:{n}: expected a JSON object")
            content = item.get("content")
            if isinstance(content, str) and MARKER.match(content) and item.get("role") in (None, "system"):
                marker = MARKER.match(content)
        if marker is not None:
            try:
                date = parse_when(marker["date"])
            except ValueError as err:
                raise ValueError(f"{name}:{n}: {err}") from None
            conversation += 1
            continue
        if item.get("role") not in ("user", "assistant") or "content" not in item:
            raise ValueError(f"{name}:{n}: expected {{\"role\": \"user\"|\"assistant\", \"content\": ...}}")
        ts = date
        if item.get("ts") not in (None, ""):
            try:
                ts = parse_when(str(item["ts"]))
            except ValueError as err:
                raise ValueError(f"{name}:{n}: ts: {err}") from None
        speaker = item.get("speaker")
        turns.append(Turn(item["role"], item["content"], ts, max(conversation, 0),
                          speaker if isinstance(speaker, str) and speaker.strip() else None))
    if conversation < 0:  # no marker: a new day starts a new conversation
        number_conversations(turns)
    return turns


def number_conversations(turns: list[Turn]) -> None:
    """Without markers, a turn whose `ts` is on a later day than the previous turn opens a new conversation."""
    if any(t.conversation for t in turns):
        return
    conversation, last = 0, None
    for turn in turns:
        if turn.ts is not None and last is not None and turn.ts.date() > last.date():
            conversation += 1
        last = turn.ts or last
        turn.conversation = conversation


def read_transcript_file(path: str) -> list[Turn]:
    """`read_transcript` over a UTF-8 file."""
    with open(path, encoding="utf-8") as handle:
        return read_transcript(handle, path)
