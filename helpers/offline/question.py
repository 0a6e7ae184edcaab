"""Plumbing: reading a question: what it asks about and what kind of answer it wants."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from helpers.offline import lexicon
from helpers.offline.kinds import is_kind_of
from helpers.offline.language import PERSON_STEMS, STOPWORDS, TIME_WORDS, content_stems, stem, words

__all__ = ["Question", "read_question", "is_question", "split_clauses", "question_parts", "PERSON_STEMS", "ROLE_STEMS"]

# people by their role: "my dentist appointment" is about an appointment, "my sister's car" about the sister's car
ROLE_STEMS = frozenset(
    stem(p)
    for p in "dentist doctor therapist coach teacher mentor landlord assistant boss manager "
    "colleague coworker team family".split()
)


@dataclass
class Question:
    """What a question asks: content stems, what it is about, the kind of answer wanted."""

    text: str
    stems: list[str]
    kind: str  # "time" | "number" | "place" | "person" | "name" | "any"
    heads: list[str]  # person stems the statement must name ("sister" in "where does my sister live", "priya")
    objects: list[str]  # the thing asked about ("class" in "when does my pottery class start"): must match closely
    focus: list[str]  # the kind of answer named ("which *university*", "what *bird*"): said, or a member of it
    about_user: bool  # asks about the user themself ("where do I live")
    personal: bool  # about the user or their people/things at all
    advice: bool  # asks for a recommendation ("what should I ...")
    words: dict[str, str] = field(default_factory=dict)  # stem → the word the question used
    weighted: list[str] = field(default_factory=list)  # words of "what's the X Y": count double, not required
    specific: list[str] = field(default_factory=list)  # "which *football* team": must be said
    mine: bool = False  # asks about something of the user's ("my job"), so not about a person of theirs
    mine_heads: list[str] = field(default_factory=list)  # people/pets asked about as the user's own ("*my* dog")
    phrases: dict[str, str] = field(default_factory=dict)  # object stem → its noun phrase ("brew" → "morning brew")


_QWORDS = {
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "where",
    "why",
    "how",
    "do",
    "does",
    "did",
    "is",
    "are",
    "am",
    "was",
    "were",
    "can",
    "could",
    "should",
    "would",
    "will",
    "have",
    "has",
    "any",
    "tell",
    "remind",
    # words that frame a question rather than carry its meaning
    "kind",
    "sort",
    "type",
    "use",
    "keep",
    "follow",
    "need",
    "see",
    "seeing",
    "take",
    "make",
    "want",
    "usually",
    "normally",
    "exactly",
    "currently",
    "find",
    "happen",
    "exact",
    "particular",
    "specific",
}
_ADVICE = re.compile(
    r"\b(?:should|could|recommend|suggest|worth|ideas?|tips?|advice|can (?:i|we|you)|any|best|good|"
    r"nice|is there|are there|how do (?:i|we) get)\b",
    re.I,
)
_STRONG_ADVICE = re.compile(
    r"\b(?:should (?:i|we)|could (?:i|we)|recommend|suggest|worth|ideas?|tips?|advice|"
    r"can (?:i|we|you))\b",
    re.I,
)
STOPWORDS_Q = frozenset(
    "is are was were do does did to at in on for of and with from by be been have has had go get "
    "live lives work works like called named name start starts begin begins".split()
)
_PERSONAL = re.compile(
    r"\b(?:my|our|me|mine|ours)\b|\b(?:do|did|am|was|have|had|does|is|were|are|should|can|could|"
    r"would|will|must|shall|may|might)\s+(?:i|we)\b|"
    r"\b(?:i|we)\s+(?:told|said|mentioned)\b",
    re.I,
)


def is_question(sentence: str) -> bool:
    """A question: ends with '?' or starts with a question word."""
    s = sentence.strip()
    if s.endswith("?"):
        return True
    first = (words(s)[:1] or [""])[0].lower()
    return first in ("what", "what's", "where", "where's", "when", "who", "who's", "which", "how") or bool(
        re.match(r"(?i)(?:do|does|did|can|could|would|will|is|are|am)\s+(?:you|i|we|my)\b", s)
    )


def split_clauses(sentence: str) -> list[str]:
    """Clauses of a sentence that each have their own subject ("..., and she is a nurse")."""
    parts = re.split(
        r"(?:,\s*|\s+)(?:and|but)\s+(?=(?:I|I'm|I've|we|we're|we've|she|he|they|my|our|"
        r"it)\b)|;\s*",
        sentence,
    )
    return [p.strip(" ,.") for p in parts if p and p.strip(" ,.")]


_PART_START = (
    r"(?:what|what's|which|who|who's|whom|whose|when|where|where's|why|how|"
    r"(?:do|does|did|is|are|am|was|were|can|could|should|will|would|have|has)\s+(?:i|we|you|my|our|the|he|she|they)\b)"
)
_PART_SPLIT = re.compile(rf"(?i)\s*(?:,\s*(?:and|but|or)\s+|\s+(?:and|but)\s+|;\s*(?:and\s+)?|,\s+)(?={_PART_START})")


def question_parts(question: str) -> list[str]:
    """The separate questions in one ("what is my name, and where do I live?" → two); one part if it is one."""
    body = question.strip()
    end = "?" if body.endswith("?") else ""
    parts = [p.strip(" ,;?") for p in _PART_SPLIT.split(body.rstrip("?"))]
    parts = [p for p in parts if p]
    if len(parts) < 2 or not all(re.match(rf"(?i){_PART_START}", p) for p in parts):
        return [question]
    return [p + end if end else p for p in parts]


def _kind(question: str) -> str:
    q = question.lower().replace("’", "'")
    # "what was grandpa's job when he was a sailor", "where do I sit when flying": the leading question word decides,
    # not one in a later clause
    q = re.sub(
        r"^(\W*(?:(?:in|at|on|from|to|for|with|by)\s+)?(?:what|which|where|who|whom|how)\b.*?)\s"
        r"(?:when|where|while|who)\b.*$",
        r"\1",
        q,
    )
    if re.search(r"\bhow often\b", q):
        return "time"
    if re.search(r"\bhow (?:many|much|old|long|far|tall|big)\b|\bwhat (?:number|amount|age|percentage)\b", q):
        return "number"
    if re.search(r"\bwhen\b|\bwhat (?:time|day|date|year|month)\b|\bwhich (?:day|date|month|year)\b", q):
        return "time"
    if re.search(r"\bwhere\b|\b(?:what|which) (?:city|town|country|place|neighbou?rhood|street|address)\b", q):
        return "place"
    if re.search(r"\bwho\b|\bwhom\b", q):
        return "person"
    if re.search(r"\bname\b|\bcalled\b", q):
        return "name"
    return "any"


_DROP_FOR = {
    "time": {"time", "day", "date", "year", "month", "often"},
    "number": {"number", "many", "much", "old", "long", "far", "amount", "age"},
    "place": {"city", "town", "country", "place"},
    "person": set(),
    "name": set(),
    "any": set(),
}
_AUX = {
    "do",
    "does",
    "did",
    "is",
    "are",
    "am",
    "was",
    "were",
    "will",
    "would",
    "can",
    "could",
    "should",
    "have",
    "has",
    "had",
    "i",
    "we",
    "my",
    "our",
    "you",
    "they",
}
# "what size shirt", "what colour car": the answer is the attribute, of the thing named after it
_ATTRIBUTES = {"size", "colour", "color", "brand", "make", "model", "shade", "length", "height", "weight"}
_VAGUE_HEADS = {
    "go-to",
    "favorite",
    "favourite",
    "own",
    "new",
    "old",
    "current",
    "usual",
    "first",
    "last",
    "main",
    "best",
    "whole",
    "next",
    "little",
    "big",
    "older",
    "younger",
    "only",
    "late",
    "dear",
    "place",
    "thing",
    "stuff",
    "one",
    "ones",
}


def read_question(text: str) -> Question:
    """Read a question: stems to match, the things it is about, the kind of answer."""
    kind = _kind(text)
    drop = {stem(w) for w in _DROP_FOR[kind]} | {stem(w) for w in _QWORDS}
    stems = [s for s in content_stems(text) if s not in drop]
    heads: list[str] = []
    mine_heads: list[str] = []
    objects: list[str] = []
    phrases: dict[str, str] = {}
    for m in re.finditer(r"\b(?:my|our)\s+((?:[\w'-]+\s*){1,3})", text.replace("’", "'"), re.I):
        phrase: list[str] = []
        for w in m.group(1).split():
            bare = w.lower()
            if bare in STOPWORDS_Q:
                break
            phrase.append(bare)
            if bare.endswith("'s"):
                break
        phrase = [w for w in phrase if w not in _VAGUE_HEADS]
        people = [
            stem(w)
            for i, w in enumerate(phrase)
            if stem(w) in PERSON_STEMS and (i == len(phrase) - 1 or w.endswith("'s") or stem(w) not in ROLE_STEMS)
        ]
        if people:
            heads.append(people[0])
            mine_heads.append(people[0])
        else:
            things = [w for w in phrase if stem(w) not in PERSON_STEMS]
            if things:  # "my passport number": the first word narrows it; the phrase may be said in other words
                objects.append(stem(things[0]))
                phrases[stem(things[0])] = " ".join(things)
    for m in re.finditer(r"(?i)\b[a-z-]+'s\s+([a-z-]+)(?:\s+([a-z-]+))?", text.replace("’", "'")):
        person = [w for w in m.groups() if w and stem(w) in PERSON_STEMS]
        if person:
            heads.append(stem(person[0]))  # "Marisol's *husband*": the person asked about is the husband
    for m in re.finditer(
        r"\b([a-z-]+)'s\b|\b(mum|mom|dad|grandma|grandpa|gran|granny|nana|grandad|granddad)\b",
        text.replace("’", "'"),
        re.I,
    ):
        if stem(m.group(1) or m.group(2)) in PERSON_STEMS:
            heads.append(stem(m.group(1) or m.group(2)))  # "mum's birthday", "grandpa's job": the user's people
    specific: list[str] = []
    for m in re.finditer(r"(?=\b([a-z-]+)'s\s+([a-z-]+)\s+([a-z-]+)\b)", text.replace("’", "'"), re.I):
        if (
            stem(m.group(1)) not in PERSON_STEMS
            and m.group(1).lower() not in _QWORDS | STOPWORDS
            and m.group(2).lower() not in STOPWORDS
            and m.group(3).lower() not in _AUX | STOPWORDS
        ):
            specific.append(stem(m.group(2)))  # "the hotel's *phone* number": that very number, not the room's
            phrases.setdefault(stem(m.group(2)), f"{m.group(2)} {m.group(3)}".lower())
    toks = words(text)
    for i, name in enumerate(toks):
        neighbours = [t for t in toks[max(0, i - 1) : i + 2] if t != name and t[:1].isupper() and lexicon.known(t)]
        if name.isupper() and len(name) > 1 or (lexicon.known(name) and neighbours and i > 0):
            continue  # "my library card ID", "my National Insurance number": a term, not a person asked about
        if (
            i > 0
            and name[:1].isupper()
            and name not in ("I", "I'm")
            and name.lower() not in _QWORDS
            and not is_kind_of(stem(name), stem("language"))
            and name.lower() not in STOPWORDS
            and name.lower() not in TIME_WORDS
        ):
            heads.append(stem(name))
    heads = [h for h in dict.fromkeys(heads) if h]
    objects = [o for o in dict.fromkeys(objects) if o and o not in heads]
    about_user = not heads and bool(re.search(r"\b(?:i|me|we|us|i'm|i've)\b", text, re.I))
    mine = not heads and bool(re.search(r"\b(?:my|our|mine)\b", text, re.I))  # "what's my job": mine, not the husband's
    personal = (
        bool(_PERSONAL.search(text))
        or bool(heads)
        or bool(re.search(r"\b(?:us|i|we|i'm|we're)\b", text, re.I))
        or (bool(re.search(r"\bthe\b", text, re.I)) and not _ADVICE.search(text))
    )
    # "am I allergic to any nuts" asks about the user, not for advice: only a strong cue makes a personal question advice
    advice = bool(_STRONG_ADVICE.search(text)) or (bool(_ADVICE.search(text)) and not personal)
    vocab = {stem(w): w for w in words(text)}
    focus: list[str] = []
    weighted: list[str] = []
    m = re.match(
        r"(?i)\s*(?:what|which)(?:'s)?\s+(?:(?:kind|sort|type|make|model|brand) of\s+)?((?:[a-z-]+\s+){0,2})"
        r"([a-z']*)",
        text,
    )
    if m:
        noun = []
        for w in [w for w in m.group(1).split() if not w.lower().endswith("'s")]:  # "Ewan's favourite film"
            if w.lower() in STOPWORDS or w.lower() in _QWORDS:
                break
            noun.append(w)
        after = (m.group(1).split()[len(noun) :] or [m.group(2)])[0].lower()
        if len(noun) > 1 and after not in _AUX:
            noun = noun[:-1]  # "which seafood *gives* me": a verb follows the noun, it is not part of it
        if noun and noun[0].lower() in _ATTRIBUTES and len(noun) > 1:
            specific.append(stem(noun[1]))  # "what size *shirt*": the answer is a size, of that very thing
            noun = noun[:1]
        for w in noun[:-1]:
            if stem(w) in stems and w.lower() not in _VAGUE_HEADS and not is_kind_of(stem(w), stem("language")):
                specific.append(stem(w))  # "which *football* team", "which *high* school": that very thing is said
                phrases.setdefault(stem(w), " ".join(noun).lower())
        if noun and stem(noun[-1]) in stems and stem(noun[-1]) not in heads:
            focus.append(stem(noun[-1]))
    m = re.match(
        r"(?i)\s*what(?:'s| is| are| was)\s+the\s+((?:[\w'-]+\s+){0,3}?[\w'-]+)\s*(?:\?|$|\b(?:for|of|at|in|on|"
        r"to|with|from|that|do|does|did|is|are)\b)",
        text,
    )
    if m:
        for w in m.group(1).split():
            if (
                not w.lower().endswith("'s")
                and w.lower() not in STOPWORDS
                and w.lower() not in _QWORDS
                and stem(w) not in heads
                and stem(w) in stems
            ):
                weighted.append(stem(w))
    return Question(
        text,
        stems,
        kind,
        heads,
        list(dict.fromkeys(objects)),
        focus,
        about_user,
        personal,
        advice,
        vocab,
        weighted,
        specific,
        mine,
        list(dict.fromkeys(mine_heads)),
        phrases,
    )


# ------------------------------------------------------------------------------------------ statements
