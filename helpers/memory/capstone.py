"""The capstone's small elephant: `build_request` and `turn` on a plain dict. Taught in 07_elephant, section 'Your `turn()`'.

What the learner wires from their own pieces in 07, kept here as the package's answer (the exercises' fallbacks,
same signatures) and as the pieces 07 imports: `trim_by_exchanges` and `merge` as 04 writes them, `word_rank` and
`pack`. The state is one dict (`new_elephant`): the client and models, the embedder, the three budgets, and the
memory itself (the window, the summary, every past exchange as text with its embedding). Nothing is stored in a
database and nothing is shared between users: `VectorMemory` (helpers/memory/long_term.py) is the package's full
version of the same loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from helpers.memory.summary import system_with_summary
from helpers.prompts import MEMORY_CLOSE, MEMORY_OPEN, SCOUT_PERSONA, SUMMARY_TASK, neutralise_tags
from helpers.retrieval.bm25 import bm25_tokens
from helpers.retrieval.embeddings import embed_query
from helpers.retrieval.ranking import LEXICAL_WEIGHT, cosine_rank, rrf_ranking
from helpers.tokens import local_tokens

__all__ = ["new_elephant", "trim_by_exchanges", "merge", "word_rank", "pack", "build_request", "turn"]


def new_elephant(
    client: Any, settings: Any, embedder: Any, *, window: int = 300, summary_cap: int = 24, memories: int = 300
) -> dict:
    """A fresh elephant: its client and models, its embedder, its budgets (tokens), and an empty memory."""
    return {
        "client": client,
        "model": settings.chat_model,
        "reply_max_tokens": settings.reply_max_tokens,
        "summary_model": settings.summary_model,
        "embedder": embedder,
        "window_budget": window,
        "summary_cap": summary_cap,
        "memory_budget": memories,
        "window": [],  # [{"role", "content", "tokens"}, ...], oldest first
        "summary": "",
        "texts": [],  # every past exchange, "User: ...\nAssistant: ..."
        "vectors": [],  # their embeddings, in the same order
    }


def trim_by_exchanges(messages: list[dict], budget: int) -> tuple[list[dict], list[dict]]:
    """Keep the newest whole exchanges that fit `budget` tokens (the newest always); return (kept, dropped)."""
    exchanges: list[list[dict]] = []  # [[user, assistant], ...], oldest first
    for m in messages:
        if m["role"] == "user" or not exchanges:
            exchanges.append([])
        exchanges[-1].append(m)
    if not exchanges:
        return [], []
    keep = [exchanges.pop()]  # the newest exchange stays even if it alone is over budget
    used = sum(m["tokens"] for m in keep[0])
    while exchanges and used + sum(m["tokens"] for m in exchanges[-1]) <= budget:
        used += sum(m["tokens"] for m in exchanges[-1])
        keep.insert(0, exchanges.pop())
    kept = [m for exchange in keep for m in exchange]
    return kept, messages[: len(messages) - len(kept)]


def merge(client: Any, model: str, old_summary: str, dropped: list[dict], max_tokens: int) -> tuple[str, int]:
    """Merge `dropped` turns into `old_summary` with one call; return (summary, its output tokens)."""
    turns = "\n".join(
        f"{'User' if m['role'] == 'user' else 'Assistant'}: {' '.join(m['content'].split())}" for m in dropped
    )
    body = f"<existing_summary>\n{old_summary}\n</existing_summary>\n<new_turns>\n{turns}\n</new_turns>"
    reply = client.messages.create(
        model=model, max_tokens=max_tokens, system=SUMMARY_TASK, messages=[{"role": "user", "content": body}]
    )
    return "".join(b.text for b in reply.content if b.type == "text").strip(), reply.usage.output_tokens


def word_rank(question: str, texts: list[str]) -> list[int]:
    """Row numbers of `texts`, most words shared with `question` first (BM25's words, without its weights)."""
    asked = set(bm25_tokens(question))
    return sorted(range(len(texts)), key=lambda i: -len(asked & set(bm25_tokens(texts[i]))))


def pack(texts: list[str], budget: int) -> list[str]:
    """The texts, best first, that fit `budget` tokens together (counted by the local BPE)."""
    chosen, used = [], 0
    for text in texts:
        if used + local_tokens(text) <= budget:
            chosen.append(text)
            used += local_tokens(text)
    return chosen


def build_request(me: dict, text: str) -> dict:
    """The read path: rank the memories by meaning and by words, fuse, pack into the memory budget, then the request:
    persona + summary + memories in `system`, the window (role and content only) + the new message in `messages`."""
    memories: list[str] = []
    if me["texts"]:
        by_meaning = cosine_rank(embed_query(me["embedder"], text), np.array(me["vectors"]))
        fused = rrf_ranking([by_meaning, word_rank(text, me["texts"])], weights=[1.0, LEXICAL_WEIGHT])
        memories = pack([me["texts"][i] for i in fused], me["memory_budget"])
    system = system_with_summary(SCOUT_PERSONA, me["summary"])
    if memories:
        system += "\n\n" + MEMORY_OPEN + "\n".join(neutralise_tags(m) for m in memories) + MEMORY_CLOSE
    window = [{"role": m["role"], "content": m["content"]} for m in me["window"]]
    return {"system": system, "messages": [*window, {"role": "user", "content": text}]}


def turn(me: dict, text: str) -> str:
    """The write path: send `build_request`, add the exchange to the window (with its tokens), trim it to the window
    budget, merge what was dropped into the summary, store the exchange as a memory with its embedding; the reply."""
    request = build_request(me, text)
    reply = me["client"].messages.create(model=me["model"], max_tokens=me["reply_max_tokens"], **request)
    answer = "".join(b.text for b in reply.content if b.type == "text")
    exchange = [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
    me["window"] += [{**m, "tokens": local_tokens(m["content"])} for m in exchange]
    me["window"], dropped = trim_by_exchanges(me["window"], me["window_budget"])
    if dropped:
        me["summary"], _ = merge(me["client"], me["summary_model"], me["summary"], dropped, me["summary_cap"])
    said = f"User: {text}\nAssistant: {answer}"
    me["texts"].append(said)
    me["vectors"].append(me["embedder"].embed([said])[0])
    return answer
