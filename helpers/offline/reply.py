"""Plumbing: the offline model's chat reply: answer questions from the request, acknowledge statements, and say
what it is (the offline stand-in, knowing only the request) when asked about the world."""

from __future__ import annotations

import hashlib
import re

from helpers.offline.fact_rules import request_of
from helpers.offline.language import PERSON_STEMS, sentences, stem, words
from helpers.offline.person import first_person, resolve_pronouns, strip_discourse, to_second
from helpers.offline.question import question_parts
from helpers.offline.quote import QUOTE_LEAD, closest_line, quoted_reply
from helpers.offline.reader import answer, is_question, read_question, render_second, statements_of

__all__ = ["chat_reply", "persona", "topic", "stable_choice", "stand_in_note", "DONT_KNOW"]

DONT_KNOW = "I don't know that: you haven't told me in this conversation."

_TOPIC_STOP = set(
    "a an the and or but if then so to of in on at for with about from by as is are was were be been am "
    "i me my mine you your yours we our us it its this that these those what which who whom whose when "
    "where why how do does did can could should would will shall may might must have has had not no yes "
    "please tell give some any more most very just also really there here than too much many few one two "
    "get got like want need know think let lets let's ok okay hi hello hey thanks thank today tomorrow "
    "going go good great nice new best way things thing something anything near around into over "
    "recommend suggest suggestions ideas idea any".split()
)


def stable_choice(seed: str, options: list[str]) -> str:
    """A deterministic pick from `options` by a hash of `seed`."""
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()
    return options[digest[0] % len(options)]


def topic(text: str, n: int = 4) -> str:
    """The first few content words of a message ('tacos Venice'), or 'that'."""
    picked: list[str] = []
    for w in re.findall(r"[A-Za-z][A-Za-z'-]{2,}", text):
        lw = w.lower().strip("'")
        if lw not in _TOPIC_STOP and lw not in (p.lower() for p in picked):
            picked.append(w)
        if len(picked) == n:
            break
    return " ".join(picked) if picked else "that"


def persona(system: str) -> tuple[str | None, str]:
    """(name, role) from a 'You are Scout, a friendly local guide …' system prompt."""
    m = re.search(r"\bYou are (?P<name>[A-Z][a-z]+),? (?:an? |the )?(?P<role>[^.\n]+)", system)
    if m and m.group("name").lower() not in ("a", "an", "the"):
        return m.group("name"), m.group("role").strip()
    m = re.search(r"\bYou are (?:an? |the )?(?P<role>[^.\n]+)", system)
    return None, (m.group("role").strip() if m else "assistant")


def stand_in_note(system: str, *, asked: bool = True, held: bool = False) -> str:
    """The one sentence for a question about the world (`asked`) or for small talk: what this stand-in is and what
    it knows. A real model would answer from what it learned; this one only reads the request, and says so instead
    of inventing advice. Generic on purpose: it names no place, person or thing the user did not mention.
    `held`: the reply has just said what the request holds on it, so the note never claims nothing answers; without
    it, "nothing in them answers that" is only said when no line of the request is close (see `_answer_part`)."""
    name, _role = persona(system)
    who = f"{name} here, played by the offline stand-in model" if name else "I'm the offline stand-in model"
    rest = "so that is all I can offer on it" if held else "and nothing in them answers that" if asked else ""
    rest = rest or "so I have nothing to add"
    return f"{who}: I only know what this conversation and its memories hold, {rest}."


_ABOUT_THE_CONVERSATION = re.compile(
    r"\b(?:i|me|my|mine|we|us|our|ours|i'm|i've|we're|we've)\b|"
    r"\b(?!(?:what|where|who|when|how|why|which|that|it|there|here|let)'s)\w+'s\b",
    re.I,
)


def _about_the_conversation(q, pool: list) -> bool:
    """Does the question ask about the user, their people or their things (which only the conversation can hold),
    or about something the user spoke of ("the hotel safe" after "the safe in our hotel room"), rather than about
    the world ("How do people get from LAX to Santa Monica?")?"""
    if _ABOUT_THE_CONVERSATION.search(q.text.replace("\u2019", "'")):
        return True
    if any(stem(w) in PERSON_STEMS for w in words(q.text)):
        return True
    spoken = set().union(*(st.stems for st in pool if st.person in ("first", "third")))
    return bool((set(q.objects) | set(q.heads) | set(q.focus) | set(q.stems)) & spoken)


def _shorten(text: str, limit: int = 40) -> str:
    toks = text.split()
    return text if len(toks) <= limit else " ".join(toks[:limit]).rstrip(",;:") + " …"


