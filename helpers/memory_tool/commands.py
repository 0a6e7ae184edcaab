"""The six memory commands. Taught in 06_memory_tool, section 'The tool and its six commands'.

The six commands over one user's files, with the documented results and errors.

`MemoryTree` holds a user's files as {path: MemoryFile} and runs one command on them in memory; helpers/memory_tool/
backend.py loads the tree from MongoDB, runs the command, and saves the tree under a version guard. A directory is
the files under it: `create` makes the directories a path needs, and the last file out of a directory takes the
directory with it (the store keeps files, not folders; there is no command to make an empty directory).

Result and error texts, by source. The docs (https://platform.claude.com/docs/en/agents-and-tools/tool-use/
memory-tool, "Tool commands"): every success text; "The path {path} does not exist. Please provide a valid path."
(view); "Error: File {path} already exists" (create, also over a directory); "Error: The path {path} does not
exist. Please provide a valid path." (str_replace, also for a directory); the two "No replacement was performed"
texts; "Error: The path {path} does not exist" (insert, delete, rename); "Error: Invalid `insert_line` parameter:
…"; "Error: The destination {new_path} already exists". The reference handler (anthropic SDK,
`BetaLocalFilesystemMemoryTool`), where the docs give no text: "Cannot delete the /memories directory itself",
"Cannot rename the /memories directory itself", the str_replace snippet's sentence. The text editor tool's
reference (anthropic-quickstarts `tools/edit.py`; the docs say the memory tool follows its error patterns): a
missing parameter, an unknown command, `view_range` on a directory. Ours, each naming what to do: a size limit,
a file in the way of a path, a move into itself, an empty `old_str`, text the store cannot hold.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from anthropic.lib.tools import ToolError

from helpers.memory_tool.paths import ROOT, ancestors, check_path, is_under, shown
from helpers.memory_tool.views import VIEW_CHARS, directory_view, file_view, numbered, split_lines

__all__ = ["COMMANDS", "WRITES", "MemoryFile", "Limits", "MemoryTree", "replace_once"]

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
WRITES = frozenset(COMMANDS[1:])  # every command but view may change the files
_SNIPPET_CONTEXT = 2  # lines shown before and after an edit
_ECHO = 1_000  # characters of a model-given string an error repeats


@dataclass(frozen=True)
class MemoryFile:
    """One memory file: its path, its text, and when it was created and last changed."""

    path: str
    content: str
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def size(self) -> int:
        """Its size in bytes (UTF-8), as the directory listing shows it and the limits count it."""
        return len(self.content.encode("utf-8"))


@dataclass(frozen=True)
class Limits:
    """How much one user's memory may hold (settings MEMORY_TOOL_MAX_FILE_BYTES, MEMORY_TOOL_MAX_USER_BYTES,
    MEMORY_TOOL_MAX_FILES) and how much one `view` of a file shows (MEMORY_TOOL_VIEW_CHARS)."""

    file_bytes: int = 65_536
    user_bytes: int = 1_048_576
    files: int = 256
    view_chars: int = VIEW_CHARS

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        return cls(
            settings.memory_tool_max_file_bytes,
            settings.memory_tool_max_user_bytes,
            settings.memory_tool_max_files,
            settings.memory_tool_view_chars,
        )


def _echo(text: str) -> str:
    return text if len(text) <= _ECHO else text[:_ECHO] + "…"


def _required(params: Mapping[str, Any], name: str, command: str) -> Any:
    if params.get(name) is None:
        raise ToolError(f"Error: Parameter `{name}` is required for command: {command}")
    return params[name]


def _text(params: Mapping[str, Any], name: str, command: str, *, required: bool = True) -> str:
    """A text parameter the store can hold: a str, valid Unicode, no NUL or control characters but tab and newline."""
    value = _required(params, name, command) if required else (params.get(name) or "")
    if not isinstance(value, str):
        raise ToolError(f"Error: Parameter `{name}` must be a string, got {type(value).__name__}")
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n\r"), None)
    if bad is not None:
        raise ToolError(
            f"Error: Parameter `{name}` contains the control character U+{ord(bad):04X}; memory files hold plain text"
        )
    return value


class MemoryTree:
    """One user's memory files, and the six commands on them (each returns the tool's result text or raises
    ToolError; a command that changes files sets `changed`)."""

    def __init__(self, files: Iterable[MemoryFile] = (), limits: Limits | None = None):
        self.files: dict[str, MemoryFile] = {f.path: f for f in files}
        self.limits = limits or Limits()
        self.changed = False

    # -- what is there
    def is_dir(self, path: str) -> bool:
        return path == ROOT or any(is_under(p, path) for p in self.files)

    def exists(self, path: str) -> bool:
        return path in self.files or self.is_dir(path)

    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values())

    def _file_in_the_way(self, path: str) -> None:
        for above in ancestors(path):
            if above in self.files:
                raise ToolError(f"Error: The path {above} is a file, so {path} cannot be created inside it")

    def _fits(self, path: str, content: str, *, new_file: bool) -> None:
        size = len(content.encode("utf-8"))
        if size > self.limits.file_bytes:
            raise ToolError(
                f"Error: {path} would be {size:,} bytes; a memory file holds at most {self.limits.file_bytes:,} bytes "
                "(MEMORY_TOOL_MAX_FILE_BYTES). Keep memory files short: summarise, or split them by topic."
            )
        old = self.files[path].size if path in self.files else 0
        total = self.total_bytes() - old + size
        if size > old and total > self.limits.user_bytes:
            raise ToolError(
                f"Error: The memory directory would hold {total:,} bytes; it holds at most {self.limits.user_bytes:,} "
                "(MEMORY_TOOL_MAX_USER_BYTES). Delete or shorten files that are no longer relevant first."
            )
        if new_file and len(self.files) >= self.limits.files:
            raise ToolError(
                f"Error: The memory directory holds {len(self.files)} files, the most it may "
                "(MEMORY_TOOL_MAX_FILES). Delete or merge files that are no longer relevant first."
            )

    def _put(self, path: str, content: str, now: datetime | None) -> None:
        old = self.files.get(path)
        created = old.created_at if old is not None else now
        self.files[path] = MemoryFile(path, content, created, now)
        self.changed = True

    def _file(self, path: str, missing: str) -> MemoryFile:
        if path not in self.files:
            raise ToolError(missing)
        return self.files[path]

    # -- the six commands
    def view(self, path: str, view_range: Any = None) -> str:
        if path in self.files:
            return file_view(path, self.files[path].content, view_range, self.limits.view_chars)
        if not self.is_dir(path):
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        if view_range is not None:
            raise ToolError("The `view_range` parameter is not allowed when `path` points to a directory.")
        return directory_view(path, {p: f.size for p, f in self.files.items()})

    def create(self, path: str, file_text: str, now: datetime | None = None) -> str:
        if self.exists(path):
            raise ToolError(f"Error: File {path} already exists")
        self._file_in_the_way(path)
        self._fits(path, file_text, new_file=True)
        self._put(path, file_text, now)
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str, now: datetime | None = None) -> str:
        content = self._file(path, f"Error: The path {path} does not exist. Please provide a valid path.").content
        if old_str == "":
            raise ToolError("Error: Parameter `old_str` must not be empty: give the exact text to replace")
        count = content.count(old_str)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{_echo(old_str)}` did not appear verbatim in {path}."
            )
        if count > 1:
            lines, start = [], content.find(old_str)
            while start != -1:
                lines.append(content[:start].count("\n") + 1)
                start = content.find(old_str, start + 1)
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{_echo(old_str)}` in lines: "
                f"{', '.join(map(str, lines))}. Please ensure it is unique"
            )
        at = content.find(old_str)
        new_content = content[:at] + new_str + content[at + len(old_str) :]
        self._fits(path, new_content, new_file=False)
        self._put(path, new_content, now)
        first = content[:at].count("\n")
        last = first + new_str.count("\n")
        lines = split_lines(new_content)
        start, end = max(0, first - _SNIPPET_CONTEXT), min(len(lines), last + _SNIPPET_CONTEXT + 1)
        snippet = "\n".join(numbered(lines[start:end], start + 1))
        return (
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + snippet
        )

    def insert(self, path: str, insert_line: Any, insert_text: str, now: datetime | None = None) -> str:
        content = self._file(path, f"Error: The path {path} does not exist").content
        lines = split_lines(content)
        if not isinstance(insert_line, int) or isinstance(insert_line, bool) or not 0 <= insert_line <= len(lines):
            raise ToolError(
                f"Error: Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines of "
                f"the file: [0, {len(lines)}]"
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        new_content = "\n".join(lines) + "\n"
        self._fits(path, new_content, new_file=False)
        self._put(path, new_content, now)
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        if path == ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        doomed = [p for p in self.files if p == path or is_under(p, path)]
        if not doomed:
            raise ToolError(f"Error: The path {path} does not exist")
        for p in doomed:
            del self.files[p]
        self.changed = True
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str, now: datetime | None = None) -> str:
        if old_path == ROOT:
            raise ToolError("Cannot rename the /memories directory itself")
        if not self.exists(old_path):
            raise ToolError(f"Error: The path {old_path} does not exist")
        if self.exists(new_path):
            raise ToolError(f"Error: The destination {new_path} already exists")
        if is_under(new_path, old_path):
            raise ToolError(f"Error: Cannot move {old_path} inside itself ({new_path}); choose another destination")
        self._file_in_the_way(new_path)
        moved = {p: new_path + p[len(old_path) :] for p in self.files if p == old_path or is_under(p, old_path)}
        for target in moved.values():
            check_path(target, name="new_path")  # a deeper or longer path than the limits allow is refused
        for old, new in moved.items():
            self.files[new] = replace(self.files.pop(old), path=new, updated_at=now)
        self.changed = True
        return f"Successfully renamed {old_path} to {new_path}"

    # -- one command from the model's input
    def run(self, params: Any, now: datetime | None = None) -> str:
        """Run one command given as the tool_use input ({"command": ..., ...}); its result text, or ToolError."""
        if not isinstance(params, Mapping):
            raise ToolError(f"Error: The memory tool's input must be an object, got {type(params).__name__}")
        command = params.get("command")
        if command not in COMMANDS:
            raise ToolError(
                f"Error: Unrecognized command {shown(str(command), 60)}. The allowed commands for the memory tool are: "
                + ", ".join(COMMANDS)
            )
        if command == "rename":
            old = check_path(_required(params, "old_path", command), name="old_path")
            return self.rename(old, check_path(_required(params, "new_path", command), name="new_path"), now)
        path = check_path(_required(params, "path", command))
        if command == "view":
            return self.view(path, params.get("view_range"))
        if command == "create":
            return self.create(path, _text(params, "file_text", command), now)
        if command == "str_replace":
            old_str = _text(params, "old_str", command)
            return self.str_replace(path, old_str, _text(params, "new_str", command, required=False), now)
        if command == "insert":
            line = _required(params, "insert_line", command)
            return self.insert(path, line, _text(params, "insert_text", command), now)
        return self.delete(path)


def replace_once(content: str, old: str, new: str) -> str:
    """`content` with `old` replaced by `new`, when `old` appears exactly once; else ValueError, nothing changed
    (the rule of `str_replace`, without the file: the exercise of 06_memory_tool)."""
    count = content.count(old) if old else 0
    if count != 1:
        raise ValueError(f"old_str {old!r} appears {count} times; it must appear exactly once")
    at = content.find(old)
    return content[:at] + new + content[at + len(old) :]
