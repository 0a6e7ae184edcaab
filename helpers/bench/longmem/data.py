"""Plumbing: a seeded corpus of long, dated, two-person conversations with questions, for `bench longmem`.

Each conversation: one user and a friend (the `assistant` role) over `sessions` dated sessions of chit-chat
with topic drift; facts said in passing by both sides (the friend recommends a book, the two agree a plan),
some corrected later (a new job, a move). Questions in four categories — single-hop, multi-hop (two turns
needed), temporal (the answer is a session's date) and open-domain (the question does not name the fact) —
each with gold answer groups: a question counts as answerable from a context when every group has one of
its strings in it (a temporal question needs the date and the event's own words). Deterministic for a given seed; conversations 0-2 are the tuning half, 3-5 the report half.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from helpers.bench.longmem.chatter import CLOSERS, FOLLOW, MORE, OPENERS, REACT
from helpers.bench.longmem.pools import ASK, LEAD_IN, PEOPLE, SAY, VALUES
from helpers.bench.longmem.topics import TOPICS

__all__ = ["Conversation", "Question", "CATEGORIES", "SPLITS", "generate", "corpus", "date_forms", "write_jsonl"]

CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")
SPLITS = {"tune": (0, 1, 2), "report": (3, 4, 5), "all": (0, 1, 2, 3, 4, 5)}
SEED = 13

# fact id → (who says it, earliest session, latest session); "after:X+n" = at least n sessions after fact X
SCHEDULE: list[tuple[str, str, object, int]] = [
    ("pet_adopt", "user", 0, 2),
    ("pet_clinic", "user", "after:pet_adopt+2", 6),
    ("hometown", "user", 0, 5),
    ("job_old", "user", 0, 3),
    ("job_new", "user", 7, 9),
    ("instrument", "user", 1, 5),
    ("allergy", "user", 0, 6),
    ("fear", "user", 1, 6),
    ("language", "user", 1, 6),
    ("car", "user", 0, 6),
    ("partner_name", "user", 0, 3),
    ("partner_job", "user", "after:partner_name+2", 7),
    ("sibling_name", "user", 0, 3),
    ("sibling_city", "user", "after:sibling_name+2", 8),
    ("home_old", "user", 0, 3),
    ("home_new", "user", 6, 9),
    ("race_signup", "user", 1, 3),
    ("race_city", "user", "after:race_signup+1", 6),
    ("race_done", "user", 9, 11),
    ("band", "user", 2, 8),
    ("book", "assistant", 1, 7),
    ("restaurant", "assistant", 1, 7),
    ("plan", "assistant", 2, 8),
    ("friend_dog", "assistant", 0, 8),
    ("other_city", "either", 0, 11),
    ("other_city", "either", 0, 11),
    ("other_pet", "either", 0, 11),
]

# question id → (category, gold groups as value names, evidence facts)
QUESTIONS: dict[str, tuple[str, list[list[str]], list[str]]] = {
    "pet_name": ("single-hop", [["pet"]], ["pet_adopt"]),
    "hometown": ("single-hop", [["hometown"]], ["hometown"]),
    "job_now": ("single-hop", [["job_new"]], ["job_new"]),
    "car": ("single-hop", [["car"]], ["car"]),
    "partner_name": ("single-hop", [["partner"]], ["partner_name"]),
    "sibling_name": ("single-hop", [["sibling"]], ["sibling_name"]),
    "home_now": ("single-hop", [["home_new"]], ["home_new"]),
    "race_name": ("single-hop", [["race"]], ["race_signup"]),
    "band": ("single-hop", [["band"]], ["band"]),
    "book": ("single-hop", [["book"]], ["book"]),
    "book_author": ("single-hop", [["author"]], ["book"]),
    "restaurant": ("single-hop", [["restaurant"]], ["restaurant"]),
    "plan_place": ("single-hop", [["place"]], ["plan"]),
    "friend_dog": ("single-hop", [["friend_dog"]], ["friend_dog"]),
    "instrument_name": ("single-hop", [["instrument"]], ["instrument"]),
    "sibling_city": ("multi-hop", [["sibling"], ["sibling_city"]], ["sibling_name", "sibling_city"]),
    "partner_job": ("multi-hop", [["partner"], ["partner_job"]], ["partner_name", "partner_job"]),
    "pet_clinic": ("multi-hop", [["pet"], ["clinic"]], ["pet_adopt", "pet_clinic"]),
    "race_city": ("multi-hop", [["race"], ["race_city"]], ["race_signup", "race_city"]),
    "when_pet": ("temporal", [["@pet_adopt"], ["pet"]], ["pet_adopt"]),
    "when_job": ("temporal", [["@job_new"], ["job_new"]], ["job_new"]),
    "when_move": ("temporal", [["@home_new"], ["home_new"]], ["home_new"]),
    "when_race": ("temporal", [["@race_done"], ["race"]], ["race_done"]),
    "when_band": ("temporal", [["@band"], ["band"]], ["band"]),
    "when_plan": ("temporal", [["@plan"], ["place"]], ["plan"]),
    "open_allergy": ("open-domain", [["allergy"]], ["allergy"]),
    "open_instrument": ("open-domain", [["instrument"]], ["instrument"]),
    "open_fear": ("open-domain", [["fear"]], ["fear"]),
    "open_language": ("open-domain", [["language"]], ["language"]),
}


@dataclass
class Question:
    """One question about a conversation: its category, gold answer groups and the turns that hold the evidence."""

    qid: str
    category: str
    text: str
    gold: list[list[str]]
    evidence: list[int]  # indexes into Conversation.turns
    sessions: list[int]
    answer: str | None = None  # real data: the gold answer, scored by its content words (helpers.bench.longmem.locomo)


@dataclass
class Conversation:
    """One user's long, dated conversation with a friend, and the questions asked about it afterwards."""

    index: int
    user_id: str
    user: str
    friend: str
    turns: list[dict] = field(default_factory=list)  # {"role", "content", "ts", "speaker", "session"}
    questions: list[Question] = field(default_factory=list)
    dates: list[datetime] = field(default_factory=list)

    def jsonl_lines(self) -> list[str]:
        """The transcript as `--import` reads it: one {"role", "content", "ts", "speaker"} object per line."""
        return [
            json.dumps({k: t[k] for k in ("role", "content", "ts", "speaker")}, ensure_ascii=False) for t in self.turns
        ]


