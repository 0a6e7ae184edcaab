"""Plumbing: words for the offline model: sentences, stems, answer types.

Everything here is generic English handling (no knowledge of any script): a light suffix stemmer and
detectors for the kind of word a question asks for (a time, a number, a place, a name). The synonym groups
for common verbs and question words, and the words for the same person, are helpers.offline.synonyms.
"""

from __future__ import annotations

import functools
import re

__all__ = [
    "WORD",
    "sentences",
    "words",
    "stem",
    "content_stems",
    "STOPWORDS",
    "PERSON_NOUNS",
    "has_answer_type",
    "proper_names",
    "TIME_WORDS",
]

WORD = re.compile(r"[A-Za-z0-9$€£][A-Za-z0-9$€£'’:.,/-]*[A-Za-z0-9]|[A-Za-z0-9]")

STOPWORDS = frozenset(
    "a an the and or but if then so to of in on at for with about from by as is are was were be been being am "
    "i i'm i've i'd i'll me my mine myself you you're your yours we we're our ours us it it's its this that these "
    "those what what's which who who's whom whose when where where's why how do does did done can could should would "
    "will shall may might must have has had not no yes please tell give some any more most very just also really "
    "there here than too much many few get got let lets let's ok okay hi hello hey thanks thank "
    "going go good nice things thing something anything into over again remind remember know recall "
    "told tell said say mention mentioned by way btw oh well actually anyway he she his her him they them their "
    "user user's users the user's you've you'd you'll don't doesn't didn't am is isn't aren't wasn't "
    "up out off all one ever still now currently each every".split()
)

# Words that name people (or animals) in someone's life: the subject of "my sister ... she".
PERSON_NOUNS = frozenset(
    "sister brother mother father mom mum dad mommy daddy parent parents wife husband partner spouse son daughter "
    "child children kid kids baby friend friends cousin aunt uncle niece nephew grandmother grandfather grandma "
    "grandpa granddaughter grandson boss manager colleague coworker co-worker roommate flatmate neighbor neighbour "
    "boyfriend girlfriend fiance fiancee fiancé fiancée twin stepmother stepfather stepson stepdaughter teacher "
    "doctor dentist therapist coach mentor landlord assistant dog cat puppy kitten pet horse bird parrot rabbit "
    "hamster sibling siblings in-law mother-in-law father-in-law sister-in-law brother-in-law gran granny "
    "nana grandparents grandparent pup doggy kitty pal buddy supervisor wives husbands daughters sons sisters brothers "
    "cousins nieces nephews aunts uncles friends parents kids grandad granddad boy girl".split()
)

# Phrasal verbs and idioms of everyday English, read as the one word they mean.
_PHRASES = [
    (re.compile(rf"(?i)\b{k}\b"), v)
    for k, v in {
        r"turns? in|turned in|turning in": "bed",
        r"cut(?:s|ting)? (?:back|down)": "reduce",
        r"steer(?:s|ing)? clear|keep(?:s|ing)? away|stay(?:s|ing)? away": "avoid",
        r"stop(?:s|ped)? work(?:ing)?|give up work(?:ing)?": "retire",
        r"get(?:ting)? married|tie the knot": "marry",
        r"on call": "on-call",
        r"(?:make|makes|earn|earns|do|does|did)?\s*for a living": "job",
        r"keep(?:s|ing)? (?:it |them )?out": "avoid",
        r"leave (?:it|them) out": "avoid",
    }.items()
]


def phrasal(text: str) -> str:
    """Phrasal verbs replaced by the word they mean ("turn in" → "bed", "cut back on" → "reduce on")."""
    for rx, word in _PHRASES:
        text = rx.sub(word, text)
    return text


_IRREGULAR = {
    "lives": "live",
    "lived": "live",
    "living": "live",
    "went": "go",
    "gone": "go",
    "ate": "eat",
    "eaten": "eat",
    "children": "child",
    "kids": "kid",
    "wives": "wife",
    "people": "person",
    "men": "man",
    "women": "woman",
    "born": "born",
    "flew": "fly",
    "flown": "fly",
    "flies": "fly",
    "drove": "drive",
    "driven": "drive",
    "spoke": "speak",
    "spoken": "speak",
    "met": "meet",
    "left": "leave",
    "paid": "pay",
    "bought": "buy",
    "got": "get",
    "made": "make",
    "took": "take",
    "taken": "take",
    "has": "have",
    "had": "have",
    "is": "be",
    "was": "be",
    "were": "be",
    "are": "be",
    "am": "be",
    "does": "do",
    "did": "do",
    "studies": "study",
    "studied": "study",
    "allergies": "allergy",
    "favourite": "favorite",
    "colour": "color",
    "colours": "color",
    "neighbour": "neighbor",
    "mum": "mom",
    "moved": "move",
    "moving": "move",
    "called": "call",
    "named": "name",
    "worked": "work",
    "working": "work",
    "works": "work",
    "stays": "stay",
    "stayed": "stay",
    "staying": "stay",
    "married": "marry",
    "booked": "book",
    "reserved": "reserve",
    "reservations": "reservation",
}


