"""Read a dated chat transcript (JSONL) for `--import`: turns keep their time and their conversation. Taught in further/05_long_conversations, section 'Dated turns'.

One JSON object per line: `{"role": "user"|"assistant", "content": ..., "ts": "2023-05-08T13:56:00"}`;
`ts` (ISO 8601, or a plain date such as "8 May, 2023") and `speaker` (a name) are optional. A line
`(conversation on DATE)` — bare, or as the `content` of a JSON line — starts a new conversation on that
date: the turns after it carry that date until the next marker or an explicit `ts`.

An imported turn is checked like a typed one (`check_turn`): text, or the Messages API's documented content
blocks with their documented keys; no `$`-prefixed or dotted key, no NUL, valid Unicode, within the size limits;
nothing the database cannot store (objects and arrays nested at most MAX_CONTENT_DEPTH levels, every integer within
64 bits: helpers.db.checks.check_storable); the transcript opens with a user turn. A file is checked whole before
anything is written, and a line nested too deeply is refused before it is parsed.

Every turn gets a stable identity, `line_id`: a hash of the transcript up to and including its line (the lines'
content, not the file's name or place). The same file, a copy of it, or the same file with lines appended gives
each turn the same id again, so an import run twice, or re-run after it was killed, writes each turn once
(helpers.memory.importer).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from dateutil import parser as _dateparser  # python-dateutil, pinned in requirements.txt

from helpers.db.checks import BSON_DEPTH_DOCS, BSON_MAX_DEPTH, check_storable
from helpers.memory.errors import EmptyMessageError
from helpers.memory.history import MAX_USER_CHARS, check_user_text

__all__ = [
    "Turn",
    "parse_when",
    "read_transcript",
    "read_transcript_file",
    "number_conversations",
    "MARKER",
    "check_turn",
    "check_turns",
    "MAX_LINE_CHARS",
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_TURNS",
    "MAX_CONTENT_DEPTH",
    "json_nesting",
    "identify",
]

MAX_LINE_CHARS = 1_000_000  # one transcript line (a turn with an image block fits; a 20 MB line does not)
MAX_IMPORT_BYTES = 20_000_000  # one transcript file
MAX_IMPORT_TURNS = 100_000  # turns in one import
NO_USER_TURN = "the transcript has no user turn; a conversation needs at least one message from the user"
MAX_SPEAKER_CHARS = 200
# A message's content is stored at most 5 levels below the top of a document (a session's facts_pending[i].
# messages[j].content: the session, the list, the item, the list, the message), so content may nest
# BSON_MAX_DEPTH - 5 levels of objects and arrays and still fit MongoDB's limit wherever it is kept.
MAX_CONTENT_DEPTH = BSON_MAX_DEPTH - 5

MARKER = re.compile(r"^\s*\(?\s*conversation\s+on\s+(?P<date>[^()]+?)\s*\)?\s*$", re.I)


@dataclass
class Turn:
    """One imported message: role, content, when it was said, which conversation (0, 1, …), who said it."""

    role: str
    content: str | list
    ts: datetime | None = None
    conversation: int = 0
    speaker: str | None = None
    line_id: str | None = field(default=None, compare=False)  # stable identity (module docstring), from `identify`

    def message(self) -> dict:
        return {"role": self.role, "content": self.content}


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def identify(turns: list[Turn]) -> list[Turn]:
    """Give each turn without one a `line_id`: a hash of every turn up to and including it (role, content, ts,
    speaker, conversation), so the same turns in the same order get the same ids."""
    chain = hashlib.sha256(b"turns")
    for turn in turns:
        fields = [turn.role, turn.content, turn.ts.isoformat() if turn.ts else None, turn.speaker, turn.conversation]
        chain.update(_canonical(fields) + b"\n")
        if turn.line_id is None:
            turn.line_id = chain.hexdigest()[:32]
    return turns


def json_nesting(line: str, limit: int) -> int:
    """How deeply the JSON objects and arrays of `line` nest (counted outside strings), up to `limit` + 1: enough to
    refuse a line before `json.loads` recurses through it (a line 200,000 levels deep raises RecursionError)."""
    if line.count("{") + line.count("[") <= limit:
        return min(line.count("{") + line.count("["), limit)  # cannot nest deeper than it has brackets
    depth = deepest = 0
    for bracket in re.finditer(r"[\[\]{}]", re.sub(r'"(?:[^"\\]|\\.)*"', "", line)):
        depth += 1 if bracket[0] in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


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
    try:
        when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
        when + _MARGIN, when - _MARGIN  # noqa: B018 - later steps add days and minutes: refuse what cannot take them
    except OverflowError:
        raise ValueError(f"{value!r} is at the edge of the calendar (years 1 to 9999); give a real date") from None
    return when


_MARGIN = timedelta(days=366)


def read_transcript(lines: Iterable[str], name: str = "<transcript>") -> list[Turn]:
    """Parse transcript lines into turns; raises ValueError naming the line that is wrong (nothing half-read)."""
    turns: list[Turn] = []
    conversation, date, total = -1, None, 0
    chain = hashlib.sha256(b"lines")  # the turns' identities: a hash of the transcript up to each line
    for n, line in enumerate(lines, 1):
        total += len(line)
        if len(line) > MAX_LINE_CHARS:
            raise ValueError(
                f"{name}:{n}: line too long ({len(line):,}+ characters > {MAX_LINE_CHARS:,}); "
                "split the turn or leave the attachment out"
            )
        if total > MAX_IMPORT_BYTES:
            raise ValueError(
                f"{name}:{n}: transcript too large (over {MAX_IMPORT_BYTES:,} characters); import it in parts"
            )
        if not line.strip():
            continue
        marker = MARKER.match(line)
        if marker is None and not line.lstrip().startswith("{"):
            raise ValueError(f"{name}:{n}: expected a JSON object or a '(conversation on DATE)' line")
        if marker is None:
            if json_nesting(line, MAX_CONTENT_DEPTH + 1) > MAX_CONTENT_DEPTH + 1:  # the line's object is 1 level
                raise ValueError(
                    f"{name}:{n}: JSON nested more than {MAX_CONTENT_DEPTH + 1} levels deep; a turn's content may nest "
                    f"{MAX_CONTENT_DEPTH} levels (MongoDB stores at most {BSON_MAX_DEPTH}: {BSON_DEPTH_DOCS})"
                )
            try:
                item = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{name}:{n}: not valid JSON ({err})") from None
            if not isinstance(item, dict):
                raise ValueError(f"{name}:{n}: expected a JSON object")
            content = item.get("content")
            if isinstance(content, str) and MARKER.match(content) and item.get("role") in (None, "system"):
                marker = MARKER.match(content)
        chain.update(_canonical(item if marker is None else line.strip()) + b"\n")
        if marker is not None:
            try:
                date = parse_when(marker["date"])
            except ValueError as err:
                raise ValueError(f"{name}:{n}: {err}") from None
            conversation += 1
            continue
        if item.get("role") not in ("user", "assistant") or "content" not in item:
            raise ValueError(f'{name}:{n}: expected {{"role": "user"|"assistant", "content": ...}}')
        ts = date
        if item.get("ts") not in (None, ""):
            try:
                ts = parse_when(str(item["ts"]))
            except ValueError as err:
                raise ValueError(f"{name}:{n}: ts: {err}") from None
        speaker = item.get("speaker")
        turns.append(
            Turn(
                item["role"],
                item["content"],
                ts,
                max(conversation, 0),
                speaker if isinstance(speaker, str) and speaker.strip() else None,
                chain.hexdigest()[:32],
            )
        )
        try:
            check_turn(turns[-1])
        except ValueError as err:
            raise ValueError(f"{name}:{n}: {err}") from None
    if len(turns) > MAX_IMPORT_TURNS:
        raise ValueError(f"{name}: {len(turns):,} turns > {MAX_IMPORT_TURNS:,}; import it in parts")
    if turns and not any(t.role == "user" for t in turns):
        raise ValueError(f"{name}: {NO_USER_TURN}")
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
    """`read_transcript` over a UTF-8 file, read line by line within MAX_LINE_CHARS (a huge line is refused
    before it is held in memory)."""

    def lines(handle):
        while line := handle.readline(MAX_LINE_CHARS + 1):
            yield line

    try:
        with open(path, encoding="utf-8", errors="strict") as handle:
            return read_transcript(lines(handle), path)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start}); save the transcript as UTF-8") from None


# -- an imported turn is checked like a typed one ------------------------------------------------------------------
_BLOCK_KEYS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "title", "context", "citations", "cache_control"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
}
_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
    "application/pdf": (b"%PDF-",),
}


def _check_value(where: str, value: Any) -> int:
    """Raise on a `$`/dotted key, a NUL or invalid Unicode anywhere inside `value`; returns its text length."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{where}: contains a NUL byte; remove control characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"{where}: not valid Unicode text (a lone surrogate); save the transcript as UTF-8"
            ) from None
        return len(value)
    if isinstance(value, dict):
        size = 0
        for key, inner in value.items():
            if not isinstance(key, str) or key.startswith("$") or "." in key:
                raise ValueError(f"{where}: key {key!r} is not allowed (no '$'-prefixed or dotted keys)")
            size += _check_value(f"{where}.{key}", inner)
        return size
    if isinstance(value, list):
        return sum(_check_value(f"{where}[{i}]", inner) for i, inner in enumerate(value))
    if value is None or isinstance(value, (bool, int, float)):
        return 0
    raise ValueError(f"{where}: unexpected {type(value).__name__}")


