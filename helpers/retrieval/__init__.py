"""Long-term memory retrieval: store per user, rank (BM25, cosine, RRF), inject. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

Read in this order: `schema.py` (the memory document) → `bm25.py` → `ranking.py` (`rrf`) → `names.py` (the
people of a conversation as a filter) → `index.py` (`MemoryIndex.search` composes them; `writes.py` stores
memories, `lookups.py` reads them by hash, source or nearest vector) → `inject.py` (into the prompt). Plumbing you can skip: `cache.py`, `columns.py` and `postings.py` (a user's rows as
arrays), `users.py` (which users a process holds), `snapshot.py` (their index files), `changes.py` (the change log
that keeps processes coherent), `atlas.py`.
"""

from __future__ import annotations

from helpers.retrieval.atlas import VECTOR_INDEX_NAME, create_vector_index, supports_vector_search
from helpers.retrieval.bm25 import bm25_scores, bm25_tokens
from helpers.retrieval.index import MODES, MemoryIndex
from helpers.retrieval.inject import (
    BLOCK_TAG,
    Packing,
    block_line,
    day_label,
    format_block,
    neutralise_tags,
    pack_by_value,
    relevance,
    with_neighbours,
)
from helpers.retrieval.ranking import LEXICAL_WEIGHT, RRF_K, cosine_scores, recency_weight, rrf, top_k
from helpers.retrieval.schema import (
    KINDS,
    Hit,
    TurnUnit,
    as_utc,
    check_kinds,
    check_source,
    check_user_id,
    clip,
    content_hash,
    decode_vector,
    encode_vector,
    episode_text,
    normalise_text,
    turn_text,
    utc_now,
)

__all__ = [
    "Hit",
    "MemoryIndex",
    "format_block",
    "block_line",
    "day_label",
    "Packing",
    "relevance",
    "pack_by_value",
    "with_neighbours",
    "TurnUnit",
    "turn_text",
    "neutralise_tags",
    "BLOCK_TAG",
    "rrf",
    "cosine_scores",
    "top_k",
    "recency_weight",
    "bm25_tokens",
    "bm25_scores",
    "normalise_text",
    "content_hash",
    "encode_vector",
    "decode_vector",
    "check_user_id",
    "check_source",
    "check_kinds",
    "clip",
    "episode_text",
    "utc_now",
    "as_utc",
    "supports_vector_search",
    "create_vector_index",
    "KINDS",
    "MODES",
    "RRF_K",
    "LEXICAL_WEIGHT",
    "VECTOR_INDEX_NAME",
]