def date_forms(day: datetime) -> list[str]:
    """Ways a date may be written in a context: 2023-05-08, 8 May 2023, 8 May, 2023, May 8, 2023, May 8 2023."""
    d, m, y = day.day, day.strftime("%B"), day.year
    return [day.strftime("%Y-%m-%d"), f"{d} {m} {y}", f"{d} {m}, {y}", f"{m} {d}, {y}", f"{m} {d} {y}"]


def _person(rng: random.Random, index: int, drawn: dict[str, list]) -> dict:
    user, friend = PEOPLE[index]
    p: dict = {"user": user, "friend": friend}
    for key in VALUES:
        p[key] = drawn[key][index % len(drawn[key])]
    p["species"], p["pet"] = p.pop("pet")
    p["job_old"], p["job_new"] = p.pop("job")
    p["partner"], p["partner_job"] = p.pop("partner")
    p["relation"], p["sibling"] = p.pop("sibling")
    p["home_old"], p["home_new"] = p.pop("home")
    p["race"], p["race_city"] = p.pop("race")
    p["book"], p["author"] = p.pop("book")
    p["activity"], p["place"] = p.pop("plan")
    p["other_cities"] = rng.sample(VALUES["other_city"], 3)
    p["other_pet"] = rng.choice(VALUES["other_pet"])
    return p


def _schedule(rng: random.Random, sessions: int) -> list[tuple[str, str, int]]:
    placed: dict[str, int] = {}
    out = []
    scale = sessions / 12
    for fact, who, lo, hi in SCHEDULE:
        hi = round(hi * scale)
        if isinstance(lo, str):
            ref, gap = lo[6:].split("+")
            lo = placed[ref] + int(gap)
        else:
            lo = round(lo * scale)
        session = rng.randint(min(lo, sessions - 1), min(max(lo, hi), sessions - 1))
        placed.setdefault(fact, session)
        out.append((fact, who, session))
    return out


def _line(rng: random.Random, pool: list[str], p: dict) -> str:
    text = rng.choice(pool)
    values = {**p, "other_city": p["other_cities"][rng.randrange(3)]}
    return text.format(**values)


def _open(opener: str, text: str, proper: bool = False) -> str:
    """Prefix an opener; after 'Right,' or 'Oh and' the sentence runs on in lower case (unless it starts with a name or I)."""
    first = text.split(" ", 1)[0]
    if (
        (opener[-1] == "," or opener.endswith((" and", " so")))
        and not proper
        and first.rstrip(",") not in ("I", "I'm", "I've", "I'd")
    ):
        text = text[0].lower() + text[1:]
    return f"{opener} {text}"


def _chat_exchange(rng: random.Random, topic: str) -> tuple[str, str]:
    """A chit-chat exchange: one or two user lines (second may drift topic), the friend's matching replies."""
    pairs = TOPICS[topic]
    i = rng.randrange(len(pairs["user"]))
    user, friend = [pairs["user"][i]], [pairs["assistant"][i]]
    for side, chance in (("user", 0.7), ("assistant", 0.55)):
        if rng.random() < chance:
            (user if side == "user" else friend).append(rng.choice(MORE[topic][side]))
    if rng.random() < 0.35:
        other = rng.choice(list(TOPICS))
        j = rng.randrange(len(TOPICS[other]["user"]))
        user.append(TOPICS[other]["user"][j])
        friend.append(TOPICS[other]["assistant"][j])
    if rng.random() < 0.4:
        user[0] = _open(rng.choice(OPENERS), user[0])
    if rng.random() < 0.3:
        friend.append(rng.choice(CLOSERS))
    return " ".join(user).strip(), " ".join(friend).strip()


