"""Plumbing: server-side compaction offline: `compact_20260112` summarises the conversation when a request reaches its
trigger, and a `compaction` block replaces what came before.

As the docs describe it (https://platform.claude.com/docs/en/build-with-claude/compaction, beta header
`compact-2026-01-12`; the fields, the 50,000-token minimum trigger and the models that have it are checked by
helpers.offline.beta):

- the API drops every message block before the last `compaction` block the request sends back (a block whose content
  is null is a failed compaction, and a no-op); usage and count_tokens count what is left;
- when the input reaches the trigger (`{"type": "input_tokens", "value": N}`, default 150,000) it summarises the
  conversation in an extra sampling step, puts a `compaction` block with the summary first in the response, and
  continues the response from the compacted context; later requests send the block back and continue from it;
- `usage.iterations` lists the compaction step (`"type": "compaction"`) and the reply (`"type": "message"`); the
  compaction step's tokens are not in the top-level usage fields (they are billed all the same);
- `pause_after_compaction: true`: the response is the compaction block alone, with stop_reason "compaction";
- `instructions` replaces the summarisation prompt;
- count_tokens generates nothing: it counts the request from its last compaction block on.

The stand-in's choices, stated: the summary is the offline summariser's (helpers.offline.tasks.summarise: what the
user stated, in the third person, newest value first) over the previous summary and the turns since, capped at
trigger / 50 tokens (the docs' example usage summarises 180,000 tokens into 3,500; a live model writes its own
summary, of its own length); custom `instructions` are counted, not followed. The message step continues from the
summary and the current turn (the turn since the user's last message), which the summary also holds.
"""

from __future__ import annotations

from helpers.offline.beta import COMPACT, Behaviour, Reply
from helpers.offline.bpe import content_text, count_text_tokens, request_tokens
from helpers.offline.tasks import summarise

__all__ = ["Compaction", "DEFAULT_TRIGGER", "SUMMARY_SHARE", "COMPACTED", "summary_cap", "from_last_compaction"]

DEFAULT_TRIGGER = 150_000
SUMMARY_SHARE = 50  # the summary is capped at trigger / SUMMARY_SHARE tokens
COMPACTED = "_offline_compaction"  # where prepare leaves the compaction for respond (a key no API field uses)
_TYPE = "compact_20260112"


def summary_cap(trigger: int) -> int:
    """The stand-in's summary length limit for a trigger (tokens)."""
    return max(256, trigger // SUMMARY_SHARE)


def _is_compaction(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "compaction" and bool(block.get("content"))


def from_last_compaction(messages: list[dict]) -> list[dict]:
    """The messages the API reads: everything from the last compaction block on (all of them when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i]["content"]
        blocks = content if isinstance(content, list) else []
        at = max((j for j, b in enumerate(blocks) if _is_compaction(b)), default=None)
        if messages[i]["role"] == "assistant" and at is not None:
            return [{**messages[i], "content": blocks[at:]}, *messages[i + 1 :]]
    return list(messages)


def _turn_start(messages: list[dict]) -> int:
    """Where the current turn starts: the user's last message that is not only tool results."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] == "user" and (
            isinstance(m["content"], str) or any(b.get("type") != "tool_result" for b in m["content"])
        ):
            return i
    return 0


def _summary(messages: list[dict], cap: int) -> str:
    """The offline summariser over the previous summary (a leading compaction block) and every turn since."""
    old, turns = "", []
    for m in messages:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        old += "".join(f"{b['content']} " for b in blocks if _is_compaction(b))
        text = content_text([b for b in blocks if not _is_compaction(b)]).strip()
        if text:
            turns.append(f"{'User' if m['role'] == 'user' else 'Assistant'}: {text}")
    task = (
        f"<existing_summary>\n{old.strip()}\n</existing_summary>\n<new_turns>\n" + "\n".join(turns) + "\n</new_turns>"
    )
    return summarise(task, cap, count_text_tokens)


class Compaction(Behaviour):
    """`compact_20260112` on the offline model (see the module docstring)."""

    feature = COMPACT

    def prepare(self, body: dict) -> dict:
        edit = next(e for e in body["context_management"]["edits"] if e.get("type") == _TYPE)
        messages = from_last_compaction(body["messages"])
        kept = {**body, "messages": messages}
        trigger = int((edit.get("trigger") or {"value": DEFAULT_TRIGGER})["value"])
        if "max_tokens" not in body:  # count_tokens (which has no max_tokens) generates nothing
            return kept
        tokens = request_tokens(kept)
        if tokens < trigger:
            return kept
        summary = _summary(messages, summary_cap(trigger))
        step = {
            "type": "compaction",
            "input_tokens": tokens + count_text_tokens(edit.get("instructions") or ""),
            "output_tokens": count_text_tokens(summary),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        block = {"type": "compaction", "content": summary}
        now = messages[_turn_start(messages) :]
        compacted = [{"role": "assistant", "content": [block]}, *now]
        return {**body, "messages": compacted, COMPACTED: {"block": block, "usage": step, "edit": edit}}

    def respond(self, body: dict, default: Reply) -> Reply:
        done = body.get(COMPACTED)
        if not done:
            return default
        if done["edit"].get("pause_after_compaction"):
            zero = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
            return Reply([dict(done["block"])], "compaction", default.extra, {**zero, "iterations": [done["usage"]]})
        usage = {**default.usage, "iterations": [done["usage"], {"type": "message"}]}
        return Reply([dict(done["block"]), *default.content], default.stop_reason, default.extra, usage, default.chat)
