"""Plumbing: is the local server's disk full, and what to say when it is: the disk and the data directory by name.

A full disk makes SecantusDB's storage engine (WiredTiger) panic: the server still answers `ping`, but every
command fails with "internal server error" until it is restarted. helpers.db.server's status and start, the
store's failed writes and the terminal chat use `disk_problem` to say so plainly: which directory, on which disk,
how much is free, and what to do.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["LOW_DISK_BYTES", "DISK_FULL_LOG", "mount_point", "free_bytes", "log_mentions_full_disk", "disk_problem"]

LOW_DISK_BYTES = 16 * 1024 * 1024  # below this the storage engine cannot write a log segment's worth: "full"
DISK_FULL_LOG = "No space left on device"  # what WiredTiger writes to the server log on ENOSPC
_HEADER = "--- helpers.db.server:"  # helpers.db.server writes one such line before each start


def _existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (a data dir not made yet lives on its parent's disk)."""
    path = Path(path).expanduser().absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def mount_point(path: str | os.PathLike) -> Path:
    """The mount point of the filesystem (the disk) holding `path`."""
    here = _existing(Path(path))
    device = here.stat().st_dev
    while here.parent != here and here.parent.stat().st_dev == device:
        here = here.parent
    return here


def free_bytes(path: str | os.PathLike) -> int:
    """Bytes free for this user on the disk holding `path`."""
    return shutil.disk_usage(_existing(Path(path))).free


def log_mentions_full_disk(log: str | os.PathLike) -> bool:
    """True when the server log, since its last start, says a write failed for lack of space."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 256_000))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return False
    return DISK_FULL_LOG in text.rsplit(_HEADER, 1)[-1]


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def disk_problem(data_dir: str | os.PathLike, log: str | os.PathLike | None = None) -> str | None:
    """A sentence naming the full disk and the data directory, or None when the disk has room and the log is clean."""
    free, logged = free_bytes(data_dir), bool(log and log_mentions_full_disk(log))
    if free >= LOW_DISK_BYTES and not logged:
        return None
    where = f"the data directory {Path(data_dir).expanduser().absolute()}"
    disk = f"the filesystem mounted at {mount_point(data_dir)}"
    if free < LOW_DISK_BYTES:
        return (
            f"the disk holding {where} is full ({disk} has {_size(free)} free). Free some space on it (or set "
            "GTE_DATA_DIR to a directory on another disk), then restart the local server: "
            "`python -m helpers.db.server stop`, then start"
        )
    return (
        f"the disk holding {where} ran out of space (the server log says '{DISK_FULL_LOG}'; {disk} now has "
        f"{_size(free)} free), and the server cannot write until it restarts: `python -m helpers.db.server stop`, "
        "then start"
    )
