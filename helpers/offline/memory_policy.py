"""Plumbing: the offline model's memory-tool policy: it views, reads and edits `/memories` files like a model using
the memory tool (`memory_20250818`), through the SDK's tool runner, by one generic rule set.

Registered on every offline client (helpers.llm.get_client); it acts on requests that offer the memory tool. It
decides each reply from the request alone (the turn so far: the user's message, the commands it asked for and their
results), so it is deterministic and the tool runner drives it exactly as it drives a live model:

1. **View the directory first** (`view /memories`): the docs say Claude checks its memory directory before it
   starts a task (https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool).
2. **Read before answering or writing**: when the message states or asks something, every file the listing names is
   viewed (several `view` commands in one reply, as parallel tool calls), a cut view paged on with `view_range`.
3. **Write what the user states about themselves**: the facts the offline model's statement reader finds in the
   message (helpers.offline.fact_rules.facts_from_text, the extraction of 05: third-person sentences, no per-phrase
   templates). A fact already in a file is not written again; one that changes a fact in a file replaces that line
   (`str_replace`); the rest are appended to the stand-in's own file, /memories/user.md (`insert` at its end, or
   `create` when it has none). Facts that name a secret the guidance forbids (a password, a key, a card or account
   number) are not written.
4. **Answer only from what it read**: the reply is the offline reader's, from the request's own text plus the lines
   of the files viewed in this turn (tool traffic itself is not read as statements).
5. **A file the system prompt already shows is read**: an application that pins a memory file into the system
   prompt (`<memory_file path="/memories/...">`, numbered lines as `view` shows them: further/07_platform_memory)
   has given the model its text: the policy does not view it again, and edits it like a file it viewed.

These are the stand-in's choices (one file, one fact per line, always reading everything): a live model decides
its own commands, files and words. Errors from the tool (`is_error`) end the writing: the policy answers instead of
retrying. With `tool_choice: {"type": "none"}` (the stage's last request) it answers at once.
"""

from __future__ import annotations

import hashlib
import json
import re

from helpers.offline.beta import MEMORY, Behaviour, Reply
from helpers.offline.fact_rules import clash, facts_from_text, repeats
from helpers.offline.language import sentences
from helpers.offline.reader import is_question
from helpers.offline.reply import chat_reply

__all__ = ["MemoryPolicy", "OWN_FILE", "MAX_FILES_READ", "MAX_PAGES", "turn_so_far", "file_lines", "listed_files"]

ROOT = "/memories"
OWN_FILE = "/memories/user.md"  # where the stand-in appends what the user states
MAX_FILES_READ = 8  # files viewed per turn (the rest stay unread: the listing still names them)
MAX_PAGES = 4  # views of one file per turn (a cut view is paged on with view_range)
SECRET = re.compile(
    r"(?i)\b(?:pass(?:word|code|phrase)|pin(?: code)?|api key|secret key|private key|access key|security code|"
    r"(?:credit|debit|bank) card(?: number)?|card number|account number|iban|social security number|cvv)\b"
)
_LINE = re.compile(r"^\s*(\d+)\t(.*)$")
_LISTED = re.compile(r"^\S+\t(/memories/\S.*?)$")
_WRITES = ("create", "str_replace", "insert", "delete", "rename")
_PINNED = re.compile(r'<memory_file path="(/memories/[^"]+)">\n(.*?)</memory_file>', re.S)
_CONTINUES = re.compile(r"view them with view_range \[(\d+), (-?\d+)\]\]\s*$")


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _is_user_text(message: dict) -> bool:
    content = message["content"]
    if isinstance(content, str):
        return True
    return any(isinstance(b, dict) and b.get("type") == "text" for b in content)


def turn_so_far(messages: list[dict], tool: str) -> tuple[int, list[tuple[dict, str, bool]]]:
    """(index of the user's message that opened this turn, [(command input, result text, is_error)] since then)."""
    start = max((i for i, m in enumerate(messages) if m["role"] == "user" and _is_user_text(m)), default=0)
    results: dict[str, tuple[str, bool]] = {}
    asked: list[tuple[str, dict]] = []
    for m in messages[start + 1 :]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use" and b.get("name") == tool:
                asked.append((b["id"], b.get("input") or {}))
            elif b.get("type") == "tool_result":
                inner = b.get("content", "")
                results[b.get("tool_use_id")] = (_text_of(inner), bool(b.get("is_error")))
    return start, [(params, *results.get(i, ("", True))) for i, params in asked]


def listed_files(listing: str) -> list[str]:
    """The file paths of a directory view (directories end with "/" and are left out)."""
    found = []
    for line in listing.splitlines():
        m = _LISTED.match(line)
        if m and not m.group(1).endswith("/"):
            found.append(m.group(1))
    return found


def file_lines(view: str) -> list[tuple[int, str]]:
    """(line number, text) of every numbered line of a file view."""
    return [(int(m.group(1)), m.group(2)) for m in map(_LINE.match, view.splitlines()[1:]) if m]


