"""Plumbing: when the offline reader cannot answer a question about the user, the line of the request closest to it.

The reader may fail to see that "my gym locker combination is 4172" answers "what's the combination for my gym
locker?". Saying "you haven't told me" then contradicts the request in front of it and teaches that memory failed
when it worked. So before declining, the stand-in looks for the request's line closest to the question (its
sentences from the system prompt with its summary and memory blocks, and from every earlier message), and when one
is close (it shares a content word, a synonym or a kind with the question, or is near it in meaning), it says it
could not work out the answer and quotes that line, marked as a quote. A question about the user's own things ("our
windows", "my locker") is also close to the nearest line in which the user speaks of their own things the same way
("Our apartment overlooks the river"): only the user can have said what is theirs, so such a line may hold it. Only
when no line is close does it say it was not told, or that nothing in the request answers; and "not told" only when
the request holds no line at all: a request with lines may hold the answer in words the reader cannot link to the
question ("the last train home leaves at 23:40" / "what's the latest I can catch a ride back?"), so then the stand-in
quotes the nearest line instead (`closest_line(..., or_nearest=True)`), and the learner can see for themselves
whether memory held it.
"""

from __future__ import annotations

import re

from helpers.offline import lexicon
from helpers.offline.answer import cosine
from helpers.offline.language import PERSON_STEMS, content_stems, sentences, stem, words
from helpers.offline.question import is_question
from helpers.offline.synonyms import related

__all__ = [
    "closest_line",
    "quoted_reply",
    "request_lines",
    "QUOTE_LEAD",
    "NEAR_MIN",
    "CLOSE_MIN",
    "OWNED_MIN",
]

QUOTE_LEAD = (
    "I couldn't work out the answer from this conversation, so I can't say for sure. The closest line it holds:"
)
NEAR_MIN = 0.30  # MiniLM cosine at which a line that shares no word with the question is still close to it
CLOSE_MIN = 0.15  # ... and at which a line that shares a word with it is (a shared "locker" in a far sentence is not)
LEAD_MIN, LEAD_BY = 0.20, 0.05  # ... or at which a line is close when it leads every other line by this much
OWNED_MIN = 0.10  # ... at which the nearest line saying "our"/"my" as the question does is close to it
_OWNERS = (re.compile(r"(?i)\b(?:my|mine)\b"), re.compile(r"(?i)\b(?:our|ours)\b"))  # the user's things, one or many
_BLOCK = re.compile(r"<(conversation_summary|remembered_memories)>(.*?)</\1>", re.S)
_ASSISTANT = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*Assistant\s*:")
_LABEL = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*(?:(?:User|Assistant|Human)\s*:\s*)?")
_OWN = re.compile(r"(?i)stand-in|couldn't work out the answer|you haven't told me|thanks for telling me\.?$")
_GENERIC = frozenset(PERSON_STEMS) | {stem(w) for w in "user thing way time today one".split()}


def request_lines(system: str, messages: list[tuple[str, str]]) -> list[str]:
    """The request's declarative lines, newest first: the user's messages before the question, then the system prompt's
    summary and memory blocks (the rest of the system prompt is the model's instructions, not what the user said).
    A memory line's date and speaker label are left out. The stand-in's own declines and notes are not lines."""
    texts = [text for role, text in messages[:-1] if role == "user"][::-1] + [
        m.group(2) for m in _BLOCK.finditer(system)
    ]
    lines: list[str] = []
    for text in texts:
        for raw in text.splitlines():
            if _ASSISTANT.match(raw):
                continue  # the assistant's words are not what the user said
            for s in sentences(_LABEL.sub("", raw).strip(" -*\u2022")):
                s = s.strip()
                if len(words(s)) >= 3 and not is_question(s) and not _OWN.search(s) and s not in lines:
                    lines.append(s)
    return lines


def _shared(question: str, line: str) -> float:
    """The share of the question's content words the line says: the word, a synonym, or a word the lexicon equates."""
    asked = [s for s in content_stems(question) if s not in _GENERIC]
    if not asked:
        return 0.0
    said, said_words = set(content_stems(line)), [w.lower() for w in words(line)]
    hits = sum(
        1
        for q, qw in zip(asked, _words_for(question, asked))
        if q in said
        or any(related(q, s) for s in said)
        or any(lexicon.synonymous(qw, w, first=2, first_b=2) or lexicon.is_a(w, qw) for w in said_words)
    )
    return hits / len(asked)


def _words_for(question: str, asked: list[str]) -> list[str]:
    """The question's own word for each content stem (the lexicon reads words, not stems)."""
    by_stem = {stem(w.lower()): w.lower() for w in words(question)}
    return [by_stem.get(s, s) for s in asked]


def _candidates(question: str, system: str, messages: list[tuple[str, str]], said: str) -> tuple[list[str], list]:
    """The request's lines that may be quoted (not those `said` has said back), and each one's cosine to `question`."""
    spoken = set(content_stems(said))
    lines = [line for line in request_lines(system, messages) if not set(content_stems(line)) <= spoken]
    return lines, [cosine(question, line) for line in lines]


def closest_line(
    question: str, system: str, messages: list[tuple[str, str]], said: str = "", *, or_nearest: bool = False
) -> str | None:
    """The request's line closest to `question`, or None when no line is close to it (then the request does not
    hold the answer and "you haven't told me" is true). Ties go to the newest line. `said`: what the reply already
    says (another part of the same question answered): a line it has said back is no candidate. `or_nearest`: when no
    line is close, the line nearest in meaning however far it is, so None only when the request holds no line at all
    (besides those `said` has said back): only then is "you haven't told me" certainly true."""
    lines, nears = _candidates(question, system, messages, said)
    top = sorted(range(len(nears)), key=lambda i: -nears[i])[:2]  # the nearest two: every line's lead in one pass
    best, best_score = None, 0.0
    for i, (line, near) in enumerate(zip(lines, nears)):
        if near < min(CLOSE_MIN, NEAR_MIN, LEAD_MIN):  # below every threshold: no shared word makes it close
            continue
        shared = _shared(question, line)
        runner_up = next((nears[j] for j in top if j != i), 0.0)
        lead = near - runner_up
        if not ((shared > 0 and near >= CLOSE_MIN) or near >= NEAR_MIN or (near >= LEAD_MIN and lead >= LEAD_BY)):
            continue
        score = near + 0.1 * shared  # meaning first: a shared word only breaks near ties
        if score > best_score:
            best, best_score = line, score
    best = best if best is not None else _owned_line(question, lines, nears)
    if best is None and or_nearest and lines:
        best = lines[max(range(len(lines)), key=lambda i: (nears[i], -i))]
    return best


def _owned_line(question: str, lines: list[str], nears: list[float]) -> str | None:
    """For a question about the user's own things ("what can we see from *our* windows?"): the nearest line in which
    the user speaks of their own things the same way ("*Our* apartment overlooks the river"), if it is near at all."""
    owners = [o for o in _OWNERS if o.search(question)]
    owned = [
        (near, -i, line) for i, (line, near) in enumerate(zip(lines, nears)) if any(o.search(line) for o in owners)
    ]
    near, _, line = max(owned, default=(0.0, 0, None))
    return line if near >= OWNED_MIN else None


def quoted_reply(line: str) -> str:
    """The stand-in's reply when it cannot answer but the request holds a close line: it says so and quotes it."""
    return f'{QUOTE_LEAD}\n> "{line.strip()}"'
