"""Deterministic scripted conversations for simulations: a trip-planning chat with Scout. Taught in 03_context_window_overflow, section 'Growing the list until it breaks'.

`trip_script(n)` returns `n` user messages. The first turns tell Scout about the user in ordinary words
(name, favourite colour, home, allergy, hotel, dog); every later turn is a filler question about Los Angeles
built from templates × places × details, so texts vary but the same `n` always gives the same script, and a
longer script starts with the shorter one. Filler turns are questions that tell nothing about the user, so
the planted answers appear only where they were told. Nothing here is phrased for a particular model.
"""

from __future__ import annotations

from helpers.prompts import SCOUT_PERSONA

__all__ = [
    "trip_script",
    "recall_script",
    "recall_questions",
    "PLANTED_FACTS",
    "PLANTED_DETAILS",
    "PARAPHRASED",
    "EXACT_LOOKUPS",
    "OPENING_TURNS",
    "TRIP_PERSONA",
]

TRIP_PERSONA = SCOUT_PERSONA  # the system prompt the trip script is written for

# The first turns of every trip script: each states facts the user can later ask about.
OPENING_TURNS: tuple[str, ...] = (
    "Hi Scout, my name is Maya and my favorite color is teal.",
    "I live in Portland. I'm flying down to Los Angeles next month for a week and want to plan it with you.",
    "I'm allergic to peanuts, so please keep that in mind for any food suggestions.",
    "We're staying at the Ace Hotel downtown and will mostly get around by train, bus and on foot.",
    "Our dog Biscuit is staying with a friend in Oregon while I travel, so I'll miss him.",
)

# (recall question, substring the correct answer contains), for the facts planted in OPENING_TURNS.
PLANTED_FACTS: list[tuple[str, str]] = [
    ("What is my name?", "Maya"),
    ("What is my favorite color?", "teal"),
    ("Where do I live?", "Portland"),
    ("What am I allergic to?", "peanuts"),
    ("Which hotel am I staying at?", "Ace Hotel"),
    ("What is my dog's name?", "Biscuit"),
]

_PLACES: tuple[str, ...] = (
    "Santa Monica",
    "Venice",
    "Silver Lake",
    "Echo Park",
    "Griffith Park",
    "Koreatown",
    "Little Tokyo",
    "the Arts District",
    "Highland Park",
    "Pasadena",
    "Malibu",
    "Manhattan Beach",
    "Los Feliz",
    "West Hollywood",
    "Culver City",
    "Chinatown",
    "Boyle Heights",
    "Leimert Park",
    "San Pedro",
    "Burbank",
    "Eagle Rock",
    "Larchmont",
    "Mid-Wilshire",
    "Palms",
    "Atwater Village",
    "Long Beach",
    "Topanga",
)

_DETAILS: tuple[str, ...] = (
    "on a weekday morning",
    "on Saturday afternoon",
    "after a late dinner",
    "on a rainy day",
    "with a friend who does not drive",
    "on a tight budget",
    "right after landing",
    "before an early flight home",
    "when it is really hot out",
    "on our last evening",
    "with about three hours to spare",
    "without spending more than twenty dollars",
)

# Filler questions. `{p}` is a place, `{d}` a detail. None of them states a fact about the user.
_TEMPLATES: tuple[str, ...] = (
    "Which beach near {p} is best for a long walk {d}?",
    "Where can we find really good tacos around {p} {d}? Street stands are fine.",
    "Is there a museum in or near {p} worth a visit {d}?",
    "Can you suggest an easy hike close to {p} with a view of the city {d}?",
    "How do we get from downtown to {p} by public transit {d}, and how long does it take?",
    "What is a good spot for coffee and a pastry in {p} {d}?",
    "Any bookshops or record stores in {p} worth browsing {d}?",
    "Where should we watch the sunset near {p} {d}?",
    "Is {p} a good area to explore on foot {d}, or is it too spread out?",
    "Which farmers market near {p} is worth a stop {d}?",
    "Are there any free things to do in {p} {d}?",
    "What kind of street food can we find around {p} {d}?",
    "Is it easy to rent bikes near {p}, and is there a safe route to ride {d}?",
    "Where is a quiet park in {p} for a picnic {d}?",
    "Which neighbourhood bakery in {p} should we not miss {d}?",
    "Is there live music anywhere in {p} {d}? Something small and local would be ideal.",
    "How crowded does {p} get {d}, and when is the best time to go?",
    "Can you plan a relaxed half day in {p} {d}?",
    "Where could we get good dim sum or dumplings near {p} {d}?",
    "Are there any interesting murals or street art to see in {p} {d}?",
    "Which rooftop or terrace in {p} has a nice view {d}?",
    "Is there a good vegetarian restaurant around {p} {d}?",
    "What is the best way to spend a lazy morning in {p} {d}?",
    "Any vintage shops or flea markets near {p} {d}?",
    "Where can we swim or at least dip our feet in the ocean near {p} {d}?",
    "Is the pier or the boardwalk near {p} worth it {d}, or is it a tourist trap?",
    "Which small gallery in {p} shows work by local artists {d}?",
    "Where can we get a good bowl of ramen or pho around {p} {d}?",
    "How safe is it to walk around {p} at night {d}?",
    "Is there a scenic drive or bus ride that passes through {p} {d}?",
    "Where can we find a good ice cream or shaved ice place in {p} {d}?",
    "Is there a botanical garden or a nice green space near {p} to visit {d}?",
    "Which viewpoint near {p} is good for photos {d}?",
    "Can we see a film in an old movie palace near {p} {d}?",
)


