"""Plumbing: the offline model's reader: statements out of a request, and the one that answers a question.

1. Every statement in the request (system prompt with its summary and memory blocks, then every message)
   is split into sentences and clauses, pronouns resolved ("my sister Priya ... she" → "my sister Priya").
2. A question is read for what it asks: its content words (stemmed, with synonyms), the thing it is about
   ("my sister", "Priya", or the user themself) and the kind of answer (who/where/when/how many).
3. Statements are ranked by word overlap (plus MiniLM sentence similarity when the local model is there);
   the best one that is about the same thing and holds the right kind of answer is said back in second
   person. If none qualifies, the reader says so: it never answers from anywhere but the request.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass, field

from .language import (STOPWORDS, TIME_WORDS, content_stems, has_answer_type, is_kind_of, is_specific, other_member,
                       proper_names, related, same_person, sentences, stem, synonyms, words)
from .person import first_person, mentions, resolve_pronouns, strip_discourse, third_to_second, to_second
from .question import PERSON_STEMS, Question, is_question, read_question, split_clauses

__all__ = ["Statement", "Question", "statements_of", "read_question", "answer", "is_question", "split_clauses",
           "render_second", "cosine"]


@dataclass
class Statement:
    """One declarative sentence or clause from the request: its text, whose words (first/third person), its order."""

    text: str
    person: str          # "first": the user's own words; "third": about the user ("The user's ..."); "second": the assistant's
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
            if stem(w) in PERSON_STEMS and (not nxt or w.endswith("'s") or nxt[:1].isupper()
                                             or nxt.lower() in STOPWORDS or nxt.lower().endswith("s")):
                return stem(w)
    m = re.match(r"([A-Z][a-z]+)\b", lead)
    if m and m.group(1).lower() not in TIME_WORDS and not re.search(r"\b(?:I|I'm|I've|we|we're)\b", lead) \
            and m.group(1) not in ("I", "The", "My", "Our", "We", "You", "Your", "It", "This", "That", "There"):
        return stem(m.group(1))
    return "user"


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
    for sentence in resolve_pronouns([s for s in sentences(text) if not is_question(s)]):
        clauses = split_clauses(sentence)
        for piece in ([sentence] + clauses if len(clauses) > 1 else [sentence]):
            piece = piece.strip()
            if len(content_stems(piece)) < 1:
                continue
            if person == "first" and not first_person(piece) and _about(piece, person) == "user" \
                    and not re.search(r"\b(?:she|he|they)\b", piece, re.I):
                pass  # an impersonal remark by the user ("It was sunny") still counts as said
            out.append(Statement(piece, person, len(out), _stems(piece), _about(piece, person), _content_words(piece)))


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
            for sentence in ([line] if "User:" in line else sentences(line)):
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


# ------------------------------------------------------------------------------------------ ranking

_EMBED_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _embedder():
    try:
        from ..embeddings import _shared_local
        model = _shared_local()
        model.embed(["warm up"])
        return model
    except Exception:  # noqa: BLE001 - no local model: the reader works on words alone
        return None


@functools.lru_cache(maxsize=20000)
def _vector(text: str):
    model = _embedder()
    if model is None:
        return None
    with _EMBED_LOCK:
        return model.embed([text])[0]


def cosine(a: str, b: str) -> float:
    """MiniLM cosine of two sentences (0.0 without the local model), rounded so results stay deterministic."""
    va, vb = _vector(a), _vector(b)
    if va is None or vb is None:
        return 0.0
    return round(float(va @ vb), 3)


def _aliases(statements: list[Statement]) -> dict[str, set[str]]:
    """Stems that name the same person: "my sister Priya" / "my sister's name is Priya" → sister ↔ priya."""
    alias: dict[str, set[str]] = {}
    for st in statements:
        pairs = [(rel, name) for rel, name in mentions(st.text) if name]
        m = re.search(r"(?i)\b(?:my|our|the user's|your)\s+([\w-]+)'s\s+name\s+is\s+([A-Z][a-z]+)", st.text)
        if m:
            pairs.append((m.group(1).lower(), m.group(2)))
        m = re.search(r"(?i)\b([A-Z][a-z]+)\s+is\s+(?:my|our|the user's)\s+([\w-]+)", st.text)
        if m and m.group(1)[:1].isupper():
            pairs.append((m.group(2).lower(), m.group(1)))
        for rel, name in pairs:
            a, b = stem(rel), stem(name.split()[0])
            alias.setdefault(a, set()).add(b)
            alias.setdefault(b, set()).add(a)
    return alias


@functools.lru_cache(maxsize=50000)
def _word_similarity(a: str, b: str) -> float:
    """MiniLM cosine of two single words (0.0 without the local model)."""
    return cosine(a, b)


def _match(qs: str, qword: str, st: Statement, alias: dict[str, set[str]], strict: bool = False) -> float:
    """How well a statement covers one question word: 1 same word/person, 0.8 synonym, else word similarity.
    `strict` (a person or name asked about): only the same person counts."""
    if qs in st.stems or any(a in st.stems for a in alias.get(qs, ())):
        return 1.0
    if strict or qs in PERSON_STEMS:
        return 1.0 if any(same_person(qs, s) or is_kind_of(s, qs) for s in st.stems) else 0.0
    if any(related(qs, s) for s in st.stems):
        return 0.8
    if any(is_kind_of(s, qs) for s in st.stems):
        return 0.9  # asked "what music", said "jazz"
    if any(is_kind_of(s, k) for s in st.stems for k in synonyms(qs)):
        return 0.5  # asked what they "eat", said "sugar" (a food): counts, but never names the thing asked about
    best = max((_word_similarity(qword.lower(), w) for w in st.words), default=0.0)
    return best if best >= 0.5 else 0.0


@dataclass
class Scored:
    """A statement with its coverage of the question, its similarity and the combined rank."""

    statement: Statement
    coverage: float
    similarity: float
    rank: float


def rank(question: Question, statements: list[Statement]) -> list[Scored]:
    """Statements that may answer `question`, best first (all checks passed)."""
    alias = _aliases(statements)
    qwords = question.words
    out = []
    for st in statements:
        if any(_match(h, qwords.get(h, h), st, alias, strict=True) < 1.0 for h in question.heads):
            continue  # not about the person asked about
        if any(_match(o, qwords.get(o, o), st, alias) < 0.55 for o in question.objects):
            continue  # not about the thing asked about
        if any(other_member(q, {stem(w) for w in st.words if _word_similarity(qwords.get(q, q).lower(), w) < 0.7})
               for q in question.stems):
            continue  # asked about one thing of a kind (wine), the statement is about another (tea)
        if any(_match(f, qwords.get(f, f), st, alias) < 0.55
               and (is_specific(f) or not (set(proper_names(st.text)) - set(qwords.values())))
               for f in question.focus):
            continue  # "which university": the statement names none
        if any(_match(f, qwords.get(f, f), st, alias) < 0.55 for f in question.specific):
            continue
        if question.about_user and st.about != "user" and question.kind != "person":
            continue  # about someone else (the user's sister), the question is about the user
        if not question.stems:
            continue
        important = set(question.heads) | set(question.objects) | set(question.focus) | set(question.weighted)
        weights = [2.0 if s in important else 1.0 for s in question.stems]
        matches = [_match(s, qwords.get(s, s), st, alias, strict=s in question.heads) for s in question.stems]
        coverage = sum(w * m for w, m in zip(weights, matches)) / sum(weights)
        if coverage == 0.0:
            continue
        exclude = set(question.stems) | {a for h in question.heads for a in alias.get(h, ())} \
            if question.kind not in ("name", "person") else set(question.stems)
        if not has_answer_type(question.kind, st.text, exclude):
            continue
        if not set(st.stems) - set(question.stems) - {"not"}:
            continue  # says nothing the question does not already say
        missed = sum(m == 0.0 for m in matches)
        similarity = cosine(question.text, st.text)
        if (coverage >= 0.5 and (missed == 0 or similarity >= 0.35)) or (similarity >= 0.45 and coverage >= 0.3):
            out.append(Scored(st, coverage, similarity, coverage + similarity))
    out.sort(key=lambda s: (-s.rank, -s.statement.order))
    return out


def render_second(st: Statement) -> str:
    """A statement said back to the user: "I'm vegetarian" → "You're vegetarian."."""
    text = strip_discourse(st.text)
    if st.person == "first":
        text = to_second(text)
    elif st.person == "third":
        text = third_to_second(text)
    text = text.strip().rstrip(",;:")
    if not text.endswith((".", "!")):
        text += "."
    return text[:1].upper() + text[1:]


def answer(question: Question, statements: list[Statement]) -> Statement | None:
    """The statement that answers the question, or None: among near-best candidates, the newest wins."""
    ranked = rank(question, statements)
    if not ranked:
        return None
    best = ranked[0].rank
    top = ranked[0]
    near = [s for s in ranked if s.coverage >= 0.75 * top.coverage and s.rank >= best - 0.5
            and s.statement.about == top.statement.about]
    chosen = max(near, key=lambda s: (s.statement.order, s.coverage))
    # a clause and the whole sentence it came from: say the shorter one when it covers as much
    same = [s for s in ranked if s.coverage >= chosen.coverage and s.statement.text in chosen.statement.text]
    return min(same, key=lambda s: len(s.statement.text)).statement if same else chosen.statement