def _check_source(where: str, kind: str, source: Any) -> None:
    """An image/document source as the API documents it: base64 data of its media type, a URL, or plain text."""
    if not isinstance(source, dict):
        raise ValueError(f"{where}: {kind} needs a 'source' object")
    media = source.get("media_type")
    if (
        source.get("type") == "url"
        and set(source) == {"type", "url"}
        and isinstance(source["url"], str)
        and source["url"].startswith("https://")
    ):
        return
    if (
        kind == "document"
        and source.get("type") == "text"
        and media == "text/plain"
        and isinstance(source.get("data"), str)
        and set(source) == {"type", "media_type", "data"}
    ):
        return
    allowed = ("image/png", "image/jpeg", "image/gif", "image/webp") if kind == "image" else ("application/pdf",)
    if source.get("type") != "base64" or media not in allowed or set(source) != {"type", "media_type", "data"}:
        raise ValueError(f"{where}: {kind} source must be base64 ({', '.join(allowed)}) or an https url")
    try:
        data = base64.b64decode(source.get("data") or "", validate=True)
    except (ValueError, TypeError):
        raise ValueError(f"{where}: {kind} data is not base64") from None
    if not data.startswith(_MAGIC[media]) or (media == "image/webp" and data[8:12] != b"WEBP"):
        raise ValueError(f"{where}: {kind} data is not a {media} file")


