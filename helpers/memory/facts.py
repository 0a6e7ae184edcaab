"""Semantic memory: per-user facts, deduplicated, superseded (not deleted) when they change. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`FactMemory.add_facts(user_id, facts, source)` decides for each fact sentence:

1. the same normalised text is already stored            → touch it (updated_at, seen_count + 1)
2. an active fact is a near-duplicate (cosine ≥ 0.92,
   same numbers, same negation)                          → touch that one instead of adding
3. otherwise ask the model (RECONCILE_TASK) about the closest active facts (cosine ≥ 0.45): those the
   new fact makes outdated get `superseded_by` = new id and `valid_to` = now; they stay in the
   collection as history but search no longer returns them. A fact the model calls a duplicate is
   touched instead.

The thresholds were measured with all-MiniLM-L6-v2 (see notebook 05): paraphrases score 0.87-0.99
("favorite color is teal" vs "favourite colour is teal": 0.977), contradictions 0.51-0.85 ("lives in
Denver" vs "lives in Los Angeles": 0.705), unrelated facts below 0.40. Numbers and negation barely
move the cosine ("birthday is March 3" vs "March 4": 0.950; "allergic" vs "not allergic": 0.945), so
a near-duplicate must also carry the same numbers and the same negation.

Writing memories costs an extraction call and some embeddings per turn; `FactWorker` (helpers.memory.facts_worker,
re-exported here) moves that off the reply path (a thread with a bounded queue that never drops work).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import anthropic
from bson import ObjectId

from helpers import prompts
from helpers.config import ConfigError, Settings, load_settings
from helpers.conversation import text_of
from helpers.db.crash import crash_point
from helpers.memory.facts_worker import FactWorker, WorkerError, measure_extraction_latency
from helpers.memory.retention import extract_facts
from helpers.memory.structured import ToolOutputError, call_tool
from helpers.retrieval import Hit, MemoryIndex, as_utc, check_source, check_user_id, content_hash, utc_now

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store
    from helpers.retrieval.embeddings import Embedder

__all__ = [
    "FactMemory",
    "FactResult",
    "Remembered",
    "FactWorker",
    "WorkerError",
    "near_duplicate",
    "measure_extraction_latency",
    "DEDUP_THRESHOLD",
    "CANDIDATE_THRESHOLD",
    "MAX_CANDIDATES",
]

DEDUP_THRESHOLD = 0.92  # cosine at or above which a fact is the same as a stored one (plus the guards below)
CANDIDATE_THRESHOLD = 0.45  # cosine at or above which a stored fact may be contradicted (sent to the model)
MAX_CANDIDATES = 5  # stored facts shown to the model per new fact
MAX_FACT_CHARS = 400  # longer "facts" are not facts: skipped

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"\w*\d[\w]*(?:[.,:/-]\d+)*")
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|neither|nor|without|longer)\b|n't\b", re.I)


def _numbers(text: str) -> frozenset[str]:
    return frozenset(token.lower() for token in _NUMBER.findall(text))


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(text.replace("’", "'")))


def near_duplicate(a: str, b: str, similarity: float, threshold: float = DEDUP_THRESHOLD) -> bool:
    """Same fact in other words: cosine ≥ threshold, the same numbers and the same negation."""
    return similarity >= threshold and _numbers(a) == _numbers(b) and _negated(a) == _negated(b)


@dataclass(frozen=True)
class FactResult:
    """What `add_facts` did with one fact: added, touched (same text), merged (near-duplicate) or skipped."""

    action: str
    id: str | None
    text: str
    matched: str | None = None  # the stored fact it was merged into / touched
    similarity: float | None = None  # cosine to `matched`
    replaced: list[str] = field(default_factory=list)  # ids this fact superseded
    reconciled: bool = True  # False if the contradiction check failed (the fact was still stored)


@dataclass(frozen=True)
class Remembered:
    """What `remember` stored for one exchange."""

    facts: list[FactResult]
    episode_id: str | None


class FactMemory:
    """Facts per user in the `memories` collection: add with dedup and supersede, extract from exchanges. Taught in 05.

    `client` (an anthropic.Anthropic, live or offline) is needed for extraction and for the
    contradiction check; without it `add_facts` still deduplicates but never supersedes.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        client: anthropic.Anthropic | None = None,
        settings: Settings | None = None,
        ledger=None,
        *,
        index: MemoryIndex | None = None,
        dedup_threshold: float = DEDUP_THRESHOLD,
        candidate_threshold: float = CANDIDATE_THRESHOLD,
        max_candidates: int = MAX_CANDIDATES,
    ):
        if index is not None and embedder is not None and index.embedder is not embedder:
            raise ConfigError("FactMemory got an index with another embedder; pass one of them, or the same one")
        self.settings = settings or load_settings()
        self.index = index or MemoryIndex(store, embedder)
        self.store = store
        self.embedder = self.index.embedder
        self.client = client
        self.ledger = ledger
        self.model = self.settings.extraction_model
        self.dedup_threshold = dedup_threshold
        self.candidate_threshold = candidate_threshold
        self.max_candidates = max_candidates
        self.stats: Counter = Counter()
        self._lock = threading.RLock()  # one dedup decision at a time per process (worker + caller)

    def __repr__(self) -> str:
        return f"FactMemory({self.store!r}, embedder={self.embedder.name!r}, model={self.model!r})"

    # -- forgetting
    def ensure_ttl_index(self, seconds: int | None) -> str:
        """Forget memories not stated again for `seconds` (TTL index on `expires_at`; idempotent). See MemoryIndex."""
        return self.index.ensure_ttl_index(seconds)

    # -- the contradiction check
    def reconcile(self, new_fact: str, older: list[str]) -> tuple[list[int], list[int]]:
        """Ask the model which `older` facts `new_fact` makes outdated and which it repeats: (replaces, duplicates).

        Uses the forced `reconcile_facts` tool; unusable output raises ToolOutputError (never "no change")."""
        if self.client is None:
            raise ConfigError("reconcile needs a client: FactMemory(..., client=get_client(settings))")
        lines = "\n".join(f"{i}. {' '.join(text.split())}" for i, text in enumerate(older))
        body = f"<new_fact>\n{' '.join(new_fact.split())}\n</new_fact>\n<older_facts>\n{lines}\n</older_facts>"
        self.stats["reconcile_calls"] += 1
        data = call_tool(
            self.client,
            model=self.model,
            max_tokens=200,
            system=prompts.RECONCILE_TASK,
            tool=prompts.RECONCILE_TOOL,
            content=body,
            ledger=self.ledger,
            purpose="reconcile",
        )
        wrong = [i for i in data["replaces"] + data["duplicates"] if i >= len(older)]
        if wrong:
            raise ToolOutputError(
                prompts.RECONCILE_TOOL["name"], f"index {wrong[0]} is not one of the {len(older)} older facts", data
            )
        replaces = sorted(set(data["replaces"]))
        return replaces, sorted(set(data["duplicates"]) - set(replaces))

    # -- writing facts
    def add_facts(
        self,
        user_id: str,
        facts: list[str],
        source: dict | None = None,
        *,
        now: datetime | None = None,
        vectors: dict[str, Any] | None = None,
    ) -> list[FactResult]:
        """Store fact sentences for one user with dedup and supersede; one FactResult per input fact.

        `vectors` maps fact texts to embeddings computed beforehand (an import embeds all its facts in one batch).
        """
        user_id = check_user_id(user_id)
        if isinstance(facts, str):
            raise TypeError("add_facts takes a list of fact sentences; wrap a single one in a list")
        source = check_source(source)
        results = []
        with self._lock:
            for fact in facts:
                text = " ".join(fact.split()) if isinstance(fact, str) else ""
                if not text or len(text) > MAX_FACT_CHARS:
                    results.append(FactResult("skipped", None, text))
                    continue
                results.append(
                    self._add_one(user_id, text, source, as_utc(now) or utc_now(), (vectors or {}).get(text))
                )
        for result in results:
            self.stats[result.action] += 1
            self.stats["superseded"] += len(result.replaced)
        return results

    def _add_one(self, user_id: str, text: str, source: dict, now: datetime, vector=None) -> FactResult:
        same = self.index.find_hash(user_id, "fact", content_hash(text))
        if same is not None:
            self.index.touch(user_id, same.id, now=now)
            # a process killed between storing this fact and superseding what it replaces: finish that now
            owed = (self.index.store.memories.find_one({"_id": ObjectId(same.id)}, {"replaces": 1}) or {}).get(
                "replaces"
            )
            replaced = self._supersede_ids(user_id, [str(i) for i in owed or []], same.id, now, report_none=True)
            return FactResult("touched", same.id, text, matched=same.id, similarity=1.0, replaced=replaced)
        vector = self.embedder.embed([text])[0] if vector is None else vector
        near = self.index.neighbours(
            user_id,
            vector,
            kinds=("fact",),
            min_similarity=self.candidate_threshold,
            limit=self.max_candidates,
            now=now,
        )
        if near and near_duplicate(text, near[0].text, near[0].similarity or 0.0, self.dedup_threshold):
            self.index.touch(user_id, near[0].id, now=now)
            return FactResult("merged", near[0].id, text, matched=near[0].id, similarity=near[0].similarity)
        replaces: list[int] = []
        duplicates: list[int] = []
        reconciled = True
        if near and self.client is not None:
            try:
                replaces, duplicates = self.reconcile(text, [hit.text for hit in near])
            except anthropic.APIError as err:  # keep the fact; both stay active, the newer date wins in the prompt
                reconciled = False
                self.stats["reconcile_errors"] += 1
                log.warning("contradiction check failed for user %r (%s); fact stored without it", user_id, err)
        if duplicates:
            target = near[duplicates[0]]
            self.index.touch(user_id, target.id, now=now)
            replaced = self._supersede(user_id, [near[i] for i in replaces if near[i].id != target.id], target.id, now)
            return FactResult(
                "merged", target.id, text, matched=target.id, similarity=target.similarity, replaced=replaced
            )
        doc = self.index.new_doc(user_id, "fact", text, vector, source, now=now)
        if replaces:  # what it replaces is stored with it (one write): a kill before the supersede cannot lose it
            doc["replaces"] = [ObjectId(near[i].id) for i in replaces]
        new_id = self.index.insert(doc)
        if replaces:
            crash_point("facts:added")
        replaced = self._supersede(user_id, [near[i] for i in replaces], new_id, now)
        return FactResult("added", new_id, text, replaced=replaced, reconciled=reconciled)

    def _supersede(self, user_id: str, old: list[Hit], new_id: str, now: datetime) -> list[str]:
        """Mark old facts as replaced by `new_id` (kept as history, hidden from search)."""
        return self._supersede_ids(user_id, [hit.id for hit in old], new_id, now)

    def _supersede_ids(
        self, user_id: str, ids: list[str], new_id: str, now: datetime, report_none: bool = False
    ) -> list[str]:
        """`ids` marked replaced by `new_id`, where still active; `report_none`: [] unless one was still active."""
        if ids:
            changed = self.index.update(
                user_id,
                ids,
                {"superseded_by": ObjectId(new_id), "valid_to": now, "active": False, "updated_at": now},
                only_active=True,
            )
            if report_none and not changed:
                return []
        return ids

    def extract_and_store(
        self, user_id: str, exchange_messages: list[dict], source: dict | None = None, *, now: datetime | None = None
    ) -> list[FactResult]:
        """Extract the facts the user stated in an exchange (helpers.memory.retention.extract_facts), then `add_facts`."""
        user_id = check_user_id(user_id)
        if self.client is None:
            raise ConfigError("extract_and_store needs a client: FactMemory(..., client=get_client(settings))")
        facts = extract_facts(self.client, self.model, list(exchange_messages), self.ledger)
        return self.add_facts(user_id, facts, source, now=now)

    def remember(
        self,
        user_id: str,
        exchange_messages: list[dict],
        source: dict | None = None,
        *,
        episode: bool = True,
        now: datetime | None = None,
    ) -> Remembered:
        """After a turn: store the exchange verbatim (with `episode`), then extract and store its facts.

        The episode goes first: it needs no model call, so an extraction failure cannot lose it (and a
        retry does not duplicate it: episodes are idempotent per source).
        """
        user_id = check_user_id(user_id)
        episode_id = None
        if episode:
            user_text = " ".join(text_of(m) for m in exchange_messages if m["role"] == "user")
            reply = " ".join(text_of(m) for m in exchange_messages if m["role"] == "assistant")
            if user_text.strip():
                src = check_source(source)
                episode_id = self.index.add_episode(user_id, src["session_id"], src["seq"], user_text, reply, now=now)
        return Remembered(self.extract_and_store(user_id, exchange_messages, source, now=now), episode_id)

    # -- reading
    def active(self, user_id: str) -> list[Hit]:
        """The user's current facts (not superseded, not expired), oldest first."""
        return self.index.all(user_id, kinds=("fact",))

    def history(self, user_id: str) -> list[dict]:
        """Every fact ever stored for the user, superseded ones included, oldest first (without embeddings)."""
        user_id = check_user_id(user_id)
        docs = self.store.memories.find({"user_id": user_id, "kind": "fact"}, {"embedding": 0})
        return sorted(docs, key=lambda d: (as_utc(d.get("created_at")), str(d["_id"])))
