"""Every memory-tool path confined to `/memories`. Taught in 06_memory_tool, section 'Paths stay under /memories'.

A path outside it is refused with a message the model can act on.

The model names files by path (`/memories/notes.txt`); the store keys them by that path, so nothing here ever
touches a filesystem, but a path is still checked as strictly as a handler on disk must check it (the docs'
"Path traversal protection": https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool):

- it starts with `/memories` and continues with `/` (`/memoriesX` is refused: the reference handler's plain
  prefix test lets it through);
- no `.` or `..` segment, no empty segment (`//`), no backslash, no percent-encoded `.`, `/` or `\\`
  (`%2e%2e%2f`): traversal forms are refused, never resolved;
- no control, format (zero-width, bidi override), surrogate, private-use, unassigned or other invisible character
  (every Default_Ignorable one: a Hangul filler, a variation selector), and every segment is in NFKC form without
  spaces at its ends: `ｎｏｔｅｓ` or a decomposed `é` would otherwise be a second file that looks like the first;
  beyond NFKC, the backend reads a path that looks like an existing one (`noтes.md`, Cyrillic т) as that one
  (helpers.memory_tool.backend.same_paths);
- at most MAX_SEGMENT_BYTES per name, MAX_PATH_BYTES per path and MAX_DEPTH names below `/memories`.

The refusal texts: "Path must start with /memories, got: {path}" and "Path {path} would escape /memories
directory" are the reference handler's (anthropic SDK, `BetaLocalFilesystemMemoryTool._validate_path`); the docs
give none. The others are ours, each naming what to change.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import unquote

from anthropic.lib.tools import ToolError

from helpers.prompts import invisible

__all__ = [
    "ROOT",
    "MAX_SEGMENT_BYTES",
    "MAX_PATH_BYTES",
    "MAX_DEPTH",
    "check_path",
    "is_allowed",
    "shown",
    "parent_of",
    "ancestors",
    "is_under",
]

ROOT = "/memories"
MAX_SEGMENT_BYTES = 255  # a file or directory name, in UTF-8 bytes (NAME_MAX on Linux)
MAX_PATH_BYTES = 1024  # a whole path, in UTF-8 bytes
MAX_DEPTH = 16  # names below /memories
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")
_SHOWN_CHARS = 200  # how much of a refused path an error repeats


def shown(text: str, limit: int = _SHOWN_CHARS) -> str:
    """`text` as an error repeats it: invisible and control characters spelled out (`\\u202e`), cut to `limit`."""
    out = "".join(
        ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in _REFUSED_CATEGORIES else ch
        for ch in text[: limit + 1]
    )
    return out if len(text) <= limit else out[:limit] + "…"


def _odd(ch: str) -> bool:
    return unicodedata.category(ch) in _REFUSED_CATEGORIES or invisible(ch)  # a Hangul filler is a letter


def _check_segment(segment: str, path: str) -> None:
    if segment in (".", ".."):
        raise ToolError(f"Path {shown(path)} would escape /memories directory")
    if not segment:
        raise ToolError(f"Error: The path {shown(path)} has an empty name (two '/' in a row); remove the extra '/'")
    if "\\" in segment:
        raise ToolError(f"Error: The path {shown(path)} contains a backslash; use '/' between names")
    decoded = unquote(segment) if _ENCODED.search(segment) else segment
    if decoded != segment and (decoded in (".", "..") or "/" in decoded or "\\" in decoded or ".." in decoded):
        raise ToolError(f"Path {shown(path)} would escape /memories directory")
    bad = next((ch for ch in segment if _odd(ch)), None)
    if bad is not None:
        raise ToolError(
            f"Error: The path {shown(path)} contains the invisible or control character U+{ord(bad):04X}; "
            "use plain printable names"
        )
    if unicodedata.normalize("NFKC", segment) != segment:
        raise ToolError(
            f"Error: The name {shown(segment)!r} in {shown(path)} has a look-alike spelling; "
            f"write it as {shown(unicodedata.normalize('NFKC', segment))!r}"
        )
    if segment != segment.strip():
        raise ToolError(f"Error: The name {shown(segment)!r} in {shown(path)} starts or ends with a space; remove it")
    if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise ToolError(
            f"Error: The name {shown(segment, 60)!r} is {len(segment.encode('utf-8')):,} bytes long; "
            f"use names of at most {MAX_SEGMENT_BYTES} bytes"
        )


def check_path(path: Any, *, name: str = "path") -> str:
    """`path` checked and normalised (one trailing '/' dropped), or ToolError saying what is wrong with it."""
    if not isinstance(path, str):
        raise ToolError(f"Error: Parameter `{name}` must be a string such as '/memories/notes.txt', got {path!r}")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise ToolError(f"Error: The path {shown(path)} is not valid Unicode text; use plain printable names") from None
    if "\x00" in path:
        raise ToolError(f"Error: The path {shown(path)} contains a NUL character (U+0000); use plain printable names")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise ToolError(f"Path must start with /memories, got: {shown(path)}")
    if size > MAX_PATH_BYTES:
        raise ToolError(f"Error: The path is {size:,} bytes long; use paths of at most {MAX_PATH_BYTES:,} bytes")
    if path.endswith("/") and path != ROOT + "/":
        path = path[:-1]
    rest = path[len(ROOT) :].lstrip("/") if path in (ROOT, ROOT + "/") else path[len(ROOT) + 1 :]
    if not rest:
        return ROOT
    segments = rest.split("/")
    for segment in segments:
        _check_segment(segment, path)
    if len(segments) > MAX_DEPTH:
        raise ToolError(
            f"Error: The path {shown(path)} is {len(segments)} names deep; use at most {MAX_DEPTH} below /memories"
        )
    return path


def parent_of(path: str) -> str:
    """The directory holding `path` (`/memories` for a top-level name)."""
    return path.rsplit("/", 1)[0] if path != ROOT else ROOT


def ancestors(path: str) -> list[str]:
    """The directories above `path`, from `/memories` down (empty for `/memories` itself)."""
    if path == ROOT:
        return []
    parts = path[len(ROOT) + 1 :].split("/")
    return [ROOT] + [f"{ROOT}/{'/'.join(parts[:i])}" for i in range(1, len(parts))]


def is_under(path: str, directory: str) -> bool:
    """True when `path` lies inside `directory` (not equal to it)."""
    return path.startswith(directory.rstrip("/") + "/")


def is_allowed(path: Any) -> bool:
    """True when `check_path` accepts `path` (the exercise of 06_memory_tool, 'Paths stay under /memories')."""
    try:
        check_path(path)
    except ToolError:
        return False
    return True
