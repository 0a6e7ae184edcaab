"""Plumbing: the offline model's reader: statements out of a request, and the one that answers a question.

1. Every statement in the request (system prompt with its summary and memory blocks, then every message)
   is split into sentences and clauses, pronouns resolved ("my sister Priya ... she" → "my sister Priya").
2. A question is read for what it asks: its content words (stemmed, with synonyms), the thing it is about
   ("my sister", "Priya", or the user themself) and the kind of answer (who/where/when/how many).
3. Statements are judged (helpers.offline.answer): one may answer only if it is about the same subject the
   question asks about and names the thing asked about, then matches well enough by words or by meaning
   (MiniLM sentence similarity when the local model is there). The best is said back in second person
   (statements in helpers.offline.statements). If none qualifies, the reader says so: it never answers from
   anywhere but the request.
"""

from __future__ import annotations

from helpers.offline.answer import aliases, cosine, judge, rank
from helpers.offline.person import strip_discourse, third_to_second, to_second
from helpers.offline.question import Question, is_question, read_question, split_clauses
from helpers.offline.statements import Statement, statements_of

__all__ = [
    "Statement",
    "Question",
    "statements_of",
    "read_question",
    "answer",
    "is_question",
    "split_clauses",
    "render_second",
    "cosine",
    "second_reading",
    "SECOND_MIN",
    "SECOND_LEAD",
]


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
    """The statement that answers the question, or None: among near-best candidates, the newest wins. When none
    answers in the question's words, the one the question clearly points to by meaning (`second_reading`)."""
    ranked = rank(question, statements)
    if not ranked:
        return second_reading(question, statements)
    best = ranked[0].rank
    top = ranked[0]
    near = [
        s
        for s in ranked
        if s.coverage >= 0.75 * top.coverage and s.rank >= best - 0.5 and s.statement.about == top.statement.about
    ]
    chosen = max(near, key=lambda s: (s.statement.order, s.coverage))
    # a clause and the whole sentence it came from: say the shorter one when it covers as much
    same = [s for s in ranked if s.coverage >= chosen.coverage and s.statement.text in chosen.statement.text]
    return min(same, key=lambda s: len(s.statement.text)).statement if same else chosen.statement


SECOND_MIN = 0.2  # MiniLM cosine a statement needs for the second reading ...
SECOND_LEAD = 0.05  # ... and its lead over every other statement of the request


def second_reading(question: Question, statements: list[Statement]) -> Statement | None:
    """When no statement answers in the question's own words: the one statement the question points to by meaning.
    It must pass every check of `judge` but those on naming the thing asked in the same words (the person asked about,
    the kind of answer, the time, the figure, the owner still hold), and be clearly the closest statement of the
    request to the question as a whole: at least SECOND_MIN, and SECOND_LEAD ahead of every statement that is not
    part of it (or it of them). "Who treats my spine?" points to "I see a physiotherapist named Arjun for my back"."""
    if not question.stems or not statements:
        return None
    alias = aliases(statements)
    sims = {st.text: cosine(question.text, st.text) for st in statements}
    passed = [st for st in statements if judge(question, st, alias, lenient=True)[0] is not None]
    if not passed:
        return None
    best = max(passed, key=lambda st: (sims[st.text], st.order))
    others = [
        sims[st.text] for st in statements if st.text not in best.text and best.text not in st.text and st.text.strip()
    ]
    if sims[best.text] < SECOND_MIN or sims[best.text] - max(others, default=0.0) < SECOND_LEAD:
        return None
    return best
