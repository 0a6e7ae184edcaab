"""A revision counter and a change log per user: another process's writes seen at the next request. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

Every write `MemoryIndex` makes to a user's memories is first *announced*: one atomic update adds 1 to the
user's revision (`memory_revisions`: {user_id, epoch, rev}), then the ids about to be written, and whether they
are put or deleted, go into `memory_changes` under that revision. The write then stamps each memory it puts
with the revision (`rev`). A process holding the user's memories reads the small revision document once per
request: the same revision means nothing changed; a higher one names exactly the memories to read again, so the
work is proportional to the change, not to the memory. Deletions are named like any other write, and erasing
the user (helpers.memory.forget) deletes the revision document too: the `epoch` set when it was created no
longer matches, and every process drops what it held. An entry is done once the rows show it (each put memory
at that revision or later, each deleted one gone); one still open after `SETTLE_S` (a writer that died between
announcing and writing) is given up, as is a revision whose entry never appears. The log keeps the last
`LOG_KEEP` revisions of each user. Works the same on the local server, MongoDB and mongomock: no change
streams, no transactions.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from helpers.retrieval.schema import as_utc, utc_now

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store

__all__ = [
    "REVISIONS",
    "CHANGES",
    "LOG_KEEP",
    "IDS_PER_ENTRY",
    "SETTLE_S",
    "Head",
    "Cursor",
    "ensure_change_indexes",
    "announce",
    "read_head",
    "read_entries",
    "recent_entries",
    "drop_revisions",
]

REVISIONS = "memory_revisions"  # both sort after "memories": forget_user's sweep deletes the memories first
CHANGES = "memory_changes"
LOG_KEEP = 1024  # revisions kept in the log per user; a process further behind reloads the user
PRUNE_EVERY = 64  # a writer deletes entries older than LOG_KEEP once in this many revisions
IDS_PER_ENTRY = 10_000  # a bigger batch is announced as several revisions
SETTLE_S = 60.0  # an announced write not seen done after this long is given up (its writer died)


@dataclass(frozen=True)
class Head:
    """A user's revision document as read."""

    epoch: str
    rev: int


@dataclass
class Cursor:
    """How far one process has followed a user's change log: revisions up to `seen` are known, of which
    `pending` ({revision: entry}) are not yet seen done; an entry whose ids are None was not found yet (its
    writer is between its two steps). `epoch` None: the user had no revision document when loaded."""

    epoch: str | None
    seen: int = 0
    pending: dict[int, dict] = field(default_factory=dict)

    @property
    def settled(self) -> int:
        """Every revision up to this one is reflected in the rows."""
        return min(self.pending) - 1 if self.pending else self.seen

    def add(self, entries: dict[int, dict], upto: int, after: int) -> None:
        """Take the entries of revisions after..upto (a missing one is pending with ids None) and move to `upto`."""
        noticed = time.time()
        for rev in range(after + 1, upto + 1):
            entry = entries.get(rev)
            if entry is not None:
                self.pending[rev] = {"ids": entry["ids"], "op": entry["op"], "noticed": noticed}
            elif rev not in self.pending:
                self.pending[rev] = {"ids": None, "op": None, "noticed": noticed}
        for rev in set(entries) & set(self.pending):
            if self.pending[rev]["ids"] is None:
                self.pending[rev] = {"ids": entries[rev]["ids"], "op": entries[rev]["op"], "noticed": noticed}
        self.seen = max(self.seen, upto)

    def unknown(self) -> list[int]:
        """Pending revisions whose entry was not found yet."""
        return sorted(rev for rev, entry in self.pending.items() if entry["ids"] is None)

    def expire(self) -> list[int]:
        """Give up entries pending for more than SETTLE_S (their writer died mid-write); returns them."""
        limit = time.time() - SETTLE_S
        old = [rev for rev, entry in self.pending.items() if entry["noticed"] <= limit]
        for rev in old:
            del self.pending[rev]
        return old


def _revisions(store: Store) -> Any:
    return store.db[REVISIONS]


def _changes(store: Store) -> Any:
    return store.db[CHANGES]


def ensure_change_indexes(store: Store) -> None:
    """One revision document per user; change entries by (user, revision)."""
    _revisions(store).create_index([("user_id", ASCENDING)], unique=True, name="user")
    _changes(store).create_index([("user_id", ASCENDING), ("rev", ASCENDING)], unique=True, name="user_rev")


def announce(store: Store, user_id: str, ids: list, op: str) -> tuple[str, int, int]:
    """Announce a write of `ids` ("put" or "del") before making it; returns (epoch, first, last revision).

    Stamp each put memory with `last`. Creates the user's revision document (a new epoch) if there is none."""
    if op not in ("put", "del"):
        raise ValueError(f"op must be 'put' or 'del', got {op!r}")
    chunks = [list(ids[i : i + IDS_PER_ENTRY]) for i in range(0, len(ids), IDS_PER_ENTRY)] or [[]]
    update = {"$inc": {"rev": len(chunks)}, "$setOnInsert": {"epoch": uuid.uuid4().hex}}
    for attempt in range(3):
        try:
            doc = _revisions(store).find_one_and_update(
                {"user_id": user_id},
                update,
                upsert=True,
                return_document=ReturnDocument.AFTER,
                projection={"_id": 0, "epoch": 1, "rev": 1},
            )
            break
        except DuplicateKeyError:  # two first writers at once: the other one created the document; go again
            if attempt == 2:
                raise
    last = int(doc["rev"])
    first = last - len(chunks) + 1
    now = utc_now()
    _changes(store).insert_many(
        [{"user_id": user_id, "rev": first + i, "ids": chunk, "op": op, "at": now} for i, chunk in enumerate(chunks)],
        ordered=True,
    )
    if last // PRUNE_EVERY != (first - 1) // PRUNE_EVERY and last > LOG_KEEP:
        _changes(store).delete_many({"user_id": user_id, "rev": {"$lte": last - LOG_KEEP}})
    return str(doc["epoch"]), first, last


def read_head(store: Store, user_id: str) -> Head | None:
    """The user's epoch and revision; None when the user has no revision document."""
    doc = _revisions(store).find_one({"user_id": user_id}, {"_id": 0, "epoch": 1, "rev": 1})
    return None if doc is None else Head(str(doc.get("epoch")), int(doc.get("rev") or 0))


def read_entries(store: Store, user_id: str, after: int, upto: int) -> dict[int, dict]:
    """{revision: entry} of the user's change log for revisions after..upto (those not pruned)."""
    query = {"user_id": user_id, "rev": {"$gt": int(after), "$lte": int(upto)}}
    return {int(doc["rev"]): doc for doc in _changes(store).find(query, {"_id": 0, "rev": 1, "ids": 1, "op": 1})}


def recent_entries(store: Store, user_id: str, upto: int, seconds: float = SETTLE_S) -> dict[int, dict]:
    """Entries up to revision `upto` announced in the last `seconds` (writes that may still be landing)."""
    since = utc_now() - timedelta(seconds=seconds)
    query = {"user_id": user_id, "rev": {"$lte": int(upto)}, "at": {"$gte": since}}
    found = _changes(store).find(query, {"_id": 0, "rev": 1, "ids": 1, "op": 1, "at": 1})
    return {int(doc["rev"]): doc for doc in found if (as_utc(doc.get("at")) or since) >= since}


def drop_revisions(store: Store, user_id: str) -> None:
    """Delete the user's revision document and change log (after their memories): every process then drops
    what it holds of them."""
    _revisions(store).delete_many({"user_id": user_id})
    _changes(store).delete_many({"user_id": user_id})
