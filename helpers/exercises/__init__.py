"""Tools: the learner's exercises. `check(id, fn)` runs a learner's function on its cases and prints a verdict that
teaches; `passed(id)` says whether it passed. The exercises live in `lessonNN.py`, one module per core lesson."""

from helpers.exercises.check import Case, Exercise, Verdict, check, passed, run

__all__ = ["Case", "Exercise", "Verdict", "check", "passed", "run"]
