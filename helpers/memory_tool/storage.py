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
session_id, turn), when (at), what (command, path, new_path), the outcome ("ok", "refused", or "refused_path" for a
path outside /memories or a traversal form, which is also recorded for `view`), and the sizes and version after
it. It holds no file text and no error text (an error repeats the model's `old_str`): the file is the one copy of
what was written, so erasing it erases it; a hash of a short secret could be guessed, so there is none either.
`forget_user` (helpers/memory/forget.py) deletes both collections' documents of a user with everything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from helpers.db.checks import check_id, now_ms
from helpers.memory_tool.commands import MemoryFile

__all__ = ["FILES", "AUDIT", "MemoryFiles"]

FILES = "memory_files"
AUDIT = "memory_audit"


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

    def save(self, user_id: str, version: int, files: Iterable[MemoryFile]) -> int | None:
        """Store `files` as the user's memory if it is still at `version`; the new version, or None on conflict."""
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
        if version == 0:
            try:
                self.files.insert_one({"user_id": user_id, "version": 1, "created_at": now, **fields})
            except DuplicateKeyError:  # another process created the user's document first
                return None
            return 1
        result = self.files.update_one(
            {"user_id": user_id, "version": version}, {"$set": fields, "$inc": {"version": 1}}
        )
        return version + 1 if result.matched_count == 1 else None

    def audit(self, user_id: str, entry: dict) -> None:
        """Append one audit entry (who, when, what, outcome: never file text) for `user_id`."""
        self.audit_log.insert_one({"user_id": check_id("user_id", user_id), "at": now_ms(), **entry})

    def trail(self, user_id: str, limit: int = 100) -> list[dict]:
        """The user's newest audit entries, oldest first (without `_id`)."""
        rows = (
            self.audit_log.find({"user_id": check_id("user_id", user_id)}, {"_id": 0})
            .sort([("at", -1), ("_id", -1)])
            .limit(limit)
        )
        return list(reversed(list(rows)))
