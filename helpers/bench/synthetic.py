"""Tools: synthetic memories for the scale benchmarks (many users, many memories, few embeddings).

`python -m helpers.bench retrieval` and `python -m helpers.bench load --users N` need tens of thousands of
memories per user, or a million in all; embedding each with the local MiniLM would take hours. So only a few
hundred distinct texts are embedded, and every other memory reuses one of those vectors plus small Gaussian
noise (renormalised): the ranking does the same work on every row, and the texts still vary (templates filled
with people, places, things, dates and codes). Memories are written as an import writes them
(`MemoryIndex.insert_batch` inside `holding`), so the change log and the users' index files exist, as after a
real import.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from helpers.retrieval import MemoryIndex, utc_now
from helpers.retrieval.embeddings import Embedder

__all__ = ["fill_user", "query_texts", "synthetic_texts", "embedded_bases", "BATCH"]

BATCH = 5000  # memories per insert

_PEOPLE = ["Maya", "Jonah", "Priya", "Luis", "Hana", "Omar", "Grace", "Tomas", "Aiko", "Elena", "Kofi", "Zara"]
_PLACES = ["Santa Monica", "Pasadena", "Malibu", "Echo Park", "Denver", "Tokyo", "Lisbon", "Austin", "Seattle"]
_PLACES += ["Venice Beach", "Silver Lake", "Griffith Park", "Joshua Tree", "San Diego", "Portland", "Chicago"]
_THINGS = ["tacos", "sushi", "ramen", "jazz", "hiking", "surfing", "pottery", "chess", "cycling", "espresso"]
_THINGS += ["board games", "vinyl records", "yoga", "climbing", "photography", "gardening"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October"]
_MONTHS += ["November", "December"]
_FACT_TEMPLATES = [
    "The user's friend {p} loves {t}.",
    "The user visited {l} in {m}.",
    "The user's sister {p} lives in {l}.",
    "The user wants to try {t} in {l}.",
    "The user booked flight {c} to {l} for {m} {d}.",
    "The user's colleague {p} recommended {t}.",
    "The user has a dentist appointment on {m} {d}.",
    "The user paid {n} dollars for {t} lessons.",
]
_EPISODE_TEMPLATES = [
    "User: We went to {l} with {p} and had {t}.\nAssistant: That sounds lovely; {l} is great for {t}.",
    "User: My confirmation code for {l} is {c}.\nAssistant: Noted, the code for {l} is {c}.",
    "User: Remind me that {p} arrives on {m} {d}.\nAssistant: I'll remember that {p} arrives on {m} {d}.",
]
_QUERY_TEMPLATES = [  # each with enough fillings for a few hundred distinct questions in the same mix
    "Where did my sister {p} move in {m}?",
    "What did {p} recommend in {l}?",
    "Is my dentist appointment on {m} {d}?",
    "Which flight did I book to {l} in {m}?",
    "What should I do in {l} with {p}?",
    "Who loves {t} in {l}?",
    "flight {c}",
    "What's my confirmation code for {l} in {m}?",
    "When does {p} arrive in {l}?",
    "How much did I pay for {t} lessons in {m}?",
]


def _fill(template: str, rng: np.random.Generator) -> str:
    def pick(seq: list[str]) -> str:
        return seq[int(rng.integers(len(seq)))]

    return template.format(
        p=pick(_PEOPLE),
        l=pick(_PLACES),
        t=pick(_THINGS),
        m=pick(_MONTHS),
        d=int(rng.integers(1, 29)),
        n=int(rng.integers(20, 400)),
        c=f"{pick(['UA', 'DL', 'AA', 'AS', 'B6'])}{int(rng.integers(100, 9999))}",
    )


def synthetic_texts(n: int, rng: np.random.Generator) -> list[str]:
    """`n` memory texts: facts ("The user's sister Maya lives in Lisbon.") and exchanges ("User: …\\nAssistant: …")."""
    templates = _FACT_TEMPLATES + _EPISODE_TEMPLATES
    return [_fill(templates[int(rng.integers(len(templates)))], rng) for _ in range(n)]


def query_texts(n: int, rng: np.random.Generator) -> list[str]:
    """`n` distinct questions of the kinds a user asks of these memories, the templates taken in turn (one whose
    fillings are used up is skipped: a question asked twice would be timed from caches)."""
    out: list[str] = []
    seen: set[str] = set()
    turn = 0
    while len(out) < n:
        for _ in range(len(_QUERY_TEMPLATES) * 50):
            text = _fill(_QUERY_TEMPLATES[turn % len(_QUERY_TEMPLATES)], rng)
            turn += 1
            if text not in seen:
                break
        else:
            raise ValueError(f"cannot make {n} distinct questions from the templates")
        seen.add(text)
        out.append(text)
    return out


def fill_user(
    index: MemoryIndex,
    user: str,
    n: int,
    rng: np.random.Generator,
    base_vectors: np.ndarray,
    *,
    first_seq: int = 0,
) -> list[str]:
    """Write `n` synthetic memories of `user` as an import does; returns their ids. Each vector is one of
    `base_vectors` (the embedded distinct texts) plus N(0, 0.01) noise per dimension, renormalised."""
    texts = synthetic_texts(n, rng)
    picks = rng.integers(len(base_vectors), size=n)
    vectors = base_vectors[picks] + rng.normal(0.0, 0.01, size=(n, base_vectors.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = utc_now()
    ages = rng.integers(0, 365 * 86_400, size=n)
    ids: list[str] = []
    index.count(user)  # held from the start: each batch goes into its rows, and the index file is written from them
    with index.holding(user):
        for start in range(0, n, BATCH):
            docs = [
                index.new_doc(
                    user,
                    "episode" if text.startswith("User:") else "fact",
                    text,
                    vectors[i],
                    {"session_id": f"s{i % 97}", "seq": first_seq + i},
                    now=now - timedelta(seconds=int(ages[i])),
                )
                for i, text in enumerate(texts[start : start + BATCH], start=start)
            ]
            ids += index.insert_batch(user, docs)
    return ids


def embedded_bases(embedder: Embedder, distinct: int, rng: np.random.Generator) -> np.ndarray:
    """The vectors of `distinct` synthetic texts (the only ones embedded)."""
    return np.asarray(embedder.embed(synthetic_texts(max(1, distinct), rng)), dtype=np.float32)
