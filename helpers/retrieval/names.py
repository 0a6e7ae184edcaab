"""Who is asked about: the people of an imported conversation are a filter, not search words. Taught in further/05_long_conversations, section 'Whose turn holds the answer'.

In a conversation between two named people ("Caroline: …", "Melanie: …"), nearly every question names one
of them ("What did Caroline research?"). Every memory is about one of them too, so the name tells the
rankings nothing about *what* is asked; yet the embedding of a short question is dominated by it, and the
short facts that repeat it ("Caroline's concern, Caroline is so thoughtful") rank first. So, in
`MemoryIndex.search`:

* the question is embedded **without the participants' names** (`without_names`): the cosine then
  measures what is asked. BM25 keeps them: its idf already gives a name said everywhere little weight.
* when the question names exactly one participant, that person's own turns gain `SPEAKER_BOOST` of their
  score: "What did Caroline research?" is answered by what Caroline said.

A chat between a user and the assistant has no named speakers ("User: …"), so nothing changes there.
Chosen on the tuning part of the real conversations only (conv-26, conv-30, conv-41 of `python -m helpers.bench
longmem --data … --split tune`: vector stage, 2,000 tokens, local MiniLM, offline, 2026-12-01, at 8fc5221 plus
this module). Answer recall / evidence turns in the request: 85.0% / 76.8% as before; names left out of the
embedded question 86.4% / 85.6% (out of both rankings 86.1% / 85.3%; out of BM25's only 85.7% / 79.3%). Then
the boost: 0.5 → 87.2% / 88.0%, 0.75 → 87.2% / 88.2%, 2.0 → 87.3% / 89.1%, 4.0 → 87.7% / 87.3% (a plateau;
0.75 kept). Boosting facts that name the person too was no better (86.5% / 87.6% at 0.5).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["SPEAKER_BOOST", "GENERIC_SPEAKERS", "speaker_of", "named", "without_names", "boost_speaker", "check_boost"]

SPEAKER_BOOST = 0.75
GENERIC_SPEAKERS = frozenset({"User", "Assistant"})  # helpers.retrieval.schema.turn_text's unnamed roles
_SPEAKER = re.compile(r"([^\s:][^:\n]{0,39}): ")  # turn_text writes "<speaker>: <text>"


def speaker_of(turn_text: str) -> str | None:
    """The named speaker a stored turn starts with (`Caroline: …` → "Caroline"); None for `User: …` or none."""
    match = _SPEAKER.match(turn_text or "")
    if match is None or match.group(1) in GENERIC_SPEAKERS or len(match.group(1).split()) > 3:
        return None
    return match.group(1)


@functools.lru_cache(maxsize=64)  # one search asks twice (named, without_names) with the same participants
def _pattern(names: frozenset[str]) -> re.Pattern | None:
    ordered = sorted((n for n in names if n), key=len, reverse=True)  # "Mary Ann" before "Mary"
    if not ordered:
        return None
    return re.compile(r"(?<![\w])(?P<name>" + "|".join(map(re.escape, ordered)) + r")(?:['’]s)?(?![\w])")


def named(query: str, names: Iterable[str]) -> list[str]:
    """The participants `query` names (whole words, as written), each once, in the order they appear."""
    pattern = _pattern(frozenset(names))
    if pattern is None:
        return []
    return list(dict.fromkeys(match["name"] for match in pattern.finditer(query)))


def without_names(query: str, names: Iterable[str]) -> str:
    """`query` with the participants' names (and their possessive 's) taken out; `query` itself if nothing
    else would be left ("Caroline?")."""
    pattern = _pattern(frozenset(names))
    if pattern is None:
        return query
    rest = " ".join(pattern.sub(" ", query).split())
    return rest if re.search(r"\w", rest) else query


def boost_speaker(scores: dict[int, float], speakers: list, speaker: str, boost: float) -> dict[int, float]:
    """`scores` ({row: score}) with the rows `speaker` said raised: times (1 + boost), or a negative score divided
    by it (toward zero); `speakers[row]` is each row's named speaker."""
    up = 1.0 + boost
    return {
        row: (score * up if score >= 0 else score / up) if speakers[row] == speaker else score
        for row, score in scores.items()
    }


def check_boost(value: object) -> float:
    """`value` as a speaker boost: a number >= 0 (0: no boost)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise ValueError(f"speaker_boost must be a number >= 0, got {value!r}")
    return float(value)
