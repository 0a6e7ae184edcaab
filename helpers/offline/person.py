"""Plumbing: who a sentence is about, and rewriting it for another speaker.

`to_second("I'm vegetarian")` → "you're vegetarian" (the model answering the user);
`to_third("My sister lives in Pasadena")` → "The user's sister lives in Pasadena" (summaries, facts);
`resolve_pronouns` replaces "she"/"he"/"her"/"his" by the person last named ("my sister Priya").
"""

from __future__ import annotations

import re

from helpers.offline.language import PERSON_NOUNS

__all__ = [
    "to_second",
    "to_third",
    "third_to_second",
    "second_to_third",
    "resolve_pronouns",
    "strip_discourse",
    "first_person",
    "mentions",
]

_ADVERBS = (
    "really",
    "also",
    "usually",
    "always",
    "never",
    "just",
    "still",
    "now",
    "currently",
    "actually",
    "only",
    "often",
    "sometimes",
    "recently",
    "mostly",
    "definitely",
    "absolutely",
    "generally",
    "totally",
    "even",
    "already",
    "truly",
    "normally",
    "typically",
    "finally",
)
_MODALS = {
    "can",
    "can't",
    "cannot",
    "could",
    "couldn't",
    "will",
    "won't",
    "would",
    "wouldn't",
    "should",
    "shouldn't",
    "must",
    "might",
    "may",
    "shall",
    "'ll",
    "'d",
    "need",
    "used",
}
_PAST = set(
    "was were went got had made took came saw ate drank flew drove met left paid bought thought told said "
    "grew knew wrote sold spent found gave began became broke chose fell felt forgot heard hurt kept lost "
    "meant put read ran rode sat slept spoke stood swam taught threw understood woke won wore".split()
)
_THIRD = {
    "am": "is",
    "'m": "is",
    "have": "has",
    "'ve": "has",
    "do": "does",
    "don't": "doesn't",
    "go": "goes",
    "was": "was",
    "were": "was",
    "haven't": "hasn't",
    "aren't": "isn't",
    "are": "is",
}


def _conjugate(verb: str) -> str:
    lower = verb.lower()
    if lower in _THIRD:
        return _THIRD[lower]
    if lower in _MODALS or lower in _PAST or lower.endswith("ed") or not lower.isalpha():
        return verb
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    return verb + "s"


def _unconjugate(verb: str) -> str:
    lower = verb.lower()
    back = {
        "is": "are",
        "has": "have",
        "does": "do",
        "doesn't": "don't",
        "goes": "go",
        "was": "were",
        "hasn't": "haven't",
        "isn't": "aren't",
    }
    if lower in back:
        return back[lower]
    if lower.endswith("ies") and len(lower) > 4:
        return verb[:-3] + "y"
    if lower.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(lower) > 2:
        return verb[:-1]
    return verb


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


_SECOND = [
    (r"\bI am\b", "you are"),
    (r"\bI'm\b", "you're"),
    (r"\bI was\b", "you were"),
    (r"\bI've\b", "you've"),
    (r"\bI'd\b", "you'd"),
    (r"\bI'll\b", "you'll"),
    (r"\bI\b", "you"),
    (r"\bme\b", "you"),
    (r"\bmy\b", "your"),
    (r"\bmine\b", "yours"),
    (r"\bmyself\b", "yourself"),
    (r"\bwe're\b", "you're"),
    (r"\bwe are\b", "you are"),
    (r"\bwe were\b", "you were"),
    (r"\bwe've\b", "you've"),
    (r"\bwe'll\b", "you'll"),
    (r"\bwe\b", "you"),
    (r"\bour\b", "your"),
    (r"\bours\b", "yours"),
    (r"\bus\b", "you"),
    (r"\bourselves\b", "yourselves"),
]
_SECOND_RX = [(re.compile(p, re.I), r) for p, r in _SECOND]
_DISCOURSE = re.compile(
    r"^(?:(?:(?:hi|hello|hey|thanks|thank you)(?:\s+[A-Z][a-z]+)?|oh|ah|so|well|also|and|but|actually|anyway|btw|fyi|ok|"
    r"okay|right|yes|yeah|no|"
    r"by the way|just so you know|for the record|for what it's worth|one more thing|quick note|"
    r"as i said|like i said|remember(?: that)?|"
    r"i forgot to mention|i should mention|i should say|i should tell you|i want you to know|"
    r"you should know|note that|just to let you know|i wanted to say|i wanted to tell you)\s*[,:;!-]*\s+)+",
    re.I,
)


