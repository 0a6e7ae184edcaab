"""What `view` shows. Taught in 06_memory_tool, section 'The tool and its six commands'.

A file with numbered lines (paged by `view_range`, cut to a size), a directory listing two levels deep with sizes.

Formats from the docs (https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool, "view"):
"Here's the content of {path} with line numbers:" then each line as its number right-aligned in 6 characters, a
tab and the line; "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and
node_modules:" then "{size}\\t{path}" lines, human-readable sizes, the directory itself first (an empty
`/memories` is that one line, not an error). The `view_range` errors are the text editor tool's (the docs say the
memory tool follows its error patterns; texts from its reference implementation, anthropic-quickstarts
computer-use-demo `tools/edit.py`). The 16,000-character cut is what the tool's description tells the model
(the docs, "view"); the note after a cut, naming the range to view next, is ours.

Choices the docs leave open, stated: a file's lines are its text split at "\\n", without the empty line a final
newline would add (so `view` and `insert` count the same lines); a directory's size is the sum of the files in it
(a directory here is only the files under it: there is no empty directory); items are listed depth-first, by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anthropic.lib.tools import ToolError

__all__ = [
    "NUMBER_WIDTH",
    "MAX_LINES",
    "VIEW_CHARS",
    "split_lines",
    "numbered",
    "human_size",
    "file_view",
    "directory_view",
    "check_view_range",
]

NUMBER_WIDTH = 6  # line numbers right-aligned in 6 characters (the docs)
MAX_LINES = 999_999  # a file with more lines is refused by `view` (the docs)
VIEW_CHARS = 16_000  # a file view is cut after this many characters (the tool's description, per the docs)
_HIDDEN = "node_modules"


def split_lines(content: str) -> list[str]:
    """The lines of a file: `content` split at "\\n", the empty tail of a final newline dropped ("" has none)."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def numbered(lines: list[str], start: int = 1) -> list[str]:
    """Each line as `{number:>6}\\t{line}`, numbering from `start`."""
    return [f"{str(i).rjust(NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines, start)]


def human_size(n: int) -> str:
    """A size as `du -h` writes it: `512B`, `1.5K`, `2.0K`, `12K`, `1.2M`."""
    if n < 1024:
        return f"{n}B"
    value = float(n)
    for unit in "KMGT":
        value /= 1024
        if value < 1024 or unit == "T":
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    raise AssertionError("unreachable")


def check_view_range(view_range: Any, n_lines: int) -> tuple[int, int]:
    """(first, last) line numbers, 1-based and inclusive, or ToolError with the text editor tool's message."""
    if (
        not isinstance(view_range, (list, tuple))
        or len(view_range) != 2
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in view_range)
    ):
        raise ToolError("Invalid `view_range`. It should be a list of two integers.")
    first, last = view_range
    shown = list(view_range)
    if first < 1 or first > n_lines:
        raise ToolError(
            f"Invalid `view_range`: {shown}. Its first element `{first}` should be within the range of lines of the "
            f"file: {[1, n_lines]}"
        )
    if last > n_lines:
        raise ToolError(
            f"Invalid `view_range`: {shown}. Its second element `{last}` should be smaller than the number of lines "
            f"in the file: `{n_lines}`"
        )
    if last != -1 and last < first:
        raise ToolError(
            f"Invalid `view_range`: {shown}. Its second element `{last}` should be larger or equal than its first "
            f"`{first}`"
        )
    return first, n_lines if last == -1 else last


def file_view(path: str, content: str, view_range: Any = None, max_chars: int = VIEW_CHARS) -> str:
    """`view` of a file: the header and its numbered lines (those of `view_range`), cut after `max_chars`."""
    lines = split_lines(content)
    if len(lines) > MAX_LINES:
        raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
    first, last = (1, len(lines)) if view_range is None else check_view_range(view_range, len(lines))
    shown, used = [], 0
    for row in numbered(lines[first - 1 : last], first):
        if shown and used + len(row) + 1 > max_chars:
            break
        shown.append(row)
        used += len(row) + 1
    text = f"Here's the content of {path} with line numbers:\n" + "\n".join(shown)
    end = first + len(shown) - 1
    if end < last:
        text += (
            f"\n[{path} continues: lines {end + 1}-{last} are not shown (a view shows at most {max_chars:,} "
            f"characters); view them with view_range [{end + 1}, {last if last < len(lines) else -1}]]"
        )
    return text


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == _HIDDEN


def directory_view(path: str, sizes: Mapping[str, int]) -> str:
    """`view` of directory `path`: every item two levels deep under it, each with its size (a directory's: the
    files under it). `sizes` maps each file path under `path` to its size in bytes."""
    prefix = path + "/"
    tree: dict = {}  # name -> subtree (a directory) or None (a file)
    for file_path in sizes:
        if not file_path.startswith(prefix):
            continue
        node = tree
        parts = file_path[len(prefix) :].split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = None

    def size(rel: str) -> int:
        full = prefix + rel
        return sizes[full] if full in sizes else sum(n for p, n in sizes.items() if p.startswith(full + "/"))

    lines = [f"{human_size(sum(n for p, n in sizes.items() if p.startswith(prefix)))}\t{path}"]

    def walk(node: dict, rel: str, depth: int) -> None:
        for name in sorted(node):
            if _hidden(name):
                continue
            item = f"{rel}/{name}" if rel else name
            if node[name] is None:
                lines.append(f"{human_size(size(item))}\t{prefix}{item}")
            else:
                lines.append(f"{human_size(size(item))}\t{prefix}{item}/")
                if depth < 2:
                    walk(node[name], item, depth + 1)

    walk(tree, "", 1)
    header = (
        f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:"
    )
    return header + "\n" + "\n".join(lines)
