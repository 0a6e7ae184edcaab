"""Tools: every exercise of the core lessons, one module per lesson (`lessonNN.py`), looked up by id ("04.trim")."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LESSONS", "all_exercises", "exercise"]

LESSONS = tuple(f"helpers.exercises.lesson{n:02d}" for n in range(2, 8))


def all_exercises() -> list[Any]:
    """Every registered exercise, in lesson order."""
    found: list[Any] = []  # helpers.exercises.check.Exercise (not imported: check.py imports this module)
    for name in LESSONS:
        found.extend(importlib.import_module(name).EXERCISES)
    return found


def exercise(exercise_id: str) -> Any:
    """The exercise with this id; a KeyError that lists the ids there are."""
    by_id = {ex.id: ex for ex in all_exercises()}
    if exercise_id not in by_id:
        raise KeyError(f"no exercise {exercise_id!r}; there are: {', '.join(sorted(by_id)) or 'none'}")
    return by_id[exercise_id]