def strip_discourse(text: str) -> str:
    """Drop openers that carry no content ('By the way, ', 'Oh, ', 'Hi Scout, ') and a trailing 'please'."""
    text = _DISCOURSE.sub("", text.strip())
    text = re.sub(r",?\s*\bso (?:please )?(?:keep|bear|remember|make sure|note|let|tell)\b.*$", "", text, flags=re.I)
    text = re.sub(r",?\s*\bplease\b", "", text, flags=re.I)
    text = re.sub(r"\s+([,.!?])", r"\1", text).strip()
    return _cap(text)


def to_second(text: str) -> str:
    """First person (the user's own words) → second person (said back to the user)."""
    out = text
    for rx, repl in _SECOND_RX:
        out = rx.sub(lambda m, r=repl: _cap(r) if m.group(0)[:1].isupper() and m.start() == 0 else r, out)
    return out


_SUBJ = re.compile(r"\b(I|we)(\s+(?:(?:" + "|".join(_ADVERBS) + r")\s+)*)(\w+(?:'t)?)\b", re.I)


def to_third(text: str) -> str:
    """First person → third person about the user: "I live in X" → "The user lives in X"."""
    out = text.replace("’", "'")
    out = re.sub(r"\bI'm\b", "I am", out)
    out = re.sub(r"\bI've\b", "I have", out)
    out = re.sub(r"\bwe're\b", "we are", out, flags=re.I)
    out = re.sub(r"\bI'd\b", "I would", out)
    out = re.sub(r"\bI'll\b", "I will", out)

    def subject(m: re.Match) -> str:
        who = "the user" if m.group(1) == "I" else "the user and their party"
        verb = _conjugate(m.group(3)) if m.group(1) == "I" else m.group(3)
        return f"{who}{m.group(2)}{verb}"

    out = _SUBJ.sub(subject, out)
    out = re.sub(r"\b(?:my|our)\b", "the user's", out, flags=re.I)
    out = re.sub(r"\bwith you\b|\bfor you\b|\byou\b", lambda m: m.group(0).replace("you", "the assistant"), out)
    out = re.sub(r"\bme\b", "the user", out)
    out = re.sub(r"\bus\b", "them", out)
    out = re.sub(r"\b(?:mine|ours)\b", "the user's", out)
    out = re.sub(r"\b(?:myself|ourselves)\b", "themselves", out)
    out = re.sub(r"\bI\b", "the user", out)
    return _cap(out.strip())


def third_to_second(text: str) -> str:
    """ "The user's sister lives in X" / "The user lives in X" → "your sister lives in X" / "you live in X"."""
    out = re.sub(r"\bthe user's\b", "your", text, flags=re.I)
    adv = r"(\s+(?:(?:" + "|".join(_ADVERBS) + r")\s+)*)"
    out = re.sub(
        r"\bthe user(?: and their party)?" + adv + r"(\w+(?:'t)?)\b",
        lambda m: f"you{m.group(1)}{_unconjugate(m.group(2))}",
        out,
        flags=re.I,
    )
    out = re.sub(r"\bthe user\b", "you", out, flags=re.I)
    out = re.sub(r"\bthemselves\b", "yourself", out)
    return out


