"""Plumbing: the offline model's chat replies kept on disk, shared by the processes of one test run.

A chat reply is a pure function of the request's system text and turns (helpers.offline.reply.chat_reply), so the
same request asked in another process (two notebooks replaying one script, a terminal chat and a test) gets the very
same text. With `GTE_REPLY_CACHE_DIR` set, each reply is saved there under a hash of its inputs and of the helpers'
source files, and read back instead of worked out again. Off unless set: the test suite sets it for its run
(conftest.py, a temp dir it removes); no lesson or benchmark ever reads a kept reply.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["REPLY_CACHE_ENV", "kept_reply", "source_identity"]

REPLY_CACHE_ENV = "GTE_REPLY_CACHE_DIR"
_HELPERS = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def source_identity() -> str:
    """A hash of every helpers/ source file's path, size and change time: a kept reply is only read back by the same
    code (an edited module, the lexicon included, makes every earlier reply a miss)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in _HELPERS.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        stat = path.stat()
        digest.update(f"{path.relative_to(_HELPERS)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _path(directory: Path, system: str, turns: list[tuple[str, str]]) -> Path:
    key = json.dumps([source_identity(), system, [list(t) for t in turns]], ensure_ascii=False)
    name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return directory / name[:2] / f"{name}.json"


def kept_reply(compute: Callable[[str, list[tuple[str, str]]], str], system: str, turns: list[tuple[str, str]]) -> str:
    """`compute(system, turns)`, read from the reply cache when `GTE_REPLY_CACHE_DIR` is set and holds it (and saved
    there when it does not); computed every time when unset. A damaged or foreign file is computed anew."""
    directory = os.environ.get(REPLY_CACHE_ENV, "").strip()
    if not directory:
        return compute(system, turns)
    path = _path(Path(directory), system, turns)
    try:
        kept = json.loads(path.read_text(encoding="ascii"))
        if isinstance(kept, dict) and isinstance(kept.get("text"), str):
            return kept["text"]
    except (OSError, ValueError):
        pass  # not there yet, or unreadable: work it out
    text = compute(system, turns)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"text": text}), encoding="ascii")  # escaped: any string, lone surrogates too
        os.replace(tmp, path)  # whole or absent: another process never reads half a reply
    except OSError:
        pass  # a cache that cannot be written is only a cache
    return text