def _check_blocks(where: str, role: str, blocks: list) -> None:
    if not blocks:
        raise ValueError(f"{where}: content is an empty list")
    for j, block in enumerate(blocks):
        here = f"{where}[{j}]"
        if not isinstance(block, dict) or block.get("type") not in _BLOCK_KEYS:
            raise ValueError(f"{here}: a content block must be one of the API's types ({', '.join(_BLOCK_KEYS)})")
        extra = set(block) - _BLOCK_KEYS[block["type"]]
        if extra:
            raise ValueError(f"{here}: unknown key(s) {', '.join(sorted(map(str, extra)))} in a {block['type']} block")
        kind = block["type"]
        if kind == "text" and (not isinstance(block.get("text"), str) or not block["text"].strip()):
            raise ValueError(f"{here}: a text block needs non-blank 'text'")
        if kind in ("image", "document"):
            _check_source(here, kind, block.get("source"))
        if kind == "tool_use" and (role != "assistant" or not isinstance(block.get("input", {}), dict)):
            raise ValueError(f"{here}: tool_use belongs in an assistant turn, with an object 'input'")
        if kind == "tool_result":
            if role != "user":
                raise ValueError(f"{here}: tool_result belongs in a user turn")
            inner = block.get("content")
            if isinstance(inner, list):
                _check_blocks(f"{here}.content", role, inner)
            elif inner is not None and not isinstance(inner, str):
                raise ValueError(f"{here}: tool_result content must be text or blocks")


def check_turn(turn: Turn) -> None:
    """Raise ValueError unless `turn` is what a typed turn may be (see the module docstring)."""
    if turn.role not in ("user", "assistant"):
        raise ValueError(f"role must be 'user' or 'assistant', got {turn.role!r}")
    check_storable("content", turn.content, MAX_CONTENT_DEPTH)  # first: the checks below recurse through it
    if isinstance(turn.content, str):
        try:
            check_user_text(turn.content)
        except EmptyMessageError as err:
            raise ValueError(f"content: {err}") from None
    elif isinstance(turn.content, list):
        _check_blocks("content", turn.role, turn.content)
        size = _check_value("content", turn.content)
        if size > MAX_USER_CHARS:
            raise ValueError(f"content too long ({size:,} characters > {MAX_USER_CHARS:,})")
    else:
        raise ValueError(f"content must be text or a list of content blocks, got {type(turn.content).__name__}")
    if turn.speaker is not None:
        if not isinstance(turn.speaker, str) or len(turn.speaker) > MAX_SPEAKER_CHARS:
            raise ValueError(f"speaker must be a name of at most {MAX_SPEAKER_CHARS} characters")
        _check_value("speaker", turn.speaker)


def check_turns(turns: list[Turn]) -> None:
    """`check_turn` over a whole transcript (before anything is written); the error names the turn."""
    if len(turns) > MAX_IMPORT_TURNS:
        raise ValueError(f"{len(turns):,} turns > {MAX_IMPORT_TURNS:,}; import them in parts")
    total = 0
    for i, turn in enumerate(turns):
        try:
            check_turn(turn)
        except ValueError as err:
            raise ValueError(f"turns[{i}]: {err}") from None
        total += len(turn.content) if isinstance(turn.content, str) else 0
        if total > MAX_IMPORT_BYTES:
            raise ValueError(f"transcript too large (over {MAX_IMPORT_BYTES:,} characters); import it in parts")
    # A transcript may open with the other side (a greeting, or the friend who spoke first): that turn is logged
    # and summarised, and the window, which the Messages API needs to start with a user message, never starts
    # with it. A transcript with no user turn at all has no exchange to keep, so it is refused.
    if turns and not any(turn.role == "user" for turn in turns):
        raise ValueError(NO_USER_TURN)
