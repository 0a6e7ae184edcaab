"""Tools: after JupyterLab saves a notebook whose only changes are a run's outputs, `git status` stays clean.

`run.py setup` registers nbstripout as the clone's clean filter, so what git stores never holds outputs, execution
counts or kernel details. Yet `git status` reports a tracked file as modified as soon as its *size* differs from the
size recorded in the index, without asking the filter (git's fast path). `run.py lab` passes `after_save` as the
server's post-save hook: when the filtered notebook equals what the index holds, it refreshes that one index entry
(`git update-index`), which records the new size and changes no content. A real edit (a changed cell) is left
alone and shows up in `git status` as it should; nothing is ever staged.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

__all__ = ["after_save", "refresh_if_only_outputs"]


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def refresh_if_only_outputs(path: str | Path) -> bool:
    """True if `path` (a tracked notebook) filters to exactly its index entry and git now records it as clean."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        return False
    folder, name = path.parent, path.name
    if _git(folder, "config", "--get", "filter.nbstripout.clean") is None:
        return False  # no filter installed: the outputs really are a change
    entry = (_git(folder, "ls-files", "--stage", "--", name) or "").split()
    if len(entry) < 4 or entry[2] != "0":
        return False  # untracked, or in the middle of a merge conflict
    if _git(folder, "hash-object", "--path", name, "--", name) != entry[1]:
        return False  # the code or the prose changed: leave it for the learner to see
    return _git(folder, "update-index", "--", name) is not None


def after_save(model=None, os_path=None, contents_manager=None, **_) -> None:
    """Jupyter's FileContentsManager.post_save_hook; runs beside the server so a save never waits on git."""
    if os_path and str(os_path).endswith(".ipynb"):
        threading.Thread(target=refresh_if_only_outputs, args=(os_path,), daemon=True).start()