def second_to_third(text: str) -> str:
    """The assistant's "your flight is at 9" / "you're booked" → "the user's flight is at 9" / "the user is booked"."""
    out = re.sub(r"\byou're\b", "you are", text, flags=re.I)
    out = re.sub(r"\byou've\b", "you have", out, flags=re.I)
    out = re.sub(r"\byou'll\b", "you will", out, flags=re.I)
    out = re.sub(r"\byou'd\b", "you would", out, flags=re.I)
    out = re.sub(r"\byour\b", "the user's", out, flags=re.I)
    out = re.sub(
        r"\byou(\s+(?:(?:" + "|".join(_ADVERBS) + r")\s+)*)(\w+(?:'t)?)\b",
        lambda m: f"the user{m.group(1)}{_conjugate(m.group(2))}",
        out,
        flags=re.I,
    )
    out = re.sub(r"\byou\b", "the user", out, flags=re.I)
    return _cap(out)


def first_person(text: str) -> bool:
    """Whether the text speaks about the speaker (I, my, me, we, our)."""
    return bool(re.search(r"\b(?:I|I'm|I've|I'd|I'll|my|me|mine|we|we're|our|us)\b", text.replace("’", "'"), re.I))


_NAMED = re.compile(
    r"\b(?i:my|our|the user's|your)\s+((?i:[a-z-]+\s+)?)((?i:"
    + "|".join(sorted(PERSON_NOUNS, key=len, reverse=True))
    + r"))\b(?:'s)?(?:,?\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?))?"
)


def mentions(text: str) -> list[tuple[str, str | None]]:
    """(relation, name) pairs a text names: "my sister Priya" → ("sister", "Priya"); "my dog" → ("dog", None)."""
    out = []
    for m in _NAMED.finditer(text):
        name = m.group(3)
        if name and name.split()[0].lower() in ("and", "is", "was", "lives", "works"):
            name = None
        out.append((m.group(2).lower(), name))
    return out


_PRONOUN = re.compile(r"\b(she|he|her|his|him)\b", re.I)


# words that follow "her" as an object ("visit her next month"), not as a possessive ("her birthday")
_AFTER_AN_OBJECT = re.compile(
    r"(?:and|or|but|so|if|when|while|because|to|at|in|on|a|an|the|for|with|about|up|out|"
    r"from|by|again|soon|later|too|next|last|this|that|every|once|twice|back|over|off|"
    r"tomorrow|tonight|today|yesterday|before|after|around|there|here)\b",
    re.I,
)


def resolve_pronouns(sentences_in_order: list[str]) -> list[str]:
    """Replace he/she/him/her/his by the last named person ("my sister Priya ... she" → "my sister Priya")."""
    last: str | None = None
    out = []
    for sentence in sentences_in_order:
        resolved = []
        pos = 0
        for m in _PRONOUN.finditer(sentence):
            before = sentence[: m.start()]
            found = _last_mention(before) or last
            resolved.append(sentence[pos : m.start()])
            if found is None:
                resolved.append(m.group(0))
            else:
                word = m.group(1).lower()
                after = sentence[m.end() :].lstrip()
                possessive = word == "his" or (
                    word == "her" and re.match(r"[a-z]", after) is not None and not _AFTER_AN_OBJECT.match(after)
                )
                resolved.append(found + "'s" if possessive else found)
            pos = m.end()
        resolved.append(sentence[pos:])
        text = "".join(resolved)
        last = _last_mention(sentence) or last
        out.append(text)
    return out


def _last_mention(text: str) -> str | None:
    found = list(_NAMED.finditer(text))
    if not found:
        return None
    m = found[-1]
    rel = m.group(2)
    name = m.group(3)
    if name and name.split()[0].lower() in ("and", "is", "was", "lives", "works"):
        name = None
    owner = m.group(0).split()[0].lower()
    owner = {"our": "my"}.get(owner, owner)
    if owner == "the":
        owner = "the user's"
    return f"{owner} {(m.group(1) or '')}{rel}" + (f" {name}" if name else "")