def _filler(i: int) -> str:
    """The i-th filler question (i ≥ 0), a deterministic mix of template, place and detail."""
    template = _TEMPLATES[i % len(_TEMPLATES)]
    place = _PLACES[(i * 7 + i // len(_TEMPLATES)) % len(_PLACES)]
    detail = _DETAILS[(i * 5 + i // len(_DETAILS)) % len(_DETAILS)]
    return template.format(p=place, d=detail)


def trip_script(n_turns: int) -> list[str]:
    """`n_turns` user messages: the fact-planting opening, then filler questions (same `n` → same script)."""
    if not isinstance(n_turns, int) or n_turns < 1:
        raise ValueError(f"n_turns must be a whole number ≥ 1, got {n_turns!r}")
    opening = list(OPENING_TURNS[:n_turns])
    return opening + [_filler(i) for i in range(n_turns - len(opening))]


# Details told once, mid-conversation, as a traveller would mention them: exact times, codes and flight
# numbers. Whether a rolling summary keeps them depends on the summariser and its cap; an episodic memory
# keeps the exact words either way.
PLANTED_DETAILS: tuple[tuple[int, str, str, str], ...] = (
    # (turn index, statement, recall question, substring the answer needs)
    (
        8,
        "We managed to get a table at Bestia on Friday at 7:45pm, just the three of us.",
        "What time is our dinner reservation at Bestia?",
        "7:45pm",
    ),
    (
        14,
        "I booked the Broad museum for Sunday at 2:30pm; the confirmation code is QX7-55K.",
        "What is the confirmation code for our Broad museum tickets?",
        "QX7-55K",
    ),
    (
        21,
        "My sister Ines is flying into LAX on Thursday, flight DL1187.",
        "Which flight does my sister Ines land on?",
        "DL1187",
    ),
)


def recall_script(n_turns: int) -> list[str]:
    """The trip script with `PLANTED_DETAILS` told at their turns: facts early, details a little later."""
    script = trip_script(n_turns)
    for index, statement, _question, _answer in PLANTED_DETAILS:
        if index < len(script):
            script[index] = statement
    return script


# The same planted items asked in other words (few shared terms): where lexical and embedding ranking differ.
PARAPHRASED: tuple[tuple[str, str], ...] = (
    ("Which colour do I like best?", "teal"),
    ("Which city is home for me?", "Portland"),
    ("Is there any food I must avoid?", "peanuts"),
    ("Where am I staying during the trip?", "Ace Hotel"),
    ("What's my pup called?", "Biscuit"),
    ("Remind me when we eat on Friday night.", "7:45pm"),
    ("What's the booking reference for the art gallery visit?", "QX7-55K"),
    ("When does Ines get in, and on which plane?", "DL1187"),
)


# Questions that quote an exact identifier from a detail: where word matching beats embeddings.
EXACT_LOOKUPS: tuple[tuple[str, str], ...] = (
    ("What was QX7-55K again?", "Broad"),
    ("Who is on DL1187?", "Ines"),
    ("Bestia: which day?", "Friday"),
)


def recall_questions() -> list[tuple[str, str, str]]:
    """Every planted question as (kind, question, expected substring): fact, detail, paraphrase or exact."""
    return (
        [("fact", q, a) for q, a in PLANTED_FACTS]
        + [("detail", q, a) for _i, _s, q, a in PLANTED_DETAILS]
        + [("paraphrase", q, a) for q, a in PARAPHRASED]
        + [("exact", q, a) for q, a in EXACT_LOOKUPS]
    )
