"""Long-conversation benchmark: the raw-turn methods (the whole transcript; the last, BM25, embedding and hybrid best turns that fit a budget). Tools for further/05_long_conversations, section 'One context budget, split by evidence'.

Each builds a question's request from the dated transcript alone, at the same total token budget as the project's
stages (system + turns + question, as counted by the model's count_tokens — the offline BPE without a key):
  full        the whole dated transcript (upper bound; one row, no budget)
  last_turns  the most recent turns that fit
  bm25        BM25 over raw turns, best turns that fit
  embeddings  local MiniLM cosine over raw turns, best turns that fit
  hybrid      reciprocal-rank fusion of bm25 and embeddings
Turns are shown with their session's date, as `[2023-05-08] user: ...`. helpers.bench.longmem.methods runs them
beside the stages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from helpers.bench.longmem.data import Conversation, Question
from helpers.memory.transcript import parse_when
from helpers.retrieval import bm25_tokens
from helpers.retrieval.inject import day_label
from helpers.tokens import local_tokens

__all__ = ["BASELINES", "BM25", "rrf", "RunContext", "turn_line", "full_request", "baseline_builders"]

BASELINES = ("last_turns", "bm25", "embeddings", "hybrid")
RRF_K = 60
BLOCK_HEAD = "Earlier conversation (retrieved turns, dated):"


class BM25:
    """Okapi BM25 (k1=1.2, b=0.75) over a list of texts, tokenised like the project's lexical index."""

    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75):
        self.docs = [bm25_tokens(t) for t in texts]
        self.k1, self.b = k1, b
        self.avg = sum(map(len, self.docs)) / max(1, len(self.docs))
        df: dict[str, int] = {}
        for doc in self.docs:
            for term in set(doc):
                df[term] = df.get(term, 0) + 1
        n = len(self.docs)
        self.idf = {t: float(np.log(1 + (n - f + 0.5) / (f + 0.5))) for t, f in df.items()}

    def scores(self, query: str) -> np.ndarray:
        """One score per text (0 where no query term occurs)."""
        terms = [t for t in bm25_tokens(query) if t in self.idf]
        out = np.zeros(len(self.docs))
        for i, doc in enumerate(self.docs):
            for term in terms:
                tf = doc.count(term)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * len(doc) / self.avg)
                    out[i] += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
        return out


def rrf(*rankings: list[int], k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion of several rankings of the same items (best first)."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda i: (-score[i], i))


@dataclass
class RunContext:
    """What every method of one run shares: client, settings, token counters, persona, embedder, cache dir."""

    client: object
    settings: object
    persona: str
    embedder: object
    cache: Path | None

    def count(self, request: dict) -> int:
        """Input tokens of `request` as the model counts them (count_tokens; offline: local BPE)."""
        kwargs = {"system": request["system"]} if request.get("system") else {}
        return self.client.messages.count_tokens(
            model=self.settings.chat_model, messages=request["messages"], **kwargs
        ).input_tokens


def turn_line(turn: dict) -> str:
    return f"{turn.get('speaker') or turn['role']}: {turn['content']}"


def _day(turn: dict) -> str:
    return f"[{day_label(parse_when(turn['ts']))}]"


def _dated(turns: list[dict]) -> list[str]:
    """Turns in the order given, each session's date line before its first turn (as the vector stage shows them)."""
    lines, last = [], None
    for turn in turns:
        if _day(turn) != last:
            last = _day(turn)
            lines.append(last)
        lines.append(turn_line(turn))
    return lines


def _request(ctx: RunContext, lines: list[str], question: str) -> dict:
    system = ctx.persona + ("\n\n" + BLOCK_HEAD + "\n" + "\n".join(lines) if lines else "")
    return {"system": system, "messages": [{"role": "user", "content": question}]}


def full_request(ctx: RunContext, conv: Conversation, question: str) -> dict:
    lines = _dated(conv.turns)
    return {
        "system": ctx.persona + "\n\nThe whole conversation so far:\n" + "\n".join(lines),
        "messages": [{"role": "user", "content": question}],
    }


def _fill(
    ctx: RunContext,
    conv: Conversation,
    costs: list[int],
    order: list[int],
    question: str,
    budget: int,
    contiguous: bool,
) -> dict:
    """Take turns in `order` while the request stays within `budget` (a turn pays its date line when its day is
    new); show them in time order under their dates, verified by one count (the last taken dropped if over)."""
    used = ctx.count(_request(ctx, ["x"], question))  # persona + block heading + question
    chosen, days = [], set()
    for i in order:
        day = _day(conv.turns[i])
        cost = costs[i] + (0 if day in days else local_tokens("\n" + day))
        if used + cost > budget:
            if contiguous:
                break
            continue
        chosen.append(i)
        days.add(day)
        used += cost
    request = _request(ctx, _dated([conv.turns[i] for i in sorted(chosen)]), question)
    while chosen and ctx.count(request) > budget:  # BPE is not exactly additive
        chosen.pop()
        request = _request(ctx, _dated([conv.turns[i] for i in sorted(chosen)]), question)
    return request


def _embeddings(ctx: RunContext, texts: list[str]) -> np.ndarray:
    """Embeddings of `texts`, cached on disk by content (the corpus is deterministic)."""
    key = hashlib.sha256(("\x00".join(texts) + ctx.embedder.__class__.__name__).encode()).hexdigest()[:24]
    path = ctx.cache / f"emb-{key}.npy" if ctx.cache else None
    if path is not None and path.exists():
        return np.load(path)
    vectors = ctx.embedder.embed(texts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors


def baseline_builders(ctx: RunContext, conv: Conversation) -> dict[str, Callable[[Question, int], dict]]:
    texts = [t["content"] for t in conv.turns]
    bm25 = BM25(texts)
    turn_vecs = _embeddings(ctx, texts)
    question_vecs = dict(
        zip(
            (q.text for q in conv.questions),
            _embeddings(ctx, [q.text for q in conv.questions]) if conv.questions else [],
        )
    )

    def lexical(q: Question) -> list[int]:
        s = bm25.scores(q.text)
        return [int(i) for i in np.argsort(-s, kind="stable") if s[i] > 0]

    def lexical_filled(q: Question) -> list[int]:
        # what a user of plain BM25 would send: the matching turns, then the newest others, up to the budget
        hits = lexical(q)
        matched = set(hits)
        return hits + [i for i in newest if i not in matched]

    def semantic(q: Question) -> list[int]:
        return [int(i) for i in np.argsort(-(turn_vecs @ question_vecs[q.text]), kind="stable")]

    newest = list(range(len(texts) - 1, -1, -1))
    costs = [local_tokens("\n" + turn_line(t)) for t in conv.turns]  # one line's tokens in the block
    return {
        "last_turns": lambda q, b: _fill(ctx, conv, costs, newest, q.text, b, contiguous=True),
        "bm25": lambda q, b: _fill(ctx, conv, costs, lexical_filled(q), q.text, b, contiguous=False),
        "embeddings": lambda q, b: _fill(ctx, conv, costs, semantic(q), q.text, b, contiguous=False),
        "hybrid": lambda q, b: _fill(ctx, conv, costs, rrf(lexical(q), semantic(q)), q.text, b, contiguous=False),
    }
