"""Plumbing: statements out of a request for the offline reader (sentences and clauses, whose words, about whom).

Every statement in the request (system prompt with its summary and memory blocks, then every user message)
is split into sentences and clauses, pronouns resolved ("my sister Priya ... she" → "my sister Priya").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from helpers.offline import lexicon
from helpers.offline.language import PERSON_STEMS, STOPWORDS, TIME_WORDS, content_stems, sentences, stem, words
from helpers.offline.person import resolve_pronouns, strip_discourse
from helpers.offline.question import is_question, split_clauses

__all__ = ["Statement", "statements_of"]


@dataclass
class Statement:
    """One declarative sentence or clause from the request: its text, whose words (first/third person), its order."""

    text: str
    person: str  # "first": the user's own words; "third": about the user ("The user's ..."); "second": the assistant's
    order: int
    stems: frozenset[str] = field(default_factory=frozenset)
    about: str = "user"  # "user", or the stem of the person/thing it is about ("sister", "priya")
    words: tuple[str, ...] = ()  # its content words, lower case (for word similarity)


_TAGGED = re.compile(r"<(conversation_summary|remembered_memories)>(.*?)</\1>", re.S)
_DATE = re.compile(r"^\s*\[[^\]]*\]\s*(?:\([^)]*\)\s*)?")


def _about(text: str, person: str) -> str:
    lead = strip_discourse(text)
    owner = r"(?:my|our)" if person == "first" else (r"(?:the user's|user's)" if person == "third" else r"your")
    m = re.match(rf"(?i){owner}\s+((?:[\w'-]+[\s,]+){{0,2}}[\w'-]+)", lead)
    if m:
        phrase = m.group(1).replace(",", " ").split()
        for i, w in enumerate(phrase):
            nxt = phrase[i + 1] if i + 1 < len(phrase) else ""
            if stem(w) in PERSON_STEMS and (
                not nxt
                or w.endswith(("'s", "s'"))
                or nxt[:1].isupper()
                or nxt.lower() in STOPWORDS
                or nxt.lower().endswith("s")
                or (_verb(nxt) and not re.search(r"\b(?:I|we)\b", lead[m.end() :]))
            ):
                return stem(w)
    m = re.match(r"([A-Z][a-z]+)\b(\s+are\b)?", lead)
    if (
        m
        and m.group(1).lower() not in TIME_WORDS
        and m.group(1).lower() not in STOPWORDS | _NOBODY
        and not re.search(r"\b(?:I|I'm|I've|me|we|we're|us|my|our)\b", lead)
        and not m.group(2)
        and not (lexicon.known(m.group(1)) and not lexicon.is_a(m.group(1), "person", first=1, general=True))
        and m.group(1) not in ("I", "The", "My", "Our", "We", "You", "Your", "It", "This", "That", "There")
    ):
        return stem(m.group(1))  # "Priya lives in Pasadena"; not "Tea over coffee for me", "Sunflowers are my ..."
    return "user"


def _verb(word: str) -> bool:
    """A word the lexicon does not know as a noun, or knows first as a verb: "my husband *grew* up"."""
    found = lexicon.senses(word)
    return not found or not lexicon.senses(word, "n") or found[0][0] == "v"


_NOBODY = frozenset("nothing everything something anything nobody everyone someone anyone".split())
_NEG = re.compile(r"\b(?:no|not|never|without|none|nothing)\b|n't\b", re.I)


def _content_words(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(w.lower() for w in words(text) if w.lower() not in STOPWORDS and w.isalpha()))


def _stems(text: str) -> frozenset[str]:
    """Content stems of a statement, plus 'not' when it negates (so 'avoid' can find 'no meat')."""
    found = set(content_stems(text))
    if _NEG.search(text.replace("’", "'")):
        found.add("not")
    return frozenset(found)


def _add(out: list[Statement], text: str, person: str) -> None:
    for piece, stems, about, content in _pieces(text, person):
        out.append(Statement(piece, person, len(out), stems, about, content))


@functools.lru_cache(maxsize=65536)
def _pieces(text: str, person: str) -> tuple:
    """The statements of one text, without their order: read once per text (a long history repeats every turn)."""
    found = []
    for sentence in resolve_pronouns([s for s in sentences(text) if not is_question(s)]):
        clauses = split_clauses(sentence)
        for piece in [sentence] + clauses if len(clauses) > 1 else [sentence]:
            piece = piece.strip()
            if len(content_stems(piece)) < 1:
                continue
            found.append((piece, _stems(piece), _about(piece, person), _content_words(piece)))
    return tuple(found)


def statements_of(system: str, messages: list[tuple[str, str]], *, include_last: bool = True) -> list[Statement]:
    """All statements a request holds, oldest first: system prompt (blocks and user facts), then the messages."""
    out: list[Statement] = []
    for m in _TAGGED.finditer(system):
        for line in m.group(2).splitlines():
            line = _DATE.sub("", line).strip()
            if not line or line.startswith(("A summary of the earlier", "Things remembered from")):
                continue
            _add_line(out, line)
    rest = _TAGGED.sub("", system)
    for line in rest.splitlines():
        if re.search(r"\b(?:User|Assistant):", line) or re.search(r"\bthe user\b|\buser's\b", line, re.I):
            for sentence in [line] if "User:" in line else sentences(line):
                if "User:" in sentence or re.search(r"\bthe user\b|\buser's\b", sentence, re.I):
                    _add_line(out, sentence)
    last = len(messages) - 1
    for i, (role, text) in enumerate(messages):
        if role == "user" and (include_last or i != last):
            _add(out, text, "first")
    return out


def _add_line(out: list[Statement], line: str) -> None:
    turns = re.split(r"\b(User|Assistant):\s*", line)
    if len(turns) > 1:
        for who, said in zip(turns[1::2], turns[2::2]):
            if who == "User":
                _add(out, said, "first")
        return
    _add(out, line, "third" if re.search(r"\bthe user\b|\buser's\b", line, re.I) else "first")