def _fact_exchange(rng: random.Random, fact: str, who: str, p: dict, topic: str) -> tuple[str, str, str]:
    """(user text, friend text, which role said the fact) for one fact said in passing."""
    if who == "either":
        who = rng.choice(("user", "assistant"))
    template = rng.choice(SAY[fact])
    said = _line(rng, [template], p)
    if who == "user":
        user = _open(rng.choice(OPENERS), said, template.startswith("{")) if rng.random() < 0.3 else said
        friend = rng.choice(REACT) + (" " + rng.choice(FOLLOW) if rng.random() < 0.5 else "")
        return user, friend, "user"
    lead = LEAD_IN.get(fact)
    user = _line(rng, lead, p) if lead else _chat_exchange(rng, topic)[0]
    friend = ("" if lead else rng.choice(REACT) + " ") + said
    return user, friend, "assistant"


def generate(
    index: int, *, seed: int = SEED, sessions: int = 14, exchanges: tuple[int, int] = (18, 24)
) -> Conversation:
    """Conversation `index` (0-5) of the corpus: deterministic for (index, seed, sessions, exchanges)."""
    if not 0 <= index < len(PEOPLE):
        raise ValueError(f"conversation index must be 0..{len(PEOPLE) - 1}, got {index}")
    if sessions < 6:
        raise ValueError(f"need at least 6 sessions for the fact schedule, got {sessions}")
    base = random.Random(seed)
    drawn = {key: base.sample(values, len(values)) for key, values in VALUES.items()}
    rng = random.Random(f"{seed}:{index}")
    p = _person(rng, index, drawn)
    conv = Conversation(index, p["user"].lower(), p["user"], p["friend"])
    day = datetime(2023, 1, 9, 19, 0) + timedelta(days=rng.randint(0, 120))
    facts_by_session: dict[int, list[tuple[str, str]]] = {}
    for fact, who, session in _schedule(rng, sessions):
        facts_by_session.setdefault(session, []).append((fact, who))
    where: dict[str, int] = {}
    for s in range(sessions):
        conv.dates.append(day)
        n = rng.randint(*exchanges)
        topics = rng.sample(list(TOPICS), 3)
        facts = facts_by_session.get(s, [])
        slots = sorted(rng.sample(range(n), min(len(facts), n)))
        planned = dict(zip(slots, facts))
        clock = day
        for e in range(n):
            topic = topics[min(2, e * 3 // n)]
            if e in planned:
                fact, who = planned[e]
                user, friend, said_by = _fact_exchange(rng, fact, who, p, topic)
                where.setdefault(fact, len(conv.turns) + (1 if said_by == "assistant" else 0))
            else:
                user, friend = _chat_exchange(rng, topic)
            for role, text, speaker in (("user", user, p["user"]), ("assistant", friend, p["friend"])):
                clock += timedelta(minutes=rng.randint(1, 4))
                conv.turns.append(
                    {
                        "role": role,
                        "content": text,
                        "ts": clock.strftime("%Y-%m-%dT%H:%M:%S"),
                        "speaker": speaker,
                        "session": s,
                    }
                )
        day += timedelta(days=rng.randint(3, 21), hours=rng.randint(-3, 2))
    for qid, (category, groups, evidence) in QUESTIONS.items():
        if any(f not in where for f in evidence):
            continue
        gold = []
        for group in groups:
            names = []
            for name in group:
                names.extend(
                    date_forms(conv.dates[conv.turns[where[name[1:]]]["session"]])
                    if name.startswith("@")
                    else [p[name]]
                )
            gold.append(names)
        turns = sorted(where[f] for f in evidence)
        conv.questions.append(
            Question(
                qid,
                category,
                rng.choice(ASK[qid]).format(**p),
                gold,
                turns,
                sorted({conv.turns[t]["session"] for t in turns}),
            )
        )
    return conv


def corpus(split: str = "all", **kwargs) -> list[Conversation]:
    """The conversations of one split: `tune` (0-2), `report` (3-5) or `all`."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return [generate(i, **kwargs) for i in SPLITS[split]]


def write_jsonl(conv: Conversation, path: str | Path) -> Path:
    """Write the transcript for `python -m helpers.chat --import PATH`; returns the path."""
    path = Path(path)
    path.write_text("\n".join(conv.jsonl_lines()) + "\n", encoding="utf-8")
    return path
