"""`MongoMemoryTool`, the memory tool on MongoDB. Taught in 06_memory_tool, section 'The tool and its six commands'.

The platform's memory tool (`memory_20250818`) with each user's `/memories` in MongoDB: a `BetaAbstractMemoryTool`
the SDK's tool runner calls.

One command, start to end: check its paths (a refusal is audited) → load the user's files (helpers/memory_tool/
storage.py) → run the command on them in memory (helpers/memory_tool/commands.py: the documented texts) → if it
changed files, save them with the write's audit entry in one update under the version guard, re-running the command
on the newer files after a conflict (another process of the same user wrote in between) → return the text, passed through the ONE
sanitiser every memory read back into a request passes (`helpers.prompts.neutralise_tags`, the same one that cleans
the summary and memory blocks): a poisoned file cannot close a block tag. Errors go back to the model as
`ToolError`s (the runner sends them with `is_error: true`). A failing database is not the model's to handle: the
tool answers "the memory store did not answer", keeps the error in `failure`, and the chat stage ends the turn
with it (helpers/memory_tool/stage.py).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError

from helpers.config import Settings, load_settings
from helpers.db.checks import check_id, now_ms
from helpers.memory_tool.commands import COMMANDS, WRITES, Limits, MemoryFile, MemoryTree
from helpers.memory_tool.paths import ROOT, ancestors, check_path, shown
from helpers.memory_tool.storage import MemoryFiles, path_id
from helpers.prompts import letter_skeleton, neutralise_tags

__all__ = ["MongoMemoryTool"]

MAX_ATTEMPTS = 20  # version-guard retries of one command before it gives up (then the store is too busy)
_PATH_PARAMS = ("path", "old_path", "new_path")


def same_paths(params: Any, files: list[MemoryFile]) -> Any:
    """`params` with each path that reads like an existing file or folder (`/memories/noтes.md`, Cyrillic т, for
    `/memories/notes.md`) replaced by that one: two paths that read alike are the same path."""
    if not isinstance(params, Mapping) or not files:
        return params
    known: dict[str, str] = {}
    for f in files:
        for path in (*ancestors(f.path), f.path):
            known.setdefault(letter_skeleton(path), path)
    exact = set(known.values())
    out = dict(params)
    for name in _PATH_PARAMS:
        value = out.get(name)
        if isinstance(value, str) and (path := check_path(value, name=name)) != ROOT:
            current = ROOT
            for segment in path[len(ROOT) + 1 :].split("/"):  # folder by folder: `pʟans/b.md` goes into `plans/`
                current = f"{current}/{segment}"
                if current not in exact:
                    current = known.get(letter_skeleton(current), current)
            out[name] = current
    return out


class MongoMemoryTool(BetaAbstractMemoryTool):
    """The memory tool on MongoDB for one user: pass it in `tools=[...]` of `client.beta.messages.tool_runner`.

    `context` ({"session_id", "turn"}) says who is writing, for the audit; the chat stage sets it each turn.
    `commands` lists what ran since the last `reset()` (command, paths, ok: never file text).
    """

    def __init__(
        self,
        store: Any,
        user_id: str,
        *,
        settings: Settings | None = None,
        limits: Limits | None = None,
        sanitise: Callable[[str], str] = neutralise_tags,
        cache_control: Any = None,
    ):
        super().__init__(cache_control=cache_control)
        self.store = store
        self.user_id = check_id("user_id", user_id)
        self.limits = limits or Limits.from_settings(settings or load_settings())
        self.storage = MemoryFiles(store.db)
        self.sanitise = sanitise
        self.context: dict = {}
        self.commands: list[dict] = []
        self.failure: BaseException | None = None
        self.conflicts = 0  # version-guard conflicts met (another process wrote first)

    def reset(self) -> None:
        """Forget the commands and the failure of the last turn (the stage calls it before each turn)."""
        self.commands, self.failure = [], None

    # -- what the SDK calls
    def call(self, input: object) -> str:
        """Run one tool_use input; the sanitised result text, or ToolError (the runner marks it `is_error`)."""
        try:
            return self.sanitise(self.run(input))
        except ToolError as err:
            raise ToolError(self.sanitise(str(err))) from None
        except Exception as err:  # noqa: BLE001 - the database failed: the model cannot fix that, the turn ends
            self.failure = err
            raise ToolError(
                "Error: The memory store did not answer, so this command did not run; do not retry it now."
            ) from None

    def _typed(self, command: Any) -> str:
        return self.call(command.to_dict() if hasattr(command, "to_dict") else dict(command))

    view = create = str_replace = insert = delete = rename = _typed  # the SDK's typed entry points (execute())

    def clear_all_memory(self) -> str:
        """Delete every memory file of this user (audited); the SDK's name for it."""
        self.storage.clear(self.user_id, self._entry({"command": "clear_all_memory", "path": "/memories"}, "ok", None))
        self.storage.flush(self.user_id)
        return "All memory cleared"

    # -- one command
    def run(self, params: Any) -> str:
        """Run one command on this user's files, saved under the version guard; the result text (unsanitised)."""
        command = params.get("command") if isinstance(params, Mapping) else None
        if not isinstance(command, str):  # a list or an object: the model's mistake, not the database's
            self._record({}, False)
            raise ToolError(
                f"Error: Parameter `command` must be a string, one of: {', '.join(COMMANDS)}; got {shown(repr(command), 60)}"
            )
        for name in _PATH_PARAMS if command in COMMANDS else ():
            if isinstance(params, Mapping) and params.get(name) is not None:
                try:
                    check_path(params[name], name=name)
                except ToolError:
                    self._record(params, False)
                    self._audit(params, "refused_path", None)
                    raise
        for attempt in range(MAX_ATTEMPTS):
            version, files = self.storage.load(self.user_id)
            tree = MemoryTree(files, self.limits)
            try:
                text = tree.run(same_paths(params, files), now_ms())
            except ToolError:
                self._record(params, False)
                if command in WRITES:
                    self._audit(params, "refused", None)
                raise
            if not tree.changed:
                self._record(params, True)
                return text
            entry = self._entry(params, "ok", (version + 1, tree))
            saved = self.storage.save(self.user_id, version, tree.files.values(), entry)  # files and audit: one write
            if saved is not None:
                self._record(params, True)
                try:
                    self.storage.flush(self.user_id)
                except Exception as err:  # noqa: BLE001 - the write and its audit are saved; the stage ends the turn
                    self.failure = err
                return text
            self.conflicts += 1  # another process wrote first: run the command again on its files
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
        raise ToolError(
            f"Error: The memory store is busy (the files changed {MAX_ATTEMPTS} times while this command ran); "
            "try the command again"
        )

    def _record(self, params: Any, ok: bool) -> None:
        entry = {"command": params.get("command") if isinstance(params, Mapping) else None, "ok": ok}
        for name in _PATH_PARAMS:
            if isinstance(params, Mapping) and isinstance(params.get(name), str):
                entry[name] = shown(params[name])
        self.commands.append(entry)

    def _audit(self, params: Any, outcome: str, saved: tuple[int, MemoryTree] | None) -> None:
        self.storage.audit(self.user_id, self._entry(params, outcome, saved))

    def _entry(self, params: Any, outcome: str, saved: tuple[int, MemoryTree] | None) -> dict:
        """The audit entry of one command: who, what (paths by their hash), outcome, sizes after a save."""
        params = params if isinstance(params, Mapping) else {}
        entry: dict = {
            "session_id": self.context.get("session_id"),
            "turn": self.context.get("turn"),
            "command": shown(str(params.get("command")), 40),
            "outcome": outcome,
        }
        for name in _PATH_PARAMS:
            if params.get(name) is not None:
                entry[name] = path_id(self.user_id, str(params[name]))
        if saved is not None:
            version, tree = saved
            entry.update(version=version, files=len(tree.files), bytes=tree.total_bytes())
            target = params.get("path")
            if isinstance(target, str) and check_path(target) in tree.files:
                entry["file_bytes"] = tree.files[check_path(target)].size
        return entry

    # -- for displays, notebooks and tests
    def files(self) -> list[MemoryFile]:
        """This user's memory files, by path."""
        return sorted(self.storage.load(self.user_id)[1], key=lambda f: f.path)

    def read(self, path: str) -> str:
        """The stored text of one file (as written: unsanitised; KeyError if there is none)."""
        wanted = check_path(path)
        for f in self.storage.load(self.user_id)[1]:
            if f.path == wanted:
                return f.content
        raise KeyError(f"{self.user_id!r} has no memory file {wanted}")

    def trail(self, limit: int = 100) -> list[dict]:
        """This user's newest audit entries, oldest first."""
        return self.storage.trail(self.user_id, limit)
