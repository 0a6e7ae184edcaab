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

from helpers.offline.answer import cosine, rank, second_reading
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
