"""Plumbing: the data dir is its owner's only: folders 0700, files 0600 (storage, index files, log, lock, record).

On a shared machine or JupyterHub another local user must read nothing of it, not even a memory kept in an index
file (helpers.retrieval.snapshot). Writers create their folders with `private_dir` and their files with
`private_file`; helpers.db.server tightens a whole existing data dir (`tighten`) before every start, so one made
by an older version, or copied with wider modes, is owner-only again.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "private_dir", "private_file", "tighten", "exposed"]

DIR_MODE = 0o700
FILE_MODE = 0o600


def _chmod_if_ours(path: Path, mode: int, info: os.stat_result) -> None:
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077 | (mode & 0o700))


def private_dir(path: str | os.PathLike) -> Path:
    """Make folder `path` (and missing parents) owner-only: 0700; a folder we own with wider modes is tightened."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)
        _chmod_if_ours(folder, DIR_MODE, folder.stat())  # mkdir's mode is masked by the umask; never widened
    _chmod_if_ours(path, DIR_MODE, path.stat())
    return path


def private_file(path: str | os.PathLike, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """os.open `path` created 0600 (never readable by others, not even for a moment); the descriptor."""
    fd = os.open(path, flags, FILE_MODE)
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        os.fchmod(fd, FILE_MODE)  # an existing file made with wider modes
    return fd


def tighten(data_dir: str | os.PathLike) -> int:
    """Every folder (0700) and file (0600) we own under `data_dir`, and the dir itself, made owner-only; how many
    were changed. Symbolic links are not followed."""
    root = Path(data_dir)
    if not root.exists():
        private_dir(root)
        return 1
    changed = 0
    entries = [(root, DIR_MODE)]
    for folder, dirs, files in os.walk(root, followlinks=False):
        entries += [(Path(folder) / n, DIR_MODE) for n in dirs] + [(Path(folder) / n, FILE_MODE) for n in files]
    for path, mode in entries:
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o077 and info.st_uid == os.geteuid():
            _chmod_if_ours(path, mode, info)
            changed += 1
    return changed


def exposed(data_dir: str | os.PathLike) -> list[str]:
    """Everything under `data_dir` (itself included) that its group or others may read, write or enter."""
    root = Path(data_dir)
    found = [] if not root.exists() or not root.stat().st_mode & 0o077 else [str(root)]
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            with contextlib.suppress(OSError):
                info = path.lstat()
                if not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o077:
                    found.append(f"{oct(stat.S_IMODE(info.st_mode))} {path}")
    return found
