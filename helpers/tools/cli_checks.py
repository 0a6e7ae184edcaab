"""Plumbing: check every terminal-chat argument and setting before anything is written; errors are one line naming it."""

from __future__ import annotations

import argparse
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from helpers.config import Settings
from helpers.memory import EmptyMessageError, check_user_text
from helpers.offline import FaultPlan
from helpers.prompts import invisible

__all__ = ["UsageError", "OneLineParser", "terminal_safe", "positive_int", "check_args", "MAX_TOKENS_ARG", "MAX_FAULTS"]

MAX_TOKENS_ARG = 1_000_000_000  # far above any context window; stops absurd values before they reach the database
MAX_ID_CHARS = 256
MAX_SESSION_FILE_BYTES = 4096  # a session file holds one id and a newline
MAX_FAULTS = 10_000  # GTE_OFFLINE_FAULTS "500xN": N is a test knob, not a way to fill memory
_DIGITS = re.compile(r"\+?[0-9]+")


def terminal_safe(text: str) -> str:
    """`text` with every control character but line breaks and tabs written out as `\\u001b` (valid in JSON too):
    stored text (a memory, a reply quoting one) never sets the terminal's title or clears its screen."""
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cc" and c not in "\n\t" else c for c in text)


class UsageError(ValueError):
    """A command-line argument or setting the chat cannot use; the message names it."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with a single `error: ...` line (naming the argument) instead of usage plus message."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """As argparse, but `--budget=--` is an error: argparse (3.11-3.12) drops a value of "--" and leaves an
        empty list, which would silently mean "not given"."""
        parsed = super().parse_args(args, namespace)
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            if (
                action.option_strings
                and action.nargs is None
                and isinstance(value, list)
                and not isinstance(action.default, list)
            ):
                self.error(f"argument {'/'.join(action.option_strings)}: expected one argument, got '--'")
        return parsed


def positive_int(text: str) -> int:
    """An argparse type: a whole number from 1 to MAX_TOKENS_ARG, written in plain digits."""
    value = text.strip()
    if not _DIGITS.fullmatch(value) or not 1 <= int(value) <= MAX_TOKENS_ARG:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_TOKENS_ARG:,}, got {text!r}")
    return int(value)


positive_int.__name__ = "positive whole number"  # argparse names the type in its message


def _check_text(flag: str, value: str | None, *, max_chars: int | None = None) -> None:
    """Non-blank, valid Unicode, no control characters (a NUL or a lone surrogate never reaches the database)."""
    if value is None:
        return
    if not value.strip():
        raise UsageError(f"{flag} must not be empty")
    bad = [c for c in value if unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n\r"]
    if bad or "\x00" in value:
        raise UsageError(f"{flag} contains control characters or undecodable bytes ({bad[0]!r}); remove them")
    if max_chars is not None and len(value) > max_chars:
        raise UsageError(f"{flag} is {len(value):,} characters long; use at most {max_chars}")


def _check_id(flag: str, value: str) -> str:
    """The id in NFKC form (fullwidth `ａｌｉｃｅ` is `alice`: one person is one user); spaces and invisible
    characters (`alice\u200b` would be another user who reads the same) are refused."""
    _check_text(flag, value, max_chars=MAX_ID_CHARS)
    if any(c.isspace() for c in value.strip()) or value != value.strip():
        raise UsageError(f"{flag} must not contain spaces, got {value!r}")
    hidden = [c for c in value if invisible(c)]
    if hidden:
        raise UsageError(f"{flag} contains an invisible character (U+{ord(hidden[0]):04X}), got {value!r}; remove it")
    normal = unicodedata.normalize("NFKC", value)
    if any(c.isspace() for c in normal) or any(invisible(c) for c in normal):
        raise UsageError(f"{flag} must not contain spaces or invisible characters, got {value!r}")
    return normal


def _writable_parent(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` if it is not a directory (so nothing could be created there)."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def _check_session_file(flag: str, value: str) -> None:
    try:
        path = Path(value).expanduser()
        if path.is_dir():
            raise UsageError(f"{flag} {value!r} is a directory; give a file path (e.g. {path / '.session_id'})")
        if path.exists():
            if not path.is_file():
                raise UsageError(f"{flag} {value!r} is not a regular file")
            if path.stat().st_size > MAX_SESSION_FILE_BYTES:  # refused by its size: never read whole
                raise UsageError(
                    f"{flag} {value!r} is {path.stat().st_size:,} bytes: not a session file (it holds one id, "
                    f"{MAX_SESSION_FILE_BYTES:,} bytes at most); give the path of one, or of a new file"
                )
            text = path.read_text(encoding="utf-8").strip()
            if text and (len(text) > MAX_ID_CHARS or any(c.isspace() or not c.isprintable() for c in text)):
                raise UsageError(
                    f"{flag} {value!r} does not hold a session id (the chat writes one line, the id), so it is not a "
                    "session file; give the path of one, or of a new file to start a new session"
                )
            return
        blocker = _writable_parent(path)
        if blocker is not None:
            raise UsageError(f"{flag} {value!r} cannot be created: {blocker} is not a directory")
    except UsageError:
        raise
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, a NUL in the path
        raise UsageError(f"{flag} {value!r} cannot be used: {err}") from None


def _check_data_dir(settings: Settings) -> None:
    path = Path(settings.data_dir)
    if path.exists() and not path.is_dir():
        raise UsageError(f"GTE_DATA_DIR={str(path)!r} is not a directory; point GTE_DATA_DIR at a directory")
    blocker = _writable_parent(path)
    if blocker is not None:
        raise UsageError(f"GTE_DATA_DIR={str(path)!r} cannot be created: {blocker} is not a directory")


def _check_faults(env: Mapping[str, str]) -> None:
    """GTE_OFFLINE_FAULTS parses, and asks for a sane number of faults (counted before the plan is built)."""
    spec = (env.get("GTE_OFFLINE_FAULTS") or "").strip()
    if not spec:
        return
    shown = f"GTE_OFFLINE_FAULTS={spec[:60]!r}"
    counts = [item.partition("x")[2] for item in spec.replace(" ", "").split(",") if item]
    if any(times not in ("", "*") and not (times.isascii() and times.isdigit()) for times in counts):
        raise UsageError(f"{shown} is not a fault plan: repeat counts are whole numbers, e.g. '529x2,429'")
    if sum(int(times) for times in counts if times.isdigit()) > MAX_FAULTS:
        raise UsageError(f"{shown} asks for more than {MAX_FAULTS:,} faults")
    try:
        FaultPlan.parse(spec)
    except ValueError as err:
        raise UsageError(f"{shown} is not a fault plan ({err}); e.g. '529x2,429'") from None


def check_args(
    args: argparse.Namespace,
    settings: Settings,
    persistent: bool,
    read_import: Callable[[str], list[dict]],
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Raise UsageError naming the first unusable argument or setting; return what was read (the --import turns)."""
    _check_faults(os.environ if env is None else env)
    args.user = _check_id("--user", args.user)
    _check_text("--system", args.system)
    if getattr(args, "forget_user", None) is not None:  # needs the store, whatever the stage
        args.forget_user = _check_id("--forget-user", args.forget_user)
        if not settings.mongodb_uri:
            _check_data_dir(settings)
        return {}
    if args.show_request is not None:
        try:
            check_user_text(args.show_request)
        except EmptyMessageError as err:
            raise UsageError(f"--show-request: {err}") from None
    if not persistent:
        return {}
    _check_session_file("--session-file", args.session_file)
    if not settings.mongodb_uri:
        _check_data_dir(settings)
    if not args.import_file:
        return {}
    path = Path(args.import_file)
    if not path.is_file():
        raise UsageError(f"--import {args.import_file!r}: no such file")
    try:
        return {"turns": read_import(args.import_file)}
    except SystemExit as err:  # the reader's own message names the line
        raise UsageError(f"--import: {err.code}") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"--import {args.import_file!r} cannot be read: {err}") from None
