"""One user's memory files in MongoDB. Taught in 06_memory_tool, section 'Files in MongoDB, per user'.

One MongoDB document per user under a version guard, and the audit trail of writes.

Collection `memory_files`, one document per user (unique index `user` on user_id):

    {user_id, version, files: [{path, content, bytes, created_at, updated_at}, ...] (sorted by path),
     bytes (all files), count, created_at, updated_at}

One document, so a command is one read and one conditional write: `save` replaces the files only if `version` is
still the one read (and bumps it), as the session document of 04 does. Two processes of one user never lose or
mix an edit: the second writer's update matches nothing, re-reads, and runs its command again on the new files
(helpers/memory_tool/backend.py). A directory rename moves every file in one write; the per-user limits are
checked on the whole directory at once. The cost: every command reads the user's whole memory, which the per-user
limit (MEMORY_TOOL_MAX_USER_BYTES, 1 MiB by default, at most 8 MiB: under MongoDB's 16 MB document limit) keeps
small.

Collection `memory_audit`, one document per write command (index `user_at` on user_id, at): who (user_id,
session_id, turn), when (at), what (command, and each path named by a hash: `path_id`), the outcome ("ok",
"refused", or "refused_path" for a path outside /memories or a traversal form, which is also recorded for `view`),
and the sizes and version after it. The entry of a saved write is written in the same update as the files it
describes (pushed to the document's `pending_audit`), so no kill can keep one without the other; `flush` then
copies it into `memory_audit` (same `_id`, so a second copy is refused) and pulls it from the document, and every
later save or trail flushes what a killed process left there. The audit holds no file text, no file name (a
card number in a name is text) and no error text (an error repeats the model's `old_str`): the file is the one copy
of what was written, so erasing it erases it. `forget_user` (helpers/memory/forget.py) deletes both collections'
documents of a user with everything else.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from helpers.db.checks import check_id, now_ms
from helpers.memory_tool.commands import MemoryFile

__all__ = ["FILES", "AUDIT", "MemoryFiles", "path_id"]

FILES = "memory_files"
AUDIT = "memory_audit"


def path_id(user_id: str, path: str) -> str:
    """How the audit names a file: a hash of the user and the path as given, never its text."""
    return "sha256:" + hashlib.sha256(f"{user_id}\0{path}".encode("utf-8", "surrogatepass")).hexdigest()[:20]


class MemoryFiles:
    """The `memory_files` and `memory_audit` collections of a store's database: load, guarded save, audit."""

    def __init__(self, db: Any):
        self.db = db
        self.files = db[FILES]
        self.audit_log = db[AUDIT]
        self.files.create_index([("user_id", ASCENDING)], unique=True, name="user")
        self.audit_log.create_index([("user_id", ASCENDING), ("at", ASCENDING)], name="user_at")

    def load(self, user_id: str) -> tuple[int, list[MemoryFile]]:
        """(version, files) of `user_id`; (0, []) when the user has no memory document yet."""
        doc = self.files.find_one({"user_id": check_id("user_id", user_id)}, {"_id": 0})
        if doc is None:
            return 0, []
        files = [
            MemoryFile(f["path"], f["content"], f.get("created_at"), f.get("updated_at")) for f in doc.get("files", [])
        ]
        return int(doc.get("version", 0)), files

    def save(self, user_id: str, version: int, files: Iterable[MemoryFile], audit: dict | None = None) -> int | None:
        """Store `files` as the user's memory if it is still at `version`, with the `audit` entry of this write in the
        same update (one document write); the new version, or None on conflict."""
        user_id = check_id("user_id", user_id)
        now = now_ms()
        rows = [
            {
                "path": f.path,
                "content": f.content,
                "bytes": f.size,
                "created_at": f.created_at,
                "updated_at": f.updated_at,
            }
            for f in sorted(files, key=lambda f: f.path)
        ]
        fields = {"files": rows, "bytes": sum(r["bytes"] for r in rows), "count": len(rows), "updated_at": now}
        entries = [self._entry(user_id, audit, now)] if audit is not None else []
        if version == 0:
            try:
                self.files.insert_one(
                    {"user_id": user_id, "version": 1, "created_at": now, **fields, "pending_audit": entries}
                )
            except DuplicateKeyError:  # another process created the user's document first
                return None
            saved = 1
        else:
            update = {"$set": fields, "$inc": {"version": 1}}
            if entries:
                update["$push"] = {"pending_audit": {"$each": entries}}
            result = self.files.update_one({"user_id": user_id, "version": version}, update)
            if result.matched_count != 1:
                return None
            saved = version + 1
        return saved

    def flush(self, user_id: str) -> int:
        """Copy the audit entries saved with the files into `memory_audit`, then drop them from the document; how
        many. Idempotent: a copy made before a kill is not made twice (same `_id`)."""
        user_id = check_id("user_id", user_id)
        doc = self.files.find_one({"user_id": user_id}, {"pending_audit": 1})
        pending = (doc or {}).get("pending_audit") or []
        for entry in pending:
            with contextlib.suppress(DuplicateKeyError):
                self.audit_log.insert_one(entry)
        if pending:
            ids = [e["_id"] for e in pending]
            self.files.update_one({"user_id": user_id}, {"$pull": {"pending_audit": {"_id": {"$in": ids}}}})
        return len(pending)

    @staticmethod
    def _entry(user_id: str, entry: dict, at: int | None = None) -> dict:
        return {"_id": ObjectId(), "user_id": user_id, "at": at or now_ms(), **entry}

    def audit(self, user_id: str, entry: dict) -> None:
        """Append one audit entry of a command that saved nothing (a refusal): who, when, what, outcome."""
        self.audit_log.insert_one(self._entry(check_id("user_id", user_id), entry))

    def clear(self, user_id: str, entry: dict) -> None:
        """Delete every file of the user, the audit entry in the same update."""
        user_id = check_id("user_id", user_id)
        fields = {"files": [], "bytes": 0, "count": 0, "updated_at": now_ms()}
        done = self.files.update_one(
            {"user_id": user_id},
            {"$set": fields, "$inc": {"version": 1}, "$push": {"pending_audit": self._entry(user_id, entry)}},
        )
        if done.matched_count == 0:
            self.audit(user_id, entry)

    def trail(self, user_id: str, limit: int = 100) -> list[dict]:
        """The user's newest audit entries, oldest first (without `_id`); entries a killed writer left with its
        files are flushed first."""
        self.flush(user_id)
        rows = (
            self.audit_log.find({"user_id": check_id("user_id", user_id)}, {"_id": 0})
            .sort([("at", -1), ("_id", -1)])
            .limit(limit)
        )
        return list(reversed(list(rows)))
