"""Plumbing: the cues in wording the offline reader's judge checks: what a question's form asks for, what a statement rules out.

A question asks by its form for a clock time ("what time"), a date, a reason ("why"), a make, a figure or a code
("the booking reference"); a statement that holds none does not answer it. A statement's own wording can rule it
out: unsure ("can't remember which day"), no longer or not yet so ("used to", "last year" against "nowadays",
"next"), someone else's ("the neighbours' dog"), the opposite of a word the question says ("our *new* puppy" /
"our old dog"), or the opposite feeling (asked what they like, it says what they avoid).
helpers.offline.answer.judge applies these, each with its reason.
"""

from __future__ import annotations

import re

from helpers.offline import lexicon
from helpers.offline.language import stem
from helpers.offline.question import Question
from helpers.offline.statements import Statement

__all__ = [
    "PREFERENCE",
    "NEGATIVE",
    "CLOCK_ASKED",
    "CLOCK",
    "DATE_ASKED",
    "DAY_OF_MONTH",
    "REASON_ASKED",
    "REASON",
    "MAKE_ASKED",
    "UNSURE",
    "HEDGED",
    "NOWADAYS",
    "NO_LONGER",
    "LATER",
    "PAST_EVENT",
    "FIGURE_KINDS",
    "OTHER_OWNER",
    "figure_asked",
    "figure_said",
    "owned_by_user",
    "opposed",
]

PREFERENCE = re.compile(r"\b(?:favou?rite|love|like|enjoy|prefer|adore|fond)\b", re.I)
NEGATIVE = re.compile(
    r"\b(?:not|never|no|can't|cannot|won't|don't|avoids?|hates?|dislikes?|allergic|intolerant|leave it out|"
    r"steer clear|stand)\b|n't\b",
    re.I,
)

CLOCK_ASKED = re.compile(r"(?i)\b(?:what|which) time\b(?! of (?:year|day|the year))")
CLOCK = re.compile(
    r"(?i)\d{1,2}[:.]\d\d|\d\s*(?:am|pm|a\.m\.|p\.m\.|h\b)|\b\d{4}\b|\b(?:at|from|by|until|till|before|after) "
    r"(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b|"
    r"\b(?:noon|midday|midnight|o'clock|half (?:past|\w+)|quarter (?:past|to))\b"
)  # not "the 17th"
DATE_ASKED = re.compile(r"(?i)\b(?:what|which) (?:date|day of the month)\b|\bon (?:what|which) date\b")
DAY_OF_MONTH = re.compile(
    r"(?i)\d|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
    r"twelfth|\w+teenth|twentieth|thirtieth|twenty-\w+|thirty-first)\b"
)
REASON_ASKED = re.compile(r"(?i)^\W*why\b")
REASON = re.compile(r"(?i)\b(?:because|since|as|so|due to|after|for|ever since|'cause|cos)\b")
MAKE_ASKED = re.compile(r"(?i)\b(?:what|which) (?:brand|make|model|label)\b")


UNSURE = re.compile(
    r"(?i)\b(?:can't|cannot|don't|do not|doesn't) (?:remember|recall|know)|\bnot sure\b|\bno idea\b|"
    r"\bhaven't (?:decided|picked|chosen|heard)|\bundecided\b|\bwhether\b|\bsometime\b|"
    r"\bforg[eo]t (?:which|what|when|where|exactly|the exact)\b|\b(?:thinking|thought) (?:about|of)\b|\bmaybe\b|\bperhaps\b"
)
HEDGED = re.compile(r"(?i)\b(?:might|maybe|perhaps|thinking|considering|could)\b")  # a question that asks about a maybe
NOWADAYS = re.compile(r"(?i)\b(?:nowadays|these days|currently|at the moment|any more|anymore|now)\b")
NO_LONGER = re.compile(
    r"(?i)\b(?:used to|formerly|previously|no longer|not any ?more|gave up|quit|grown out of)\b|"
    r"\b(?:my|our) (?:old|former|ex-?)\b"
)
LATER = re.compile(r"(?i)\b(?:next|upcoming|going to|will|'ll|planning|plan to)\b")
PAST_EVENT = re.compile(r"(?i)\b(?:went|last (?:year|month|week|summer|winter|spring|autumn|time)|ago)\b")
FIGURE_KINDS = ("number", "code", "identification", "id", "pin", "payment", "amount", "sum", "figure", "reference")


def figure_asked(question: Question) -> bool:
    """The thing asked for is a figure or a code ("what salary", "which digits", "the booking reference", "my PIN")."""
    asked = (
        list(question.focus) + list(question.weighted) + [stem(w) for w in re.findall(r"\b[A-Z]{2,}\b", question.text)]
    )  # an acronym: "PIN", "VAT"
    return any(
        lexicon.is_a(question.words.get(s, s), kind, first=1, general=True)
        or question.words.get(s, s).lower() in FIGURE_KINDS
        for s in asked
        for kind in FIGURE_KINDS
    )


def figure_said(question: Question, st: Statement) -> bool:
    """The statement holds a figure or a code the question does not: "£42,000", "0088", "BA274", "5C"."""
    mine = set(re.findall(r"[\w£$€.,:/-]+", question.text))
    return any(
        t not in mine and (any(ch.isdigit() for ch in t) or (len(t) > 1 and t.isupper() and t != "I"))
        for t in re.findall(r"[\w£$€.,:/-]+", st.text)
    )


OTHER_OWNER = re.compile(
    r"(?i)\b(?:his|her|their|its)\b|\b(?!my\b|our\b)[a-z]+(?:'s|s')\s|"
    r"\b(?!I\b|we\b)[a-z]+\s+(?:has|have|owns?)\b"
)


def owned_by_user(head: str, st: Statement) -> bool:
    """ "my dog": the statement's dog is not someone else's ("our neighbours have a dog", "his dog", "Sam's dog")."""
    toks = re.findall(r"[\w'’]+", st.text)
    at = [i for i, t in enumerate(toks) if stem(t) == head]
    if not at:
        return True  # named another way (an alias, a synonym): the other checks decide
    before = " ".join(toks[max(0, at[0] - 5) : at[0]])
    return not OTHER_OWNER.search(before) or bool(re.search(r"(?i)\b(?:my|our)\s+\S*\s*$", before))


def opposed(question: Question, st: Statement) -> bool:
    """The statement says the opposite of a word of the question ("our *new* puppy" / "our *old* dog")."""
    return any(
        lexicon.opposite(w, said)
        for s, w in question.words.items()
        if s not in st.stems
        and not any(lexicon.synonymous(w, other, first=2) for other in st.words)  # "shut": "we close"
        for said in st.words
    )