class MemoryPolicy(Behaviour):
    """The offline model's memory-tool policy (see the module docstring): a `Behaviour` for MEMORY requests."""

    feature = MEMORY

    def respond(self, body: dict, default: Reply) -> Reply:
        tool = next(t.get("name", "memory") for t in body["tools"] if t.get("type") == "memory_20250818")
        choice = (body.get("tool_choice") or {}).get("type")
        if choice == "tool" and body["tool_choice"].get("name") != tool:
            return default  # another tool is forced: not a memory step
        messages = body["messages"]
        start, done = turn_so_far(messages, tool)
        said = _text_of(messages[start]["content"]) if messages and messages[start]["role"] == "user" else ""
        read = {**self._pinned(body), **self._read(done)}
        if choice != "none":
            step = self._next_step(said, done, read)
            if step:
                return self._commands(body, tool, step, len(done))
        return self._answer(body, start, read, default)

    # -- what to do next
    def _next_step(self, said: str, done: list, read: dict[str, list[tuple[int, str]]]) -> list[dict]:
        if not done:
            return [{"command": "view", "path": ROOT}]
        if any(p.get("command") in _WRITES for p, _, _ in done):
            return []  # one round of writes per turn, whatever its results: then the answer
        listing = next((r for p, r, err in done if p == {"command": "view", "path": ROOT} and not err), None)
        if listing is None:
            return []  # the directory could not be viewed: answer from the conversation
        facts = self._facts(said)
        if facts or any(is_question(s) for s in sentences(said)):
            files = listed_files(listing)
            files = ([OWN_FILE] if OWN_FILE in files else []) + [f for f in files if f != OWN_FILE]
            files = [f for f in files if f not in read]  # a pinned file is read already
            if files and not any(p.get("command") == "view" and p.get("path") != ROOT for p, _, _ in done):
                return [{"command": "view", "path": f} for f in files[:MAX_FILES_READ]]
            more = self._pages(done)
            if more:
                return more
        return self._writes(facts, read) if facts else []

    @staticmethod
    def _facts(said: str) -> list[str]:
        return [f for f in dict.fromkeys(facts_from_text(said, "user")) if not SECRET.search(f)]

    @staticmethod
    def _pinned(body: dict) -> dict[str, list[tuple[int, str]]]:
        """The memory files the system prompt shows (pinned by the application): their numbered lines."""
        system = body.get("system") or ""
        system = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)
        return {path: file_lines("\n" + text) for path, text in _PINNED.findall(system)}

    @staticmethod
    def _read(done: list) -> dict[str, list[tuple[int, str]]]:
        """Each file viewed this turn: its numbered lines (pages joined, in order)."""
        read: dict[str, dict[int, str]] = {}
        for params, result, err in done:
            if params.get("command") == "view" and params.get("path") != ROOT and not err:
                read.setdefault(params["path"], {}).update(file_lines(result))
        return {path: sorted(lines.items()) for path, lines in read.items()}

    @staticmethod
    def _pages(done: list) -> list[dict]:
        """The next page of every cut file view (at most MAX_PAGES views of one file)."""
        out = []
        for params, result, err in done:
            m = _CONTINUES.search(result) if not err and params.get("command") == "view" else None
            if not m:
                continue
            wanted = [int(m.group(1)), int(m.group(2))]
            path = params["path"]
            views = [p for p, _, _ in done if p.get("command") == "view" and p.get("path") == path]
            if len(views) < MAX_PAGES and not any(p.get("view_range") == wanted for p in views):
                out.append({"command": "view", "path": path, "view_range": wanted})
        return out

    @staticmethod
    def _writes(facts: list[str], read: dict[str, list[tuple[int, str]]]) -> list[dict]:
        """str_replace for a fact that changes a line of a file read, one insert (or create) for the new ones."""
        lines = [(path, text) for path, numbered in read.items() for _, text in numbered]
        commands, new = [], []
        for fact in facts:
            if repeats(fact, [text for _, text in lines]):
                continue
            old = next(((path, text) for path, text in lines if text.strip() and clash(fact, text.strip())), None)
            if old is not None:
                commands.append({"command": "str_replace", "path": old[0], "old_str": old[1], "new_str": fact})
                lines = [(p, fact if (p, t) == old else t) for p, t in lines]
            else:
                new.append(fact)
        if new and OWN_FILE in read:
            end = max((n for n, _ in read[OWN_FILE]), default=0)
            commands.append({"command": "insert", "path": OWN_FILE, "insert_line": end, "insert_text": "\n".join(new)})
        elif new:
            commands.append({"command": "create", "path": OWN_FILE, "file_text": "\n".join(new) + "\n"})
        return commands

    # -- the replies
    @staticmethod
    def _commands(body: dict, tool: str, step: list[dict], seen: int) -> Reply:
        digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True, default=str).encode()).hexdigest()[:16]
        blocks = [
            {"type": "tool_use", "id": f"toolu_offline_{digest}_{seen + k}", "name": tool, "input": params}
            for k, params in enumerate(step)
        ]
        return Reply(blocks, "tool_use")

    @staticmethod
    def _answer(body: dict, start: int, read: dict[str, list[tuple[int, str]]], default: Reply) -> Reply:
        """The offline reader's reply from the conversation's text and the lines of the files read this turn."""
        turns = [
            (m["role"], _text_of(m["content"])) for m in body["messages"][: start + 1] if _text_of(m["content"]).strip()
        ]
        system = body.get("system") or ""
        system = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)
        lines = [text for numbered in read.values() for _, text in numbered if text.strip()]
        if lines:
            system += "\n\n<remembered_memories>\n" + "\n".join(lines) + "\n</remembered_memories>"
        if not turns or turns[-1][0] != "user":
            return default
        return Reply([{"type": "text", "text": chat_reply(system, turns)}], "end_turn", chat=True)
