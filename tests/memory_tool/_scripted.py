"""A scripted stand-in for the model, for tests of the memory-tool stage's turn loop (tests/memory_tool/).

It is NOT the offline model: until the offline model speaks the memory tool (issue 33, phase 2), these tests drive
the loop through the real SDK with a policy function that decides each reply from the request it receives, so the
loop, the persistence and the accounting are tested now. `ScriptedModel.requests` keeps every request body.
Token counts are the local BPE's count of the request's text (helpers.tokens.local_tokens): measured, not guessed.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import anthropic
import httpx2

from helpers.tokens import local_tokens

Policy = Callable[[dict], "list[dict] | httpx2.Response"]


def tool_use(n: int, **params) -> dict:
    return {"type": "tool_use", "id": f"toolu_{n:04d}", "name": "memory", "input": params}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def request_tokens(body: dict) -> int:
    """The input tokens the scripted model reports for a request: the BPE count of its system, tools, messages."""
    parts = [json.dumps(body.get("system", "")), json.dumps(body.get("tools", [])), json.dumps(body["messages"])]
    return sum(local_tokens(p) for p in parts)


class ScriptedModel:
    """An httpx2 transport answering /v1/messages with `policy(body)` and /v1/messages/count_tokens by the BPE."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.requests: list[dict] = []
        self.count = 0

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if request.url.path.endswith("/count_tokens"):
            return httpx2.Response(200, json={"input_tokens": request_tokens(body)})
        self.requests.append(body)
        blocks = self.policy(body)
        if isinstance(blocks, httpx2.Response):
            return blocks
        self.count += 1
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{self.count:04d}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": request_tokens(body), "output_tokens": local_tokens(json.dumps(blocks))},
            },
        )

    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key="scripted",
            base_url="http://scripted.invalid",
            http_client=httpx2.Client(transport=httpx2.MockTransport(self.handle)),
            max_retries=0,
        )


def this_turn(body: dict) -> tuple[str, list[dict], list[str]]:
    """The user's text of the turn in flight, the memory commands the model already sent in it, and their results."""
    messages = body["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str))
    sent, results = [], []
    for m in messages[start + 1 :]:
        for block in m["content"]:
            if block.get("type") == "tool_use":
                sent.append(block["input"])
            elif block.get("type") == "tool_result":
                content = block.get("content")
                results.append(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))
    return messages[start]["content"], sent, results


def note_taker(body: dict) -> list[dict]:
    """A small, fixed policy in the spirit of the docs' memory protocol: view the directory, read /memories/user.md
    if it is listed, write a statement ("My ... is ...") to it, then answer a question with the lines it read."""
    said, sent, results = this_turn(body)
    n = len(sent) + 1
    if not sent:
        return [text("Let me check my memory."), tool_use(n, command="view", path="/memories")]
    listed = "/memories/user.md" in results[0]
    if listed and not any(c.get("path") == "/memories/user.md" and c["command"] == "view" for c in sent):
        return [tool_use(n, command="view", path="/memories/user.md")]
    statement = not said.rstrip().endswith("?")
    if statement and not any(c["command"] in ("create", "insert") for c in sent):
        if listed:
            return [tool_use(n, command="insert", path="/memories/user.md", insert_line=0, insert_text=said)]
        return [tool_use(n, command="create", path="/memories/user.md", file_text=said + "\n")]
    if statement:
        return [text("Noted.")]
    read = [r for r in results if r.startswith("Here's the content of /memories/user.md")]
    lines = [line.split("\t", 1)[1] for line in read[-1].split("\n")[1:] if "\t" in line] if read else []
    return [text("From my memory: " + " ".join(lines) if lines else "I have nothing in memory about that.")]