@functools.lru_cache(maxsize=1 << 16)  # pure; the reader stems the same words of every candidate again
def stem(word: str) -> str:
    """A light stem: 'lives', 'living', 'lived' → 'liv'; 'sister's' → 'sister'."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'.,:")
    w = _IRREGULAR.get(w, w)
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls":
            w = w[:-1]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2] if not w.endswith("eed") else w[:-1]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls":
            w = w[:-1]
    elif len(w) > 4 and w.endswith(("ches", "shes", "xes", "sses")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def sentences(text: str) -> list[str]:
    """Split text into sentences (and lines); keeps the end punctuation."""
    out: list[str] = []
    for line in text.replace("’", "'").splitlines():
        for piece in re.split(
            r"(?<!\bSt\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMt\.)(?<!\bCo\.)(?<!\bMrs\.)"
            r"(?<!\bJr\.)(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])",
            line.strip(),
        ):
            piece = piece.strip()
            if piece:
                out.append(piece)
    return out


def words(text: str) -> list[str]:
    """Word tokens (times like 7:45pm, codes like UA-1432 and $200 stay whole)."""
    return [w.rstrip(".,:") or w for w in WORD.findall(text.replace("’", "'"))]


def content_stems(text: str) -> list[str]:
    """Stems of the words that carry meaning (stopwords dropped), in order, unique."""
    return list(_content_stems(text))


@functools.lru_cache(maxsize=100_000)  # pure; the summariser compares every kept fact with every new one
def _content_stems(text: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for w in words(phrasal(text)):
        lw = w.lower()
        if lw in STOPWORDS:
            continue
        s = stem(lw)
        if s and s not in STOPWORDS:
            seen.setdefault(s, None)
    return tuple(seen)


_MONTHS = "january february march april may june july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec"
_DAYS = "monday tuesday wednesday thursday friday saturday sunday weekend weekday"
TIME_WORDS = _TIME_WORDS = frozenset(
    (
        _MONTHS + " " + _DAYS + " tomorrow tonight today yesterday morning afternoon evening night noon "
        "midnight o'clock am pm week weekend month year spring summer autumn fall winter christmas birthday "
        "dawn dusk sunrise sunset"
    ).split()
)
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand million dozen half couple few several".split()
)
_DATED = frozenset(
    "day eve easter christmas hanukkah diwali ramadan thanksgiving halloween new-year".split()
)  # "Valentine's Day"
_ORDINALS = frozenset(
    "first second third fourth fifth sixth seventh eighth ninth tenth".split()
)  # which year, not how many
_PLACE_PREP = re.compile(r"\b(?:in|at|near|to|from|on|by|outside|inside|downtown|abroad|overseas)\b", re.I)


def proper_names(text: str) -> list[str]:
    """Capitalised words that are not the first word of the text and not 'I'."""
    toks = words(text)
    out = []
    for i, w in enumerate(toks):
        if i == 0 or w in ("I", "I'm", "I've", "I'd", "I'll") or not w[:1].isupper():
            continue
        out.append(w)
    return out


PERSON_STEMS = frozenset(stem(p) for p in PERSON_NOUNS)  # stems of the words that name people ("sister", "mom")
# a time after a preposition ("in March", "on Friday"): a when, not a where
_AT_A_TIME = re.compile(
    r"(?i)\b(?:in|on|at|by|from|to)\s+(?:the\s+)?(?:" + "|".join(sorted(_TIME_WORDS, key=len, reverse=True)) + r")s?\b"
)


def has_answer_type(kind: str, text: str, exclude: set[str]) -> bool:
    """Whether `text` holds a word of the kind a question asks for, other than words in `exclude` (stems)."""
    toks = [w for w in words(text) if stem(w) not in exclude]
    lower = [w.lower() for w in toks]
    if kind == "time":
        return any(
            any(ch.isdigit() for ch in w)
            or w in _TIME_WORDS
            or w.removesuffix("s") in _TIME_WORDS  # "on Fridays", "in the mornings"
            or w in _ORDINALS
            or w in _DATED
            or any(p in _NUMBER_WORDS for p in w.split("-"))
            for w in lower
        )
    if kind == "number":
        return any(any(ch.isdigit() for ch in w) or any(p in _NUMBER_WORDS for p in w.split("-")) for w in lower)
    if kind == "name":
        places = {m.group(1) for m in re.finditer(r"\b(?:in|at|from|to|near)\s+([A-Z][\w'-]*)", text)}
        return any(
            w[:1].isupper()
            and w.lower().removesuffix("s") not in _TIME_WORDS
            and w not in places
            and stem(w) not in PERSON_STEMS
            for i, w in enumerate(toks)
            if i > 0 and w not in ("I", "I'm")
        )  # "in March", "in Kraków", "Dad's" name nobody asked for
    if kind == "person":
        return any(
            (w[:1].isupper() and i > 0 and w not in ("I", "I'm")) or lw in PERSON_NOUNS
            for i, (w, lw) in enumerate(zip(toks, lower))
        )
    if kind == "place":
        names = [n for n in proper_names(text) if n.lower().removesuffix("s") not in _TIME_WORDS]
        return bool(_PLACE_PREP.search(_AT_A_TIME.sub("", text))) or any(stem(n) not in exclude for n in names)
    return True
