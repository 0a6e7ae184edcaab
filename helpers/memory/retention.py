"""The retention check: does each fact's value (names, numbers, the thing itself) survive in a summary? Taught in further/03_summary_internals, section 'The retention check'.

A fact like "The user is allergic to peanuts." frames a value ("peanuts") with words any summary may
rephrase ("The user", "is", "to"). The check drops the framing words and asks for every remaining value
word in the summary, so "allergic to shellfish" does not count as keeping "allergic to peanuts". Facts
with no value word left are not checkable; with nothing checkable the score is None ("n/a"), never 100%.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import anthropic

from helpers import prompts
from helpers.conversation import format_turns
from helpers.memory.structured import call_tool

__all__ = ["extract_facts", "value_words", "fact_present", "Retention", "check_retention"]

# Words that frame a fact rather than carry its value: function words, the subject, generic relation verbs.
_FRAME = set(
    """
a an the this that these those some any each every one's
user user's users they them their theirs he him his she her hers it its we us our i me my you your
is are was were be been being am has have had having do does did will would shall should can could may might
of to in on at for from with by as into onto about over under near than then so and or but also too very really
who whom which what where when how whose there here
named called name names said says stated mentioned told tells lives live living lived works work working worked
currently now still just
""".split()
)
_NEGATIONS = {"not", "no", "never", "without", "none", "nor"}
_SPELLING = {
    "favourite": "favorite",
    "colour": "color",
    "neighbour": "neighbor",
    "centre": "center",
    "theatre": "theater",
    "metres": "meters",
    "kilometres": "kilometers",
    "grey": "gray",
}
_TOKEN = re.compile(r"[a-z0-9]+(?:[-:'.,][a-z0-9]+)*")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("\u2019", "'").replace("n't", " not"))


@functools.lru_cache(maxsize=1 << 16)  # a pure function of one word: the same summary words every turn
def _stem(word: str) -> str:
    """A light stem: British spellings, possessive, plural and -ing/-ed endings (peanuts → peanut)."""
    word = _SPELLING.get(word, word)
    if word.endswith("'s"):
        word = word[:-2]
    if any(ch.isdigit() for ch in word):
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    return word


def _compact(text: str) -> str:
    return re.sub(r"[\s:.,'-]+", "", text.lower())


@functools.lru_cache(maxsize=64)  # pure; one summary is checked against every fact of a fold
def _stems_of(text: str) -> frozenset[str]:
    return frozenset(_stem(t) for t in _tokens(text))


@functools.lru_cache(maxsize=64)  # pure, as above
def _runs(text: str, longest: int = 4) -> frozenset[str]:
    """Every run of up to `longest` consecutive whole pieces of `text` (split at spaces and : . , ' -), joined:
    "7:45 pm" gives "745pm"; "17:45" never gives "745" and "44112" never "4411"."""
    pieces = re.findall(r"[^\s:.,'-]+", text.lower())
    return frozenset(
        "".join(pieces[i:j]) for i in range(len(pieces)) for j in range(i + 1, min(i + longest, len(pieces)) + 1)
    )


def value_words(fact: str) -> list[str]:
    """The words of `fact` that carry its value (everything but framing words), in order, stemmed."""
    out = []
    for token in _tokens(fact):
        if token in _FRAME or token in _NEGATIONS:
            continue
        stem = _stem(token)
        if stem not in out:
            out.append(stem)
    return out


def fact_present(fact: str, summary: str) -> bool:
    """True when every value word of `fact` is in `summary` (and a negated fact stays negated).

    A fact with no value word is not present: there is nothing to show it survived."""
    values = value_words(fact)
    if not values:
        return False
    have = _stems_of(summary)
    for value in values:
        if value in have:
            continue
        if any(ch.isdigit() for ch in value) and _compact(value) in _runs(summary):  # "7:45pm" kept as "7:45 pm"
            continue
        return False
    negated = any(t in _NEGATIONS for t in _tokens(fact))
    return not negated or any(t in _NEGATIONS or t in ("avoid", "avoids", "free") for t in _tokens(summary))


@dataclass
class Retention:
    """Which facts a summary keeps: `score` is kept / checkable, None when there was nothing to check."""

    kept: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    @property
    def score(self) -> float | None:
        checked = len(self.kept) + len(self.lost)
        return len(self.kept) / checked if checked else None


def check_retention(facts: list[str], summary: str) -> Retention:
    """Sort `facts` into kept, lost and unchecked (no value words) against `summary`."""
    result = Retention()
    for fact in facts:
        if not value_words(fact):
            result.unchecked.append(fact)
        elif fact_present(fact, summary):
            result.kept.append(fact)
        else:
            result.lost.append(fact)
    return result


def extract_facts(client: anthropic.Anthropic, model: str, messages: list[dict], ledger=None) -> list[str]:
    """Facts about the user in `messages`, as standalone third-person sentences, via the forced `record_facts` tool.

    Raises `helpers.memory.structured.ToolOutputError` (an `anthropic.APIError`) when the model's output is unusable,
    so callers keep the exchange pending instead of reading it as "no facts"."""
    if not any(m["role"] == "user" for m in messages):
        return []
    data = call_tool(
        client,
        model=model,
        max_tokens=400,
        system=prompts.EXTRACTION_TASK,
        tool=prompts.EXTRACTION_TOOL,
        content=format_turns(messages),
        ledger=ledger,
        purpose="extraction",
    )
    return [" ".join(f.split()) for f in data["facts"] if f.strip()]
