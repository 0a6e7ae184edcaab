"""Plumbing: named crash points, so a test can end a process exactly where a kill -9 could (`GTE_CRASH_AT`).

The write paths call `crash_point("commit:saved")` and the like between the writes a crash could separate. Normally
that is one environment lookup and nothing happens. With `GTE_CRASH_AT=commit:saved` (or `NAME@N`: the N-th time the
point is reached in this process) the process ends there through `os._exit`: no exception handler, `finally`, atexit
hook or buffered write runs, as with SIGKILL. tests/tools/test_kill_matrix.py ends a process at every point of a
vector turn and of an import, then checks that the next start completes what the dead process left undone.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

__all__ = ["crash_point", "CRASH_EXIT_CODE", "POINTS", "VISITS"]

CRASH_EXIT_CODE = 86  # what a process ended at a crash point exits with (a test tells it from any other death)
# Every point, in the order a vector turn (then an import) reaches them; a name not listed here is a typo.
POINTS = (
    "turn:logged",  # the user's entry is in the log; no model call yet
    "turn:replied",  # the reply's entry is in the log; the session is not saved
    "commit:saved",  # the session save (the commit point) landed; long-term memory not written yet
    "memory:turns",  # the exchange's turns are stored as memories; its facts not yet
    "memory:facts",  # its facts too; the log entries not yet marked remembered
    "commit:confirmed",  # the entries are marked ok (and remembered): the turn is complete
    "import:logged",  # an import's entries are in the log; the session is not saved
    "import:batch",  # a bounded import saved one batch of exchanges
    "import:folded",  # a vector import's one fold is saved (the commit point of every turn in it)
    "import:confirmed",  # its entries are marked ok; no memory written yet
    "import:turns",  # its turns are stored as memories; facts not yet
    "import:chunk",  # one chunk's facts are stored; its entries not yet marked remembered
    "import:saved",  # the import's dates and conversations are saved: it is complete
    "index:announced",  # a memory write is announced in the change log; its documents are not inserted yet
    "facts:added",  # a new fact is stored; the older facts it replaces are not yet marked superseded
)
VISITS: Counter = Counter()  # visits per point in this process (a test clears it between runs)
EXIT: Callable[[int], object] = os._exit  # tests running in one process replace it with a raise


def crash_point(name: str) -> None:
    """End the process here if GTE_CRASH_AT names this point (and this is its N-th visit, for `NAME@N`)."""
    spec = os.environ.get("GTE_CRASH_AT")
    if not spec:
        return
    target, _, nth = spec.partition("@")
    if target != name:
        return
    VISITS[name] += 1
    if VISITS[name] == (int(nth) if nth.isdigit() else 1):
        EXIT(CRASH_EXIT_CODE)
