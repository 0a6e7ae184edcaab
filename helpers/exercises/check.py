"""Tools: the check that teaches. Runs a learner's function on an exercise's cases and says, in words, what happened.

A notebook cell after each blank calls `check("04.trim", trim_by_exchanges)`. It prints one verdict and never raises:
- every case passed: the learner's function goes on through the lesson;
- a case failed (a wrong value, or an exception): which case, the input, what was expected, what came back, one hint;
- the blank was left (`raise NotImplementedError`): the learner is told so, and may come back to it.
In the last two cases `check` returns the package's own implementation (the exercise's `fallback`), so every later
cell of the lesson still runs. `passed(id)` tells whether the last check of an exercise passed (the solution run of
each lesson asserts it).
"""

from __future__ import annotations

import copy
import importlib
import reprlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Case", "Exercise", "Verdict", "run", "check", "passed"]

_MISSING = object()
_short = reprlib.Repr()
_short.maxstring, _short.maxother, _short.maxlist, _short.maxdict, _short.maxlevel = 120, 120, 8, 8, 4


def show(value: Any) -> str:
    """A value as a learner reads it: repr, shortened past a few lines."""
    return _short.repr(value)


@dataclass(frozen=True)
class Case:
    """One input and what a right answer gives: `expect` (compared with ==), or `test` (a predicate on the result)
    described in words by `expect_text`. `make` builds fresh inputs per run (lists the function may change, a client);
    `drive(fn)` calls the function itself (several calls, or to watch what it does) and returns what to judge."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    expect: Any = _MISSING
    test: Callable[[Any], bool] | None = None
    expect_text: str = ""
    make: Callable[[], tuple[tuple, dict]] | None = None
    drive: Callable[[Callable], Any] | None = None  # calls the function itself and returns what to judge
    shown_input: str = ""  # how to print the input when the args are large, built by `make` or by `drive`

    def inputs(self) -> tuple[tuple, dict]:
        if self.make is not None:
            return self.make()
        return copy.deepcopy(self.args), copy.deepcopy(self.kwargs)

    def judge(self, got: Any) -> bool:
        if self.test is not None:
            return bool(self.test(got))
        return got == self.expect

    def expected(self) -> str:
        return self.expect_text or show(self.expect)


@dataclass(frozen=True)
class Exercise:
    """A function the learner writes: its cases, one hint, and the package function that stands in when it fails."""

    id: str  # "04.trim": the lesson's number, then a short name
    title: str
    fallback: str  # "helpers.memory.window:trim_by_exchanges": same signature as the learner's function
    hint: str
    cases: tuple[Case, ...]

    def package_function(self) -> Callable:
        module, _, attr = self.fallback.partition(":")
        return getattr(importlib.import_module(module), attr)

    def solution_notebook(self) -> str:
        from helpers.config import project_root

        found = sorted((project_root() / "notebooks" / "solutions").glob(f"{self.id.split('.')[0]}_*.ipynb"))
        return f"notebooks/solutions/{found[0].name}" if found else "notebooks/solutions/"


@dataclass(frozen=True)
class Verdict:
    """What a check found: status is "passed", "failed" (a wrong value), "error" (an exception) or "blank"."""

    exercise: Exercise
    status: str
    case: Case | None = None
    call: str = ""
    got: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def text(self) -> str:
        ex = self.exercise
        head = f"{ex.id} ({ex.title})"
        fallback = f"`{ex.fallback.replace(':', '.')}`"
        if self.status == "passed":
            return f"PASSED {head}: all {len(ex.cases)} cases. The lesson goes on with your function."
        if self.status == "blank":
            return (
                f"NOT DONE YET {head}: your function still raises NotImplementedError.\n"
                f"The lesson goes on with the package's {fallback}; come back to it any time.\n"
                f"Stuck? The solution is in {ex.solution_notebook()}."
            )
        what = "raised " + self.got if self.status == "error" else "returned a wrong answer"
        lines = [
            f"NOT YET {head}: case {self.case.name!r} {what}.",
            f"  input:    {self.call}",
            f"  expected: {self.case.expected()}",
        ]
        if self.status == "failed":
            lines.append(f"  got:      {self.got}")
        lines += [
            f"  hint:     {ex.hint}",
            f"The lesson goes on with the package's {fallback}; fix yours and run this cell again.",
        ]
        return "\n".join(lines)


def _call_text(fn: Callable, case: Case, args: tuple, kwargs: dict) -> str:
    if case.shown_input:
        return case.shown_input
    name = getattr(fn, "__name__", "your_function")
    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def run(exercise: Exercise, fn: Callable) -> Verdict:
    """Run `fn` on every case of `exercise`, stopping at the first that fails. Prints nothing, raises nothing."""
    if not callable(fn):
        return Verdict(
            exercise, "error", exercise.cases[0], "(nothing to call)", f"TypeError: {show(fn)} is not a function"
        )
    for case in exercise.cases:
        args, kwargs = ((), {}) if case.drive else case.inputs()
        call = _call_text(fn, case, args, kwargs)
        try:
            got = case.drive(fn) if case.drive else fn(*args, **kwargs)
        except NotImplementedError:
            return Verdict(exercise, "blank", case, call)
        except Exception as err:  # the learner's code: any error is a verdict, never a traceback
            return Verdict(exercise, "error", case, call, f"{type(err).__name__}: {err}")
        try:
            ok = case.judge(got)
        except Exception:  # a result of the wrong shape (None, a string for a list) fails the case
            ok = False
        if not ok:
            return Verdict(exercise, "failed", case, call, show(got))
    return Verdict(exercise, "passed")


_last: dict[str, Verdict] = {}


def check(exercise_id: str, fn: Callable, *, out: Callable[[str], Any] = print) -> Callable:
    """Check the learner's `fn` against exercise `exercise_id`, print the verdict, and return the function the
    lesson should go on with: `fn` when every case passed, else the package's implementation."""
    from helpers.exercises.registry import exercise

    ex = exercise(exercise_id)
    verdict = run(ex, fn)
    _last[exercise_id] = verdict
    out(verdict.text())
    return fn if verdict.passed else ex.package_function()


def passed(exercise_id: str) -> bool:
    """Did the last `check` of this exercise pass? (The solution notebooks assert it; False if never checked.)"""
    verdict = _last.get(exercise_id)
    return bool(verdict and verdict.passed)