def _answer_part(system: str, question: str, pool: list, messages: list, said: str = "") -> tuple[str, bool]:
    """One question answered from `pool`: (reply, False if it is a memory question nothing answers). Advice or a
    question about the world gets what the request holds that bears on it, then the stand-in's note: never made-up
    advice that reads like a real answer. A question the reader cannot answer goes to `_decline`."""
    q = read_question(question)
    found = answer(q, pool)
    if found is not None:
        said = render_second(found)
        if q.advice and not q.personal:
            return f"{said} {stand_in_note(system, held=True)}", True
        return said, True
    return _decline(system, question, q, pool, messages, said)


def _decline(system: str, question: str, q, pool: list, messages: list, said: str) -> tuple[str, bool]:
    """The one way the stand-in says it cannot answer, whatever kind of question the reader took it for (memory,
    advice, the world): when a line of the request is close to the question it says it could not work the answer
    out and quotes that line; when none is close, a question about the user or their things still gets the nearest
    line quoted, and "you haven't told me" only when the request holds no line at all; anything else gets the
    stand-in's note that nothing in its request answers."""
    about_the_user = _about_the_conversation(q, pool) and not q.advice
    # about the user, lines the reader could not link to the question may still answer it: the nearest is quoted
    line = closest_line(question, system, messages, said, or_nearest=about_the_user)
    if line is not None:  # never "not told" / "nothing answers" when the request may hold it: quote the line
        return quoted_reply(line), True
    if q.personal and about_the_user:
        return DONT_KNOW, False  # a memory question in a request that holds no line at all
    return stand_in_note(system), True  # a question about the world: say what this stand-in is


def _answer_question(system: str, question: str, pool: list, messages: list) -> str:
    """A question of one or more parts ("what is my name, and where do I live?"): each part answered on its own."""
    parts = resolve_pronouns(question_parts(question))
    if len(parts) == 1:
        return _answer_part(system, question, pool, messages)[0]
    replies = [_answer_part(system, part, pool, messages) for part in parts]
    said = " ".join(r for r, ok in replies if ok and not r.startswith(QUOTE_LEAD))
    replies = [
        _answer_part(system, part, pool, messages, said) if r.startswith(QUOTE_LEAD) else (r, ok)
        for part, (r, ok) in zip(parts, replies)
    ]  # a part whose closest line another part has said back: that line does not answer it
    if not any(ok for _, ok in replies):
        return DONT_KNOW
    out: list[str] = []
    for part, (reply, ok) in zip(parts, replies):
        if not ok:
            asked = to_second(part.rstrip("?"))
            reply = f"As for \"{asked[:1].lower()}{asked[1:]}?\": I don't know, you haven't told me."
        if reply not in out:
            out.append(reply)
    return " ".join(out)


_MEMORY_BLOCK = re.compile(r"\s*<remembered_memories>.*?</remembered_memories>", re.S)


def _lift_memories(system: str, messages: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """A memory block sent in the newest user message (after a cached prefix) is read as part of the system prompt."""
    if not messages or messages[-1][0] != "user" or "<remembered_memories>" not in messages[-1][1]:
        return system, messages
    role, text = messages[-1]
    blocks = [m.group(0).strip() for m in _MEMORY_BLOCK.finditer(text)]
    return "\n\n".join([system, *blocks]), [*messages[:-1], (role, _MEMORY_BLOCK.sub("", text).strip())]


def chat_reply(system: str, messages: list[tuple[str, str]]) -> str:
    """Reply to the last user message using only what `system` and `messages` hold."""
    system, messages = _lift_memories(system, messages)
    last = messages[-1][1] if messages and messages[-1][0] == "user" else ""
    pool = statements_of(system, messages)
    said_now = [s for s in sentences(last) if not is_question(s)]
    asked = [s for s in sentences(last) if is_question(s)]
    parts: list[str] = []
    told = [strip_discourse(s) for s in said_now if first_person(s) and len(words(s)) > 2 and not request_of(s)]
    requested = [s for s in said_now if request_of(s)]
    if told:
        ack = " ".join(_shorten(to_second(t)).rstrip(".!") + "." for t in told[:2])
        parts.append(f"Thanks for telling me. {ack[:1].upper()}{ack[1:]}" if not asked else "")
    for question in asked:
        parts.append(_answer_question(system, question, pool, messages))
    parts = [p for p in parts if p]
    if not parts:
        name, _ = persona(system)
        if told or requested:
            parts.append(f"{name} will keep that in mind." if name else "I'll keep that in mind.")
        else:
            parts.append(stand_in_note(system, asked=False))
    elif told and not asked:
        name, _ = persona(system)
        if name:
            parts.append(f"{name} will keep that in mind.")
    return " ".join(dict.fromkeys(parts))
