"""Tools: the exercises of core lesson 07 (its notebook in notebooks/solutions/ holds the solutions)."""

from __future__ import annotations

from types import SimpleNamespace

from helpers.exercises.check import Case, Exercise
from helpers.memory.capstone import new_elephant
from helpers.memory.summary import system_with_summary
from helpers.prompts import MEMORY_CLOSE, MEMORY_OPEN, SCOUT_PERSONA, SUMMARY_TASK
from helpers.retrieval.embeddings import shared_local
from helpers.tokens import local_tokens

__all__ = ["EXERCISES", "FakeClient"]

SETTINGS = SimpleNamespace(chat_model="chat-model", reply_max_tokens=64, summary_model="summary-model")
FLIGHT = "User: Our flight home is DL1187 on Sunday.\nAssistant: Noted: DL1187."
TACOS = "User: I could eat tacos every day.\nAssistant: Tacos it is."
BIKES = "User: The bike lock code is 4471.\nAssistant: Got it."


class FakeClient:
    """A stand-in client for the checks: keeps every request; chat calls answer "reply 1", "reply 2", ...; summary
    calls (system = SUMMARY_TASK) answer "summary 1", ... ."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.messages = self

    def create(self, **request):
        self.sent.append(request)
        kind = "summary" if request.get("system") == SUMMARY_TASK else "reply"
        n = sum((r.get("system") == SUMMARY_TASK) == (kind == "summary") for r in self.sent)
        block = SimpleNamespace(type="text", text=f"{kind} {n}")
        return SimpleNamespace(content=[block], usage=SimpleNamespace(output_tokens=2), stop_reason="end_turn")

    def chats(self) -> list[dict]:
        return [r for r in self.sent if r.get("system") != SUMMARY_TASK]


def elephant(client=None, **budgets) -> dict:
    return new_elephant(client or FakeClient(), SETTINGS, shared_local(), **budgets)


def remembering(*texts: str, memories: int = 300, summary: str = "", window: list | None = None) -> dict:
    me = elephant(memories=memories)
    me["texts"] = list(texts)
    me["vectors"] = list(shared_local().embed(list(texts))) if texts else []
    me["summary"], me["window"] = summary, window or []
    return me


def memory_block(request: dict) -> str:
    system = request["system"]
    if MEMORY_OPEN not in system:
        return ""
    return system[system.index(MEMORY_OPEN) : system.index(MEMORY_CLOSE, system.index(MEMORY_OPEN))]


HI = [{"role": "user", "content": "Hi Scout", "tokens": 3}, {"role": "assistant", "content": "Hello!", "tokens": 2}]
ASK = "Which flight do we take home?"


def _turns(fn, texts, **budgets):
    client = FakeClient()
    me = elephant(client, **budgets)
    replies = [fn(me, text) for text in texts]
    return me, client, replies


LONG = ["My sister Ines flies into LAX on Thursday.", "We sit in section 48, row K at the game.", "What a trip!"]

EXERCISES: list[Exercise] = [
    Exercise(
        id="07.build_request",
        title="the read path: the request your elephant sends",
        fallback="helpers.memory.capstone:build_request",
        hint="rank me['texts'] with cosine_rank(embed_query(me['embedder'], text), np.array(me['vectors'])) and "
        "word_rank(text, me['texts']), fuse with rrf(..., weights=[1.0, 0.5]), pack the texts into "
        "me['memory_budget']; system = system_with_summary(SCOUT_PERSONA, me['summary']) plus the memories between "
        "MEMORY_OPEN and MEMORY_CLOSE (only if there are any); messages = the window as {role, content} + the new "
        "user message.",
        cases=(
            Case(
                "a fresh elephant sends the persona and the new message, nothing else",
                make=lambda: ((elephant(), "Hi Scout"), {}),
                expect={"system": SCOUT_PERSONA, "messages": [{"role": "user", "content": "Hi Scout"}]},
                shown_input="build_request(fresh elephant, 'Hi Scout')",
            ),
            Case(
                "the window goes first in `messages` (role and content only: no 'tokens'), the new message last",
                make=lambda: ((remembering(window=[dict(m) for m in HI]), "Where to?"), {}),
                test=lambda got: (
                    got["messages"]
                    == [
                        {"role": "user", "content": "Hi Scout"},
                        {"role": "assistant", "content": "Hello!"},
                        {"role": "user", "content": "Where to?"},
                    ]
                ),  # fmt: skip
                expect_text="messages = [Hi Scout (user), Hello! (assistant), Where to? (user)], without 'tokens'",
                shown_input="build_request(me, 'Where to?') with me['window'] = [Hi Scout / Hello!, each with tokens]",
            ),
            Case(
                "the summary goes into `system`, after the persona",
                make=lambda: ((remembering(summary="Maya lives in Portland."), "Hi"), {}),
                test=lambda got: got["system"] == system_with_summary(SCOUT_PERSONA, "Maya lives in Portland."),
                expect_text="system == system_with_summary(SCOUT_PERSONA, me['summary'])",
                shown_input="build_request(me, 'Hi') with me['summary'] = 'Maya lives in Portland.'",
            ),
            Case(
                "the memory that answers the question is sent, between MEMORY_OPEN and MEMORY_CLOSE",
                make=lambda: ((remembering(TACOS, FLIGHT, BIKES), ASK), {}),
                test=lambda got: "DL1187" in memory_block(got) and got["system"].startswith(SCOUT_PERSONA),
                expect_text="'DL1187' inside the memory block of `system`, which starts with the persona",
                shown_input=f"build_request(me, {ASK!r}) with three memories: tacos, the flight, the bike lock",
            ),
            Case(
                "only what fits the memory budget, best first: here the flight alone",
                make=lambda: ((remembering(TACOS, FLIGHT, BIKES, memories=local_tokens(FLIGHT) + 2), ASK), {}),
                test=lambda got: (
                    "DL1187" in memory_block(got) and "tacos" not in got["system"] and "4471" not in got["system"]
                ),  # fmt: skip
                expect_text="the flight in the memory block; the tacos and the bike lock left out",
                shown_input=f"build_request(me, {ASK!r}) with me['memory_budget'] = the flight's tokens + 2",
            ),
        ),
    ),
    Exercise(
        id="07.turn",
        title="the write path: one turn of your elephant",
        fallback="helpers.memory.capstone:turn",
        hint="request = build_request(me, text); reply = me['client'].messages.create(model=me['model'], "
        "max_tokens=me['reply_max_tokens'], **request); add the user message and the reply to me['window'] with "
        "their 'tokens' (local_tokens); me['window'], dropped = trim_by_exchanges(me['window'], me['window_budget']); "
        "if dropped, merge it into me['summary']; append 'User: ...\\nAssistant: ...' to me['texts'] and its "
        "embedding to me['vectors']; return the reply text.",
        cases=(
            Case(
                "returns the model's reply",
                drive=lambda fn: _turns(fn, ["Hi Scout"])[2][0],
                expect="reply 1",
                shown_input="turn(fresh elephant, 'Hi Scout')   # the client answers 'reply 1'",
            ),
            Case(
                "sends build_request(me, text) with me['model']",
                drive=lambda fn: {k: v for k, v in _turns(fn, ["Hi Scout"])[1].chats()[0].items() if k != "max_tokens"},
                expect={
                    "model": "chat-model",
                    "system": SCOUT_PERSONA,
                    "messages": [{"role": "user", "content": "Hi Scout"}],
                },  # fmt: skip
                shown_input="turn(fresh elephant, 'Hi Scout'); what the client received (without max_tokens)",
            ),
            Case(
                "the exchange joins the window, each message with its tokens",
                drive=lambda fn: _turns(fn, ["Hi Scout"])[0]["window"],
                expect=[
                    {"role": "user", "content": "Hi Scout", "tokens": local_tokens("Hi Scout")},
                    {"role": "assistant", "content": "reply 1", "tokens": local_tokens("reply 1")},
                ],  # fmt: skip
                shown_input="me = fresh elephant; turn(me, 'Hi Scout'); me['window']",
            ),
            Case(
                "the exchange is stored as a memory, with its embedding",
                drive=lambda fn: (lambda me: (me["texts"], len(me["vectors"])))(_turns(fn, ["Hi Scout"])[0]),
                expect=(["User: Hi Scout\nAssistant: reply 1"], 1),
                shown_input="me = fresh elephant; turn(me, 'Hi Scout'); (me['texts'], len(me['vectors']))",
            ),
            Case(
                "past the window budget, the oldest exchanges leave the window and are merged into the summary",
                drive=lambda fn: (lambda me: ([m["content"] for m in me["window"]], me["summary"]))(
                    _turns(fn, LONG, window=16)[0]
                ),
                expect=(["What a trip!", "reply 3"], "summary 2"),
                shown_input=f"me = elephant with window_budget 16; three turns {LONG}; (window contents, summary)",
            ),
        ),
    ),
]
