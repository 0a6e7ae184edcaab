"""Tools: the exercises of core lesson 06 (its notebook in notebooks/solutions/ holds the solutions)."""

from __future__ import annotations

from helpers.exercises.check import Case, Exercise

__all__ = ["EXERCISES"]

EXERCISES: list[Exercise] = []
_ = Case  # the lesson's cases are written with Case
