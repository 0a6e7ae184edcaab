"""The users whose memories a process holds: opened from their index file, kept current by the change log, dropped least recently used first. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`MemoryIndex` asks `UserCache.get(user_id)` for a user's rows before every read. The first time, they come from
the user's index file (helpers.retrieval.snapshot: opened in about the same time for 1,000 or 50,000 memories)
plus the change log entries written since (helpers.retrieval.changes); without a usable file, from every memory
document, and a file is written for next time. Every later request reads the user's revision once: the same
revision costs nothing more; a higher one names the memories to read again. What the process holds is capped by
`max_bytes` (INDEX_CACHE_MB) and optionally a number of users; the least recently used go first.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bson import ObjectId

from helpers.retrieval import changes
from helpers.retrieval.cache import PROJECTION, UserRows
from helpers.retrieval.changes import Cursor, Head, announce, drop_revisions, read_entries, read_head
from helpers.retrieval.snapshot import open_snapshot, read_header, remove_user_files, snapshot_path, write_snapshot

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store

__all__ = ["UserCache", "SNAPSHOT_MIN_ROWS", "SNAPSHOT_LAG"]

SNAPSHOT_MIN_ROWS = 256  # fewer memories load from the database about as fast as from a file: none is written
SNAPSHOT_LAG = 256  # revisions after which a user's index file is written again (a quarter of LOG_KEEP)
LOOKBACK = 64  # after reading every document: the last revisions checked again (writes that may be landing)
FETCH_IDS = 5000  # ids per query when reading changed memories again
RELOAD = "(reload)"  # a cursor epoch no revision document has: read the user again at the next request


@dataclass
class _Held:
    rows: UserRows
    cursor: Cursor
    file_rev: int = -1  # the revision the newest index file known to this process reflects
    legacy: bool = False  # loaded without a revision document, with memories: never adopt a new epoch
    nbytes: int = 0


class UserCache:
    """Per-user rows for one store, kept current across processes, within a memory cap. `MemoryIndex` calls it
    under its lock."""

    def __init__(
        self,
        store: Store,
        dim: int,
        *,
        root: Path | None,
        max_bytes: int,
        max_users: int | None,
        stats: Counter,
        coarse_min_rows: int | None = None,
    ):
        self.store, self.dim, self.root, self.coarse_min_rows = store, dim, root, coarse_min_rows
        self.max_bytes, self.max_users, self.stats = max_bytes, max_users, stats
        self._users: OrderedDict[str, _Held] = OrderedDict()
        self.holding: set[str] = set()  # users only this process writes for now (MemoryIndex.holding)

    def __contains__(self, user_id: str) -> bool:
        return user_id in self._users

    @property
    def nbytes(self) -> int:
        """Bytes held for every user (an estimate: arrays, mapped file pages and dicts)."""
        return sum(held.nbytes for held in self._users.values())

    def users(self) -> list[str]:
        """Users held, least recently used first."""
        return list(self._users)

    def peek(self, user_id: str) -> UserRows | None:
        """The user's rows if held (no database read)."""
        held = self._users.get(user_id)
        return held.rows if held is not None else None

    def get(self, user_id: str, *, refresh: bool = True) -> UserRows:
        """The user's rows, opened if not held, else brought up to date with the change log (one read)."""
        held = self._users.get(user_id)
        if held is None:
            held = self._open(user_id)
        else:
            self._users.move_to_end(user_id)
            if refresh and user_id not in self.holding:
                held = self._refresh(user_id, held)
        self._account(user_id, held)
        return held.rows

    def drop(self, user_id: str | None = None) -> None:
        """Let go of what this process holds of one user (or of all); files and database untouched."""
        if user_id is None:
            self._users.clear()
        else:
            self._users.pop(user_id, None)

    def erase(self, user_id: str) -> None:
        """The user's memories were deleted: drop their revision document and change log (every process then
        drops what it holds of them), their index file on this machine, and what this process holds."""
        drop_revisions(self.store, user_id)
        remove_user_files(self.store, user_id, root=self.root)
        self._users.pop(user_id, None)

    # -- writes
    def announce(self, user_id: str, ids: list, op: str) -> tuple[str, int, int]:
        """Announce a write (helpers.retrieval.changes.announce); returns (epoch, first, last revision)."""
        return announce(self.store, user_id, ids, op)

    def wrote(self, user_id: str, epoch: str, first: int, last: int) -> None:
        """After this process's own write (announced as first..last) was applied to its rows."""
        held = self._users.get(user_id)
        if held is None:
            return
        cursor = held.cursor
        if cursor.epoch is None and not held.legacy:  # this write made the user's revision document
            cursor.epoch, cursor.seen = epoch, (last if first == 1 else 0)
        elif cursor.epoch != epoch:
            cursor.epoch = RELOAD  # made anew since this process read the user: read them again
        elif cursor.seen == first - 1:
            cursor.seen = last  # nobody else wrote in between: our own entries need no reading
        self._account(user_id, held)
        self.checkpoint(user_id)

    # -- index files
    def checkpoint(self, user_id: str, *, force: bool = False) -> bool:
        """Write the user's index file if it is due (SNAPSHOT_LAG revisions behind; `force`: any change)."""
        held = self._users.get(user_id)
        if held is None or self.root is None or held.cursor.epoch in (None, RELOAD):
            return False
        settled = held.cursor.settled
        if held.rows.n < SNAPSHOT_MIN_ROWS or settled <= held.file_rev:
            return False
        if not force and settled - held.file_rev < SNAPSHOT_LAG:
            return False
        path = snapshot_path(self.root, self.store.db.name, user_id)
        header = read_header(path)
        if header and header.get("epoch") == held.cursor.epoch and header.get("settled", -1) >= settled:
            held.file_rev = header["settled"]  # another process wrote it already
            return False
        started = time.perf_counter()
        if held.rows.train_coarse(self.coarse_min_rows):  # the lists go into the file with the rest
            self.stats["coarse_trained"] += 1
        try:
            write_snapshot(path, held.rows, user_id=user_id, epoch=held.cursor.epoch, settled=settled)
        except OSError as err:  # a full or read-only disk: search goes on from memory, without files
            warnings.warn(
                f"cannot write the memory index file {path} ({err}); this process keeps no index files now "
                "(searches are unaffected; a new process reads every memory once). Free space or fix the "
                "permissions of GTE_DATA_DIR.",
                RuntimeWarning,
                stacklevel=2,
            )
            self.root = None
            return False
        held.file_rev = settled
        self.stats["files_written"] += 1
        self.stats["file_write_ms"] += int((time.perf_counter() - started) * 1000)
        head = read_head(self.store, user_id)
        if head is None or head.epoch != held.cursor.epoch:  # erased meanwhile: keep no copy
            remove_user_files(self.store, user_id, root=self.root)
        return True

    # -- opening and following the log
    def _open(self, user_id: str) -> _Held:
        started = time.perf_counter()
        head = read_head(self.store, user_id)
        held = None
        path = snapshot_path(self.root, self.store.db.name, user_id) if self.root is not None else None
        opened = open_snapshot(path, dim=self.dim, user_id=user_id) if head is not None and path else None
        if opened is not None:
            rows, header = opened
            if header["epoch"] != head.epoch:
                with contextlib.suppress(OSError):
                    remove_user_files(self.store, user_id, root=self.root)  # a file of the user as erased since
            elif 0 <= head.rev - header["settled"] <= changes.LOG_KEEP:
                held = _Held(rows, Cursor(head.epoch, seen=header["settled"]), file_rev=header["settled"])
                held = self._follow(user_id, held, head)
                if held is not None:
                    self.stats["file_opens"] += 1
                    self.stats["file_open_ms"] += int((time.perf_counter() - started) * 1000)
        if held is None:
            if head is None and path is not None:
                with contextlib.suppress(OSError):
                    remove_user_files(self.store, user_id, root=self.root)  # no revision document vouches for it
            held = self._load(user_id, head)
            self.stats["full_loads"] += 1
            self.stats["full_load_ms"] += int((time.perf_counter() - started) * 1000)
        self._users[user_id] = held
        if held.file_rev < 0:
            self.checkpoint(user_id, force=True)
        return held

    def _load(self, user_id: str, head: Head | None) -> _Held:
        """Every memory document of the user (the slow way: no usable index file)."""
        rows = UserRows(self.dim)
        docs = [
            doc for doc in self.store.memories.find({"user_id": user_id}, PROJECTION) if doc.get("user_id") == user_id
        ]
        for doc in sorted(docs, key=_insertion_order):  # the order they were written in, as the writer's rows
            rows.upsert(doc)
        if rows.train_coarse(self.coarse_min_rows):
            self.stats["coarse_trained"] += 1
        if head is None:
            return _Held(rows, Cursor(None), legacy=rows.n > 0)
        held = _Held(rows, Cursor(head.epoch, seen=max(0, head.rev - LOOKBACK)))
        return self._follow(user_id, held, head) or held  # writes announced just before may not have landed

    def _refresh(self, user_id: str, held: _Held) -> _Held:
        head = read_head(self.store, user_id)
        self.stats["refreshes"] += 1
        if head is None and held.cursor.epoch is None:
            return held
        if head is None or head.epoch != held.cursor.epoch:
            return self._reopen(user_id)
        followed = self._follow(user_id, held, head)
        if followed is None:
            return self._reopen(user_id)
        self.checkpoint(user_id)
        return followed

    def _reopen(self, user_id: str) -> _Held:
        self._users.pop(user_id, None)
        self.stats["reloads"] += 1
        return self._open(user_id)

    def _follow(self, user_id: str, held: _Held, head: Head) -> _Held | None:
        """Apply the change log up to `head`; None when it no longer reaches back to the cursor."""
        cursor = held.cursor
        unknown = cursor.unknown()
        if head.rev > cursor.seen or unknown:
            if head.rev - cursor.seen > changes.LOG_KEEP:  # entries before that may be pruned
                return None
            after = min([cursor.seen, *(rev - 1 for rev in unknown)])
            cursor.add(read_entries(self.store, user_id, after, head.rev), head.rev, after=cursor.seen)
        if cursor.pending:
            _resolve(held.rows, cursor)
        if any(entry["ids"] for entry in cursor.pending.values()):
            self._read_again(user_id, held)
        if cursor.pending:
            cursor.expire()
        return held

    def _read_again(self, user_id: str, held: _Held) -> None:
        """Read the memories of open entries again: found ones are (re)written into the rows, gone ones erased."""
        rows, cursor = held.rows, held.cursor
        ids = list({_id for entry in cursor.pending.values() for _id in entry["ids"] or ()})
        found = set()
        for start in range(0, len(ids), FETCH_IDS):
            chunk = ids[start : start + FETCH_IDS]
            for doc in self.store.memories.find({"_id": {"$in": chunk}, "user_id": user_id}, PROJECTION):
                if doc.get("user_id") == user_id:
                    rows.upsert(doc)
                    found.add(doc["_id"])
        for _id in ids:
            row = rows.row_of(_id)
            if _id not in found and row is not None and row not in rows.erased:
                rows.erase(row)  # deleted elsewhere
        self.stats["changes_read"] += len(ids)
        _resolve(rows, cursor)

    def _account(self, user_id: str, held: _Held) -> None:
        held.nbytes = held.rows.nbytes()
        total = self.nbytes
        while len(self._users) > 1:  # least recently used first, never the user just asked for
            if total <= self.max_bytes and (self.max_users is None or len(self._users) <= self.max_users):
                return
            oldest = next(iter(self._users))
            if oldest == user_id:
                self._users.move_to_end(user_id)
                continue
            total -= self._users.pop(oldest).nbytes
            self.stats["evictions"] += 1


def _resolve(rows: UserRows, cursor: Cursor) -> None:
    """Close the pending entries the rows already show: each put memory at that revision or later, each deleted
    one gone."""
    for rev, entry in list(cursor.pending.items()):
        if entry["ids"] is None:
            continue
        if entry["op"] == "del":
            done = all((row := rows.row_of(_id)) is None or row in rows.erased for _id in entry["ids"])
        else:
            done = all((row := rows.row_of(_id)) is not None and rows.rev[row] >= rev for _id in entry["ids"])
        if done:
            del cursor.pending[rev]


def _insertion_order(doc: dict) -> tuple:
    """ObjectIds in the order they were made (a writer's rows are in that order; the server's own order may not
    be, and ranking breaks some ties by row order); any other kind of id after them, by its text."""
    _id = doc["_id"]
    return (0, _id.binary, "") if isinstance(_id, ObjectId) else (1, b"", str(_id))
