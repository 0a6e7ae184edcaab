"""Plumbing: facts by generic means: the user's statements in third person, and when two facts clash.

A fact is any declarative sentence (or clause) in which the user speaks about themself or about the
people and things in their life — "I'm vegetarian", "My sister Priya lives in Pasadena", "We fly
out Tuesday" — rewritten to third person. The assistant's declaratives about the user ("Your table is
booked for 7") count too, and so does what the other side says that concerns the user: a recommendation
("If you're bored, read Circe" → "The assistant recommended that the user read Circe.") or a plan the two
agree ("Let's do the pub quiz on Sunday" → "The user and the assistant agreed to do the pub quiz on Sunday.").
Questions, requests and chit-chat do not.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from helpers.offline.language import content_stems, sentences, stem, words
from helpers.offline.person import first_person, resolve_pronouns, second_to_third, strip_discourse, to_third
from helpers.offline.reader import is_question, split_clauses
from helpers.offline.synonyms import related, synonyms

__all__ = [
    "facts_from_turns",
    "facts_from_text",
    "clash",
    "same_fact",
    "parse_turn_lines",
    "fact_parts",
    "request_of",
    "repeats",
]

_IMPERATIVE = set(
    "tell give show find help let please recommend suggest remind list plan book make send check can "
    "could would will do does did is are any what where when which who how why keep note remember "
    "imagine say explain describe compare sorry thanks thank".split()
)
_CHATTER = {
    stem(w)
    for w in (
        "thank thanks great sound cool awesome sure see wonder question ask help curious know think "
        "guess hope glad happy mean idea sorry okay fine agree interesting love it perfect "
        "excited appreciate worry bother"
    ).split()
}
_ASSISTANT_SUBJECT = re.compile(r"^(?:You(?:'re| are| have|'ve| will be|'ll be| were| live| work)|Your\b)")
# what the other side says that concerns the user: a recommendation to them, a plan the two agreed
_ADVICE_VERBS = r"(?:read|try|go to|pick up|watch|listen to|check out|visit|order|book)"
_RECOMMEND = re.compile(
    r"(?i)^(?:(?:if|for|when)\b[^,]*,\s*)?(?:honestly|just|definitely|seriously)?\s*"
    r"(?P<advice>" + _ADVICE_VERBS + r"\b.+)$"
)
_SUGGEST = re.compile(
    r"(?i)^you\s+(?:should|could|might want to|have to|must)\s+(?P<advice>" + _ADVICE_VERBS + r"\b.+)$"
)
_PLAN = re.compile(r"(?i)^(?:let's|let us|we(?:'ll| will| should| are going to|'re going to))\s+(?P<plan>.+)$")


def _other_side(clause: str) -> str | None:
    """A recommendation to the user or a plan with them, said by the assistant, as a third-person fact."""

    def verb_first(text: str) -> str:  # "Read Circe" → "read Circe" (the clause goes mid-sentence)
        text = second_to_third(text)
        return text[:1].lower() + text[1:]

    for pattern in (_SUGGEST, _RECOMMEND):
        m = pattern.match(clause)
        if m and not re.match(r"(?i)\w+\s+not\b", m["advice"]):
            return _finish(f"The assistant recommended that the user {verb_first(m['advice'])}")
    m = _PLAN.match(clause)
    if m:
        return _finish(f"The user and the assistant agreed to {verb_first(m['plan'])}")
    return None


def parse_turn_lines(text: str) -> list[tuple[str, str]]:
    """`User: …` / `Assistant: …` lines (continuation lines joined) as (role, text) pairs."""
    turns: list[tuple[str, str]] = []
    for line in text.splitlines():
        m = re.match(r"^(User|Assistant):\s?(.*)$", line)
        if m:
            turns.append((m.group(1).lower(), m.group(2)))
        elif turns and line.strip():
            role, prev = turns[-1]
            turns[-1] = (role, prev + "\n" + line)
    return turns


def _stated(clause: str) -> bool:
    text = strip_discourse(clause)
    toks = words(text)
    if len(toks) < 2 or toks[0].lower() in _IMPERATIVE:
        return False
    if not (first_person(text) or re.match(r"(?i)(?:the user|user's)\b", text)):
        return False
    if re.match(r"(?i)^(?:I|we)\s+(?:was|am|'m)?\s*(?:wondering|curious|just asking)\b", text):
        return False
    meaning = [s for s in content_stems(text) if s not in _CHATTER]
    return bool(meaning)


@functools.lru_cache(maxsize=100_000)  # pure; `repeats` finishes the same clauses again and again
def _finish(text: str) -> str:
    text = text.strip().rstrip(",;:")
    text = re.sub(r"\s+", " ", text)
    if not text.endswith((".", "!")):
        text += "."
    return text.rstrip("!") if text.endswith("!") else text


# A standing request to the assistant ("Please don't suggest anything with meat or fish"): kept as a request the
# user made, never as a fact about the user.
_REQUEST = re.compile(
    r"(?i)^(?:please\s+)?(?:(?P<neg>don't|do not|never|please don't)\s+|(?P<always>always)\s+)"
    r"(?P<verb>[a-z]+)\b(?P<rest>.*)$"
)


def request_of(clause: str) -> str | None:
    """ "Please don't suggest meat" → "The user asked the assistant not to suggest meat."; else None."""
    m = _REQUEST.match(strip_discourse(clause).strip())
    if not m or m["verb"].lower() in ("know", "worry", "forget") or len(words(m["rest"])) < 1:
        return None
    action = second_to_third(f"{m['verb']}{m['rest']}")
    action = to_third(action[:1].lower() + action[1:])
    action = action[:1].lower() + action[1:]
    return _finish(f"The user asked the assistant {'not to' if m['neg'] else 'to always'} {action}")


def _pieces(clause: str) -> list[str]:
    """A clause with a request beside a statement ("Don't suggest meat, I'm vegetarian") in its two pieces."""
    parts = [p.strip() for p in re.split(r",\s*(?:so\s+|and\s+|because\s+)?|;\s*", clause) if p.strip()]
    return parts if len(parts) > 1 and any(request_of(p) for p in parts) else [clause]


def facts_from_text(text: str, role: str = "user", other_side: bool = False) -> list[str]:
    """Third-person fact sentences stated in one turn's text (`other_side`: also the assistant's
    recommendations to the user and plans agreed with them)."""
    out: list[str] = []
    kept = [s for s in sentences(text) if not is_question(s)]
    for sentence in resolve_pronouns(kept):
        for whole in split_clauses(sentence):
            for clause in _pieces(strip_discourse(whole)) if role == "user" else [whole]:
                clause = strip_discourse(clause)
                if role == "user":
                    request = request_of(clause)
                    if request:
                        out.append(request)
                    elif _stated(clause):
                        out.append(_finish(to_third(clause)))
                elif _ASSISTANT_SUBJECT.match(clause) and not re.search(
                    r"\b(?:if|can|could|might|maybe|perhaps)\b", clause
                ):
                    out.append(_finish(second_to_third(clause)))
                elif other_side and _other_side(clause):
                    out.append(_other_side(clause))
    return out


def facts_from_turns(turns: list[tuple[str, str]]) -> list[str]:
    """Facts from a list of (role, text) turns: the user's statements, then the assistant's that add something
    (about the user, a recommendation to them, a plan agreed with them)."""
    user = [f for role, text in turns if role == "user" for f in facts_from_text(text, "user")]
    assistant = [f for role, text in turns if role == "assistant" for f in facts_from_text(text, "assistant", True)]
    out = list(dict.fromkeys(user))
    said = set().union(*(content_stems(f) for f in user))
    for fact in assistant:
        if set(content_stems(fact)) <= said:
            continue  # the reply only says back what the user said ("Your name is Maya and your favorite ...")
        if not any(same_fact(fact, have) or set(content_stems(fact)) <= set(content_stems(have)) for have in out):
            out.append(fact)
    return out


# ------------------------------------------------------------------------------------------ clashes

_MULTI = {
    stem(w)
    for w in "like love enjoy hate dislike adore prefer have own visit speak play want collect read "
    "watch listen know allergic afraid interested fond".split()
}
_VERBS = r"(?:is|are|was|were|has|have|had|'s|[a-z]+(?:s|ed))"


@functools.lru_cache(maxsize=100_000)  # pure
def fact_parts(fact: str) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """(subject stems, verb stem, object stems) of a third-person fact: "The user lives in Denver" →
    (("user",), "live", ("denver",))."""
    text = fact.strip().rstrip(".")
    m = re.match(r"(?i)the user's\s+(.+?)\s+(is|are|was|were|has|have|had)\s+(.*)$", text)
    if m:
        subject = tuple(content_stems(m.group(1))) or ("user",)
        return ("user",) + subject, "be", tuple(content_stems(m.group(3)))
    m = re.match(
        r"(?i)the user(?: and their party)?\s+(?:(?:really|also|now|currently|still|usually|just)\s+)*"
        r"(\w+(?:'t)?)\s*(.*)$",
        text,
    )
    if m:
        verb = stem(m.group(1))
        rest = m.group(2)
        if verb in ("be", "have"):
            obj = content_stems(rest)
            if (
                obj
                and re.match(r"(?i)(?:not\s+)?(?:an?\s+|the\s+)?\w+\s+(?:to|of|in|about|with)\b", rest)
                and verb == "be"
            ):
                return ("user",), obj[0], tuple(obj[1:])  # "is allergic to X": the adjective is the relation
            return ("user",), verb, tuple(obj)
        return ("user",), verb, tuple(content_stems(rest))
    stems = content_stems(text)
    return tuple(stems[:1]), "", tuple(stems[1:])


def _negated(text: str) -> bool:
    return bool(re.search(r"\b(?:not|no|never|n't|no longer)\b", text.replace("’", "'"), re.I))


@functools.lru_cache(maxsize=200_000)  # pure; the summariser asks it for every pair of facts it keeps
def same_fact(a: str, b: str) -> bool:
    """The same statement in (almost) the same words: its words match one to one, a synonym counting as a match."""
    sa, sb = set(content_stems(a)), set(content_stems(b))
    if not sa or not sb or _negated(a) != _negated(b):
        return False

    def hit(s: str, other: set[str]) -> bool:  # the same stem, or one in its synonym group
        return s in other or not synonyms(s).isdisjoint(other)

    matched = sum(hit(s, sb) for s in sa) + sum(hit(s, sa) for s in sb)
    return matched / (len(sa) + len(sb)) >= 0.8


def repeats(fact: str, kept: list[str]) -> bool:
    """`fact` says nothing `kept` does not: the same fact, or clauses joined by "and" that each are ("The user's name
    is Maya and the user's favorite color is teal" beside both of them)."""
    parts = [p for p in re.split(r"(?i),?\s+and\s+(?=the user\b)|;\s*", fact.rstrip(".")) if p.strip()]
    return all(any(same_fact(_finish(part), have) for have in kept) for part in parts)


@functools.lru_cache(maxsize=200_000)  # pure
def clash(new: str, old: str) -> bool:
    """Whether `new` makes `old` outdated: same subject and relation, another value (not for relations that hold many)."""
    if same_fact(new, old):
        return False
    ns, nv, no = fact_parts(new)
    os_, ov, oo = fact_parts(old)
    if not nv or ns != os_:
        return False
    if nv != ov and not related(nv, ov):
        return False
    if nv in _MULTI and ov in _MULTI and _negated(new) == _negated(old):
        return False
    if nv == "be" and ns == ("user",) and no and oo and no[0] != oo[0] and not _negated(new) and not _negated(old):
        return False  # "is vegetarian" and "is a nurse" are different things
    return set(no) != set(oo) or _negated(new) != _negated(old)


@dataclass(frozen=True)
class Fact:
    """One fact about the user found in text: what it is about (`key`), the rest (`value`), a third-person sentence."""

    key: str
    value: str
    sentence: str


def find_facts(text: str, person: str = "first") -> list[Fact]:
    """Facts about the user stated in `text` (generic statements, not templates), in order.

    `person` says how the text refers to the user: 'first' (the user's own words), 'second' (the
    assistant: "your table is booked") or 'third' (summaries and memories: "The user's name is")."""
    if person == "third":
        found = [s if s.endswith(".") else s + "." for s in sentences(text) if "user" in s.lower()]
    else:
        found = facts_from_text(text, "user" if person == "first" else "assistant")
    out = []
    for sentence in found:
        subject, verb, obj = fact_parts(sentence)
        value = sentence.rstrip(".")
        out.append(Fact(" ".join((*subject, verb)).strip(), value, sentence))
    return out
