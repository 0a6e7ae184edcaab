"""One turn's tool loop. Taught in 06_memory_tool, section 'Watch the model use it'.

The SDK's `tool_runner` runs the memory commands the model asks for until it answers, at most `max_iterations`
requests.

Decisions, stated (helpers/memory_tool/stage.py's turn relies on them):
- The loop is `client.beta.messages.tool_runner`, live and offline alike: the runner sends each request, runs
  the model's memory commands through the tool (`MongoMemoryTool.call`), and sends their results back. It runs
  with `thread=False`: every request carries the whole turn (no server-side thread), so the offline model sees
  what the API sees and `final_request` is exactly what was sent last.
- At most `max_iterations` requests (default 8: a turn usually needs 2-4: view the directory, read or write a
  file, answer). When the model is still asking for commands at the last but one, the last request is sent with
  `tool_choice: {"type": "none"}` (the API's documented "no tools" choice), so every turn ends with a reply and
  a runaway loop costs a bounded number of calls.
- Each request is priced in the ledger as it arrives: "memory_tool" (a memory-upkeep call: its reply asked for
  commands) or "chat" (the reply the user reads), so memory upkeep shows apart as for the summary of 04.
- If the store fails during a command (`tool.failure`), the loop stops at once: the turn fails with that error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anthropic

from helpers.memory.history import request_input_tokens

__all__ = ["DEFAULT_MAX_ITERATIONS", "ToolLoop", "run_tool_loop"]

DEFAULT_MAX_ITERATIONS = 8


@dataclass
class ToolLoop:
    """What one turn's loop did: every reply (BetaMessage) in order, the last request as sent, and whether the cap
    forced the final reply (`tool_choice: none`)."""

    messages: list = field(default_factory=list)
    final_request: dict = field(default_factory=dict)
    capped: bool = False

    @property
    def final(self) -> Any:
        return self.messages[-1]

    @property
    def input_tokens(self) -> int:
        """Every input token of every request of the turn (cached parts included)."""
        return sum(request_input_tokens(m.usage) for m in self.messages)

    @property
    def output_tokens(self) -> int:
        return sum(m.usage.output_tokens for m in self.messages)


def _as_sent(block: Any) -> dict:
    """A reply's content block as the next request sends it back (the API's param shape: no None fields)."""
    sent = block.to_dict(exclude_none=True)
    sent.pop("parsed_output", None)  # the SDK's own parse result, never sent
    return sent


def run_tool_loop(
    client: anthropic.Anthropic,
    request: dict,
    tool: Any,
    *,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    ledger: Any = None,
) -> ToolLoop:
    """Run `request` (its `tools` entry is `tool`'s definition) through the SDK's tool runner; see the module doc."""
    if not isinstance(max_iterations, int) or isinstance(max_iterations, bool) or max_iterations < 2:
        raise ValueError(f"max_iterations must be a whole number >= 2 (commands, then a reply), got {max_iterations!r}")
    params = {k: v for k, v in request.items() if k != "tools"}
    runner = client.beta.messages.tool_runner(**params, tools=[tool], max_iterations=max_iterations, thread=False)
    loop, sent = ToolLoop(), list(request["messages"])
    try:
        for message in runner:
            loop.messages.append(message)
            asks = message.stop_reason == "tool_use"
            if ledger is not None:
                ledger.record("memory_tool" if asks else "chat", message.model, message.usage)
            if not asks or getattr(tool, "failure", None) is not None:
                break
            if len(loop.messages) == max_iterations - 1:  # the last request may not ask for more commands
                runner.set_messages_params(lambda p: {**p, "tool_choice": {"type": "none"}})
                loop.capped = True
            results = runner.generate_tool_call_response()  # runs the commands once; the runner sends these
            if results is None or getattr(tool, "failure", None) is not None:
                break
            sent += [{"role": "assistant", "content": [_as_sent(block) for block in message.content]}, results]
    finally:
        runner.close()
    loop.final_request = {**request, "messages": sent}
    if loop.capped:
        loop.final_request["tool_choice"] = {"type": "none"}
    return loop
