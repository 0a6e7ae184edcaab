"""Tools: the exercises of core lesson 05 (its notebook in notebooks/solutions/ holds the solutions)."""

from __future__ import annotations

import numpy as np

from helpers.exercises.check import Case, Exercise

__all__ = ["EXERCISES"]


def _rows(got) -> list[int]:
    """The learner's answer as plain ints (a numpy array or a list of numpy ints is fine)."""
    return [int(i) for i in got]


def _cosine(name: str, query: list, vectors: list, expect: list[int]) -> Case:
    return Case(
        name,
        make=lambda: ((np.array(query, dtype=float), np.array(vectors, dtype=float)), {}),
        test=lambda got: _rows(got) == expect,
        expect_text=repr(expect),
        shown_input=f"cosine_rank(np.array({query}), np.array({vectors}))",
    )


EXERCISES: list[Exercise] = [
    Exercise(
        id="05.cosine_rank",
        title="rank vectors by cosine similarity",
        fallback="helpers.retrieval.ranking:cosine_rank",
        hint="divide the query and every row by its length (np.linalg.norm(..., axis=1, keepdims=True) for the rows), "
        "take the dot products, and return the row numbers from the HIGHEST similarity down (np.argsort(-sims)).",
        cases=(
            _cosine("the row pointing the query's way comes first", [1, 0], [[0, 1], [1, 0], [1, 1]], [1, 2, 0]),
            _cosine(
                "length does not count: a long vector at 45° loses to a short one pointing the same way",
                [1, 0],
                [[10, 10], [0.5, 0]],
                [1, 0],
            ),
            _cosine(
                "every row once, best first",
                [0.2, 0.9, 0.1],
                [[0, 0, 1], [0.1, 1, 0], [1, 0, 0], [0.3, 0.3, 0.3]],
                [1, 3, 2, 0],
            ),
        ),
    ),
    Exercise(
        id="05.rrf",
        title="reciprocal-rank fusion",
        fallback="helpers.retrieval.ranking:rrf_ranking",
        hint="for each ranking and its weight, the item at rank r (counting from 1) earns weight / (k + r); add up each "
        "item's points over the rankings, and return the items from the MOST points down.",
        cases=(
            Case(
                "an item in both rankings beats one that is first in only one",
                args=([["a", "b"], ["b", "c"]],),
                expect=["b", "a", "c"],
            ),
            Case(
                "the weights scale each ranking's points",
                args=([["a", "b"], ["b", "a"]],),
                kwargs={"weights": [0.5, 1.0]},
                expect=["b", "a"],
            ),
            Case(
                "k = 60 softens first place: third in both beats first in one",
                args=([["a", "x", "b"], ["y", "z", "b"]],),
                expect=["b", "a", "y", "x", "z"],
            ),
            Case(
                "k is the caller's (k=0: 1/rank, ranks counted from 1)",
                args=([["a", "x", "b"], ["y", "z", "b"]],),
                kwargs={"k": 0},
                expect=["a", "y", "b", "x", "z"],
            ),
        ),
    ),
]
