"""Plumbing: the offline reader ranks statements against a question and decides to answer or decline.

A statement may answer only if it is about the SAME subject the question asks about (the user, or the same
person/relation) and names the thing asked about; then it must match well enough, by words (stems, synonyms,
kinds) or by meaning (MiniLM sentence similarity). `judge` gives the verdict and its reason for one statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.offline import cues, lexicon
from helpers.offline.kinds import is_kind_of, is_specific, other_member
from helpers.offline.language import (
    PERSON_STEMS,
    TIME_WORDS,
    has_answer_type,
    proper_names,
    stem,
)
from helpers.offline.meaning import cosine, word_similarity
from helpers.offline.person import mentions
from helpers.offline.question import Question
from helpers.offline.statements import Statement
from helpers.offline.synonyms import related, same_person, synonyms

__all__ = ["cosine", "rank", "judge", "aliases", "Scored", "SEMANTIC_MIN"]


def aliases(statements: list[Statement]) -> dict[str, set[str]]:
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


def _match(
    qs: str,
    qword: str,
    st: Statement,
    alias: dict[str, set[str]],
    strict: bool = False,
    taken: frozenset[str] = frozenset(),
    floor: float = 0.5,
) -> float:
    """How well a statement covers one question word: 1 same word/person, 0.8 synonym, else word similarity.
    `strict` (a person or name asked about): only the same person counts. `taken`: stems the question says
    itself; a statement word that matches one of them is spoken for ("size shirt ... wear" never pairs shirt~wear)."""
    if qs in st.stems or any(a in st.stems for a in alias.get(qs, ())):
        return 1.0
    if strict or qs in PERSON_STEMS:
        return (
            1.0
            if any(same_person(qs, s) or is_kind_of(s, qs) for s in st.stems)
            or any(_same_person_word(qword, w) for w in st.words)
            else 0.0
        )
    if any(related(qs, s) for s in st.stems):
        return 0.8
    if any(is_kind_of(s, qs) for s in st.stems):
        return 0.9  # asked "what music", said "jazz"
    if any(lexicon.synonymous(qword, w, first=2, first_b=1) for w in st.words):
        return 0.8  # the lexicon: "eldest" is "firstborn", "reside" is "live"
    if any(lexicon.is_a(w, qword, first=1, depth=KIND_DEPTH) for w in st.words if stem(w) not in taken):
        return 0.9  # the lexicon: a "greyhound" is a dog, "Mondays" are days
    if any(is_kind_of(s, k) for s in st.stems for k in synonyms(qs)):
        return 0.5  # asked what they "eat", said "sugar" (a food): counts, but never names the thing asked about
    best = max((word_similarity(qword.lower(), w) for w in st.words if stem(w) not in taken), default=0.0)
    return best if best >= floor else 0.0


KIND_DEPTH = 6  # a word the question says stands for its members only when it is this specific ("dog", not "place")
SEMANTIC_MIN = 0.45  # MiniLM cosine at which a statement that passed every subject check answers in other words
OBJECT_MIN = 0.44  # word similarity at which "my reptile" is "my tortoise" when the sentences agree (not "my postcode")
INSTANCE_MIN = 0.36  # word similarity of a kind asked for ("which dish") and a word said for it ("lasagna")
INSTANCE_SENTENCE_MIN = 0.35  # ... in a statement at least this close to the question as a whole
POSITION_MIN = 0.55  # "where do I like to sit" is answered by a position ("a window seat") when the sentences agree


_SECRET = stem("secret")
_OWNED = re.compile(r"(?i)\b(?:my|our|your|the user's)\s+(?:[\w-]+\s+)?([\w-]+)")
PREDICATE_MIN = 0.45  # word similarity at which a time said ("autumn") is the time a question names ("fall")
_GENERIC_TIME = frozenset("time day week month year date".split())


PHRASE_MIN = 0.6  # MiniLM cosine at which a noun phrase asked ("my morning brew") is said in other words ("coffee")


def _phrase_said(phrase: str, st: Statement) -> bool:
    """A multi-word thing asked about is named in the statement by a word or two of its own ("grew up" for "childhood")."""
    if not phrase:
        return False
    toks = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]*", st.text)]
    spans = set(st.words) | {f"{a} {b}" for a, b in zip(toks, toks[1:]) if a in st.words or b in st.words}
    return any(cosine(phrase, span) >= PHRASE_MIN for span in spans)


def _head_said_modifier_close(phrase: str, st: Statement) -> bool:
    """ "the *wireless* password" met by "the Wi-Fi password": the head noun is said, the phrase in other words."""
    head = stem(phrase.split()[-1]) if phrase else ""
    return bool(head) and head in st.stems and _phrase_said(phrase, st)


def _same_person_word(asked: str, said: str) -> bool:
    """The lexicon says one person word names the other ("nan" / "grandmother") or a kind of it ("daughter" / "kid")."""
    asked, said = asked.lower(), said.lower()
    if not (
        lexicon.is_a(asked, "person", first=4, general=True) and lexicon.is_a(said, "person", first=4, general=True)
    ):
        return False
    return lexicon.synonymous(asked, said) or lexicon.is_a(said, asked)


def _time_met(word: str, st: Statement, strict: bool = False) -> bool:
    """A time the question names ("at Christmas", "this fall") is said, or a time close to it ("autumn"); `strict`
    (the second reading): said, or the same time by the lexicon, never only a near one."""
    low = word.lower()
    if low not in TIME_WORDS or low in _GENERIC_TIME or stem(low) in st.stems:
        return True
    return any(
        w in TIME_WORDS
        and (
            lexicon.synonymous(low, w)
            or (not strict and word_similarity(low, w) >= PREDICATE_MIN and not lexicon.siblings(low, w))
        )
        for w in st.words
    )  # "autumn" is the fall; "June" is not August


def _instance(focus: str, word: str, question: Question, st: Statement) -> bool:
    """The statement names a member of the kind asked for ("which dish" → "lasagna", "what subject" → "chemistry"):
    a word the question does not say, close enough to the kind, in a statement close to the question as a whole.
    A kind that is itself one thing of a known kind ("which university") must be said, never stood in for."""
    new = [w for w in st.words if stem(w) not in question.stems]
    if not new:
        return False
    if lexicon.known(word) and any(lexicon.is_a(w, word) for w in new):
        return True  # the lexicon knows "lasagna" is a dish, "collie" a dog
    if is_specific(focus) or cosine(question.text, st.text) < INSTANCE_SENTENCE_MIN:
        return False
    return max(word_similarity(word.lower(), w) for w in new) >= INSTANCE_MIN


def _measured(word: str) -> bool:
    """A kind of answer that is a property or a quantity ("colour", "hours", "salary"), not a thing with a name."""
    return any(lexicon.is_a(word, kind, first=2, general=True) for kind in ("attribute", "measure", "magnitude"))


def _focus_named(f: str, word: str, question: Question, st: Statement, alias: dict[str, set[str]]) -> bool:
    """The statement names the kind of answer asked for ("which *dish*"): the word itself, a synonym, a member
    of the kind (the lexicon knows "lasagna" is a dish, a greyhound a dog), or a name when a name can be one.
    A property or quantity asked for ("what colour", "what salary") needs a member or a figure, never a name."""
    taken = frozenset(question.stems)
    new = [w for w in st.words if stem(w) not in question.stems]
    others = [question.words.get(s, s) for s in question.heads + question.objects if s != f]  # "our *dog*"
    if any(lexicon.synonymous(word, w, first=2, first_b=1) or lexicon.is_a(w, word) for w in new) or any(
        lexicon.is_a(w, o) for w in new for o in others
    ):  # "what breed is our dog": a greyhound
        return True
    if _measured(word):  # a figure; for an attribute ("size") only where the statement names it too
        return bool(re.search(r"\d", st.text)) and (
            f in st.stems or not lexicon.is_a(word, "attribute", first=2, general=True)
        )
    return (
        _match(f, word, st, alias, taken=taken) >= 0.55
        or _instance(f, word, question, st)
        or (not is_specific(f) and bool(set(proper_names(st.text)) - set(question.words.values())))
    )


_CHAIN = re.compile(r"(?i)\b[\w-]+(?:'s\s+[\w-]+)+")


def _person_word(st: Statement) -> str:
    """The word the statement names its person by ("mother-in-law"), or its stem when no word has it."""
    return next((w for w in st.words if stem(w) == st.about), st.about)


def _chain_is(question: Question, st: Statement) -> bool:
    """A person asked about through a chain of possessives ("my wife's mum") that the statement names in one word
    ("my mother-in-law"): the chain and the word mean the same by MiniLM (a phrase, not a list of kin terms)."""
    said = _person_word(st)
    if st.about == "user" or not re.search(rf"\b{re.escape(said.lower())}\b", st.text):
        return False  # the user, or a person named ("Aurelio"), never stands for "Aurelio's brother"
    chains = [
        " ".join(toks[:n]).removesuffix("'s")
        for toks in (m.group(0).replace("’", "'").split() for m in _CHAIN.finditer(question.text))
        for n in range(2, len(toks) + 1)
        if stem(toks[n - 1].removesuffix("'s")) in question.heads
    ]  # "my wife's mum's name": "wife's mum"
    return any(
        cosine(chain.lower(), said.lower()) >= PHRASE_MIN and stem(said) not in {stem(w) for w in chain.split()}
        for chain in chains
    )


def _object_is_person(question: Question, st: Statement) -> bool:
    """ "where do my *folks* live": the thing asked about is the person the statement is about, in other words."""
    said = _person_word(st).lower()
    return any(
        (word_similarity(word, said) >= OBJECT_MIN or lexicon.synonymous(word, said))  # "nan": a grandmother
        and any(lexicon.is_a(word, kind, general=True) for kind in ("person", "people"))
        for word in (question.words.get(o, o).lower() for o in question.objects)
    )


def _head_near(phrase: str, st: Statement, taken: frozenset[str]) -> bool:
    """The head noun of a phrase asked about ("our holiday *hut*") is near a word of the statement ("cabin"), one
    that is not another thing of the same close kind (a "series" is no "movie")."""
    toks = phrase.split()
    head = toks[-1] if len(toks) > 1 else ""
    return bool(head) and any(
        word_similarity(head, w) >= OBJECT_MIN and not lexicon.siblings(head, w)
        for w in st.words
        if stem(w) not in taken
    )


@dataclass
class Scored:
    """A statement with its coverage of the question, its similarity and the combined rank."""

    statement: Statement
    coverage: float
    similarity: float
    rank: float


def judge(
    question: Question, st: Statement, alias: dict[str, set[str]], lenient: bool = False
) -> tuple[Scored | None, str]:
    """Whether `st` may answer `question`: (scored, "ok"), or (None, the reason it may not). `lenient` (the second
    reading, see `second_reading`): the thing asked about may be named by a word near the head noun of its phrase
    ("our holiday *hut*": a cabin), a person by a word meaning a chain of possessives ("my wife's mum": my
    mother-in-law), and a statement that meets one word of the question besides the person asked about is enough;
    every other check still holds."""
    qwords = question.words
    taken = frozenset(question.stems)
    if any(_match(h, qwords.get(h, h), st, alias, strict=True) < 1.0 for h in question.heads) and not (
        lenient and _chain_is(question, st)
    ):
        return None, "other person"  # not about the person asked about
    if question.about_user and st.about != "user" and question.kind != "person":
        return None, "not the user"  # about someone else (the user's sister), the question is about the user
    if (
        question.mine
        and st.about in PERSON_STEMS
        and question.kind != "person"
        and not (lenient and _object_is_person(question, st))
    ):
        return None, "not the user"  # "what's my job": the husband's job is not the user's
    close = cosine(question.text, st.text) >= SEMANTIC_MIN  # the sentences as a whole agree
    if any(
        _match(o, qwords.get(o, o), st, alias, taken=taken) < 0.55
        and not any(is_kind_of(s, k) for s in st.stems for k in synonyms(o))  # "my occupation": a dentist
        and not _phrase_said(question.phrases.get(o, ""), st)
        and not (close and _match(o, qwords.get(o, o), st, alias, taken=taken, floor=OBJECT_MIN) >= OBJECT_MIN)
        and not (lenient and _head_near(question.phrases.get(o, ""), st, taken))
        and not (lenient and _object_is_person(question, st))
        for o in question.objects
    ):
        return None, "other thing"  # not about the thing asked about
    owned = {stem(w) for w in _OWNED.findall(st.text)}  # "our *eldest*", "my *bike*": the thing the statement is about
    if any(other_member(o, owned) for o in question.objects) or any(
        other_member(q, {stem(w) for w in st.words if word_similarity(qwords.get(q, q).lower(), w) < 0.7})
        for q in question.stems
        if q not in st.stems and not any(related(q, s) for s in st.stems)
    ):
        return None, "sibling"  # asked about one thing of a kind (wine), the statement is about another (tea)
    if any(not _focus_named(f, qwords.get(f, f), question, st, alias) for f in question.focus):
        return None, "no focus"  # "which university": the statement names none
    if any(
        _match(f, qwords.get(f, f), st, alias, taken=taken) < 0.55
        and not _head_said_modifier_close(question.phrases.get(f, ""), st)
        for f in question.specific
    ):
        return None, "no specific"
    if any(is_kind_of(q, _SECRET) for q in question.stems) and not any(is_kind_of(s, _SECRET) for s in st.stems):
        return None, "other attribute"  # "the *combination* for my locker": the locker's number does not open it
    modifiers = {stem(w) for p in question.phrases.values() for w in p.split()}  # "my *morning* brew" is no occasion
    if question.kind != "time" and any(
        not _time_met(qwords.get(q, q), st, strict=lenient) for q in question.stems if q not in modifiers
    ):
        return None, "other occasion"  # "where are we going at Christmas": a plan for another time is not it
    if lenient and _PRESENT_ASKED.search(question.text) and _PAST_STATE.search(st.text):
        return None, "another time"  # second reading: "which town do I call home": where they were born is not it
    if cues.CLOCK_ASKED.search(question.text) and not cues.CLOCK.search(st.text):
        return None, "no clock time"  # "what time is my appointment": the day it moved to is not the time
    if cues.DATE_ASKED.search(question.text) and not cues.DAY_OF_MONTH.search(st.text):
        return None, "no date"  # "on which date is the wedding": "next summer" is no date
    if cues.REASON_ASKED.search(question.text) and not cues.REASON.search(st.text):
        return None, "no reason"  # "why did Tomás give up meat": "Tomás is vegetarian" gives none
    if (
        cues.MAKE_ASKED.search(question.text)
        and not re.search(r"\b[a-z]+[A-Z]\w*", st.text)
        and not [n for n in proper_names(st.text) if n.lower() not in TIME_WORDS and n not in question.text]
    ):
        return None, "no make"  # "what make is my laptop": "about six years old" names none
    if not question.stems:
        return None, "empty question"
    if cues.opposed(question, st):
        return None, "opposite"  # "what breed is our new puppy": the old dog is another animal
    if cues.UNSURE.search(st.text) and not cues.HEDGED.search(question.text):
        return None, "unsure"  # "a hair appointment next week, can't remember which day": it does not know either
    if (
        cues.NOWADAYS.search(question.text) and cues.NO_LONGER.search(st.text) and not cues.NOWADAYS.search(st.text)
    ) or (cues.LATER.search(question.text) and cues.PAST_EVENT.search(st.text) and not cues.LATER.search(st.text)):
        return None, "another time"  # "my favourite sport nowadays" / "I used to love skiing"; "next" / "last year"
    if cues.figure_asked(question) and not cues.figure_said(question, st):
        return None, "no figure"  # "the booking reference", "what salary": a figure or a code, not a name
    if any(not cues.owned_by_user(h, st) for h in question.mine_heads):
        return None, "someone else's"  # "what's my dog called": the neighbours' dog is not it
    if (
        cues.PREFERENCE.search(question.text)
        and not cues.NEGATIVE.search(question.text)
        and cues.NEGATIVE.search(st.text)
    ):
        return None, "opposite feeling"  # asked what they like; the statement says what they avoid or dislike
    important = set(question.heads) | set(question.objects) | set(question.focus) | set(question.weighted)
    weights = [2.0 if s in important else 1.0 for s in question.stems]
    matches = [_match(s, qwords.get(s, s), st, alias, strict=s in question.heads, taken=taken) for s in question.stems]
    matches = [
        max(m, 0.9) if s in question.focus and _instance(s, qwords.get(s, s), question, st) else m
        for s, m in zip(question.stems, matches)
    ]  # "which dish" met by "lasagna" counts like "what music": jazz
    matches = [
        max(m, 0.8) if s in question.phrases and _phrase_said(question.phrases[s], st) else m
        for s, m in zip(question.stems, matches)
    ]  # "my childhood" said as "grew up"
    coverage = sum(w * m for w, m in zip(weights, matches)) / sum(weights)
    similarity = cosine(question.text, st.text)
    exclude = (
        set(question.stems) | {a for h in question.heads for a in alias.get(h, ())}
        if question.kind not in ("name", "person")
        else set(question.stems)
    )
    if not has_answer_type(question.kind, st.text, exclude) and not (
        question.kind == "place" and similarity >= POSITION_MIN
    ):
        return None, "no answer type"
    if not set(st.stems) - set(question.stems) - {"not"}:
        return None, "nothing new"  # says nothing the question does not already say
    missed = sum(m == 0.0 for m in matches)
    # the best match among words other than the person asked about: "what does she do for *work*" needs work said
    said_more = max((m for s, m in zip(question.stems, matches) if s not in question.heads), default=0.0)
    if (lenient and (said_more > 0 or _chain_is(question, st) or _object_is_person(question, st))) or (
        (coverage >= 0.5 and (missed == 0 or similarity >= 0.35))
        or (similarity >= 0.45 and coverage >= 0.3)
        or similarity >= SEMANTIC_MIN
        or (coverage >= 0.3 and similarity >= 0.2 and said_more >= 0.5)
    ):
        # a paraphrase in other words ("come into the world" / "born"); once every check above has passed, a
        # statement that covers a third of the question and is near it in meaning answers (tuning parts A-E)
        return Scored(st, coverage, similarity, coverage + similarity), "ok"
    return None, f"weak match (coverage {coverage:.2f}, similarity {similarity:.2f})"


def rank(question: Question, statements: list[Statement]) -> list[Scored]:
    """Statements that may answer `question`, best first (all checks passed)."""
    alias = aliases(statements)
    out = [scored for scored, _ in (judge(question, st, alias) for st in statements) if scored is not None]
    out.sort(key=lambda s: (-s.rank, -s.statement.order))
    return out


_PRESENT_ASKED = re.compile(
    r"(?i)^\W*(?:\w+\s+){0,3}?(?:do|does|am|is|are)\b|\b(?:now|nowadays|these days|currently|at present|at the moment)\b"
)  # a question about how things are now
_PAST_STATE = re.compile(
    r"(?i)\b(?:was|were|grew up)\b|" + cues.NO_LONGER.pattern.removeprefix("(?i)")
)  # how they were
