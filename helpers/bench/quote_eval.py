"""Plumbing: does the model contradict its request? Issue 40's phrasing set, asked the way a learner's chat asks it.

Each item is a fact the user stated and a question asked later in other words. Two parts: "tune" is every item of
tests/data/quote_phrasings.json (written for issue 40; its own "tune" and "report" splits are both tuning data now);
"report" is tests/data/quote_phrasings_blind.json, 60 items written blind (without reading the stand-in's code, and
committed before it was run on them), only measured. The harness builds the request the chat widget sends: the
persona, a summary block, a memory block, a window of recent turns, then the question. The fact sits either six
messages back in the window ("turn") or as a retrieved turn memory in the memory block ("memory"), alternating item by
item. It asks through the real SDK client and judges each reply:

- answered: the reply states the expected answer (not inside a quote);
- quoted: the reply says it could not work out the answer and quotes a line of the request holding it;
- contradicted: the reply claims it was not told (or does not know) while the request holds the answer;
- other: a quote of another line, or a reply without the answer.

`python -m helpers.bench.quote_eval [--part tune|report|all] [--failures] [--json]`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from helpers.bench.reader_eval import has_answer
from helpers.config import load_settings
from helpers.conversation import text_of
from helpers.llm import get_client, mode_line
from helpers.offline.quote import QUOTE_LEAD
from helpers.prompts import SCOUT_PERSONA

__all__ = ["DATA", "BLIND", "PARTS", "load_items", "build_request", "judge", "evaluate", "main"]

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "quote_phrasings.json"  # the tuning part
BLIND = DATA.with_name("quote_phrasings_blind.json")  # the report part
PARTS = {"tune": DATA, "report": BLIND}
_NOT_TOLD = re.compile(
    r"(?i)\b(?:haven't|have not|never|didn't|did not) (?:told|tell|mention|said|say)|\bdo(?:n't| not) know\b|"
    r"\bnothing in (?:them|it|this conversation) answers\b"
)  # the stand-in's note for a question about the world says nothing in its request answers: a claim too
_SUMMARY = "The user is planning a weekend away and asked for ideas about food and walks."
_WINDOW = [
    ("I had a long week, glad it's over.", "That sounds tiring; I hope the weekend is restful."),
    ("The weather has been grey for days.", "Grey spells can drag on; a bright day should come soon."),
]


def load_items(part: str = "all") -> list[dict]:
    """The items of one part ("tune": quote_phrasings.json, every item; "report": the blind set) or of both."""
    if part not in (*PARTS, "all"):
        raise ValueError(f"part is tune, report or all, not {part!r}")
    paths = PARTS.values() if part == "all" else [PARTS[part]]
    return [i for path in paths for i in json.loads(path.read_text())["items"]]


def build_request(item: dict, index: int, model: str) -> dict:
    """The chat widget's request for this item: the fact in the window six messages back, or as a memory."""
    memories = ["[earlier in this conversation]", "User: I might try the new noodle bar on Friday."]
    window: list[dict] = []
    if index % 2 == 0:  # "turn": said in the window, six messages before the question
        window += [{"role": "user", "content": item["statement"]}, {"role": "assistant", "content": "Noted."}]
    else:  # "memory": a retrieved turn memory in the system prompt's memory block
        memories.append(f"User: {item['statement']}")
    for user, assistant in _WINDOW:
        window += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    system = (
        f"{SCOUT_PERSONA}\n\n<conversation_summary>\n{_SUMMARY}\n</conversation_summary>\n\n"
        f"<remembered_memories>\n" + "\n".join(memories) + "\n</remembered_memories>"
    )
    messages = [*window, {"role": "user", "content": item["question"]}]
    return {"model": model, "max_tokens": 300, "system": system, "messages": messages}


def judge(item: dict, reply: str) -> str:
    """answered / quoted / contradicted / other (see the module docstring)."""
    if QUOTE_LEAD in reply:
        quoted = reply.split(QUOTE_LEAD, 1)[1]
        return "quoted" if has_answer(quoted, item["expect"]) else "other"
    if _NOT_TOLD.search(reply.replace("\u2019", "'")):
        return "contradicted"
    return "answered" if has_answer(reply, item["expect"]) else "other"


def evaluate(client, items: list[dict], model: str) -> list[dict]:
    """Ask every item through `client`; each outcome: id, placement, reply, verdict."""
    out = []
    for index, item in enumerate(items):
        message = client.messages.create(**build_request(item, index, model))
        reply = text_of({"content": [b.model_dump() for b in message.content]})
        place = "turn" if index % 2 == 0 else "memory"
        out.append({"id": item["id"], "placement": place, "reply": reply, "verdict": judge(item, reply)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.bench.quote_eval", description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("tune", "report", "all"), default="report")
    parser.add_argument("--failures", action="store_true", help="print every reply that is not answered")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    settings = load_settings()
    client = get_client(settings)
    items = load_items(args.part)
    outcomes = evaluate(client, items, settings.chat_model)
    counts = Counter(o["verdict"] for o in outcomes)
    figures = {
        "part": args.part,
        "items": len(items),
        **{k: counts.get(k, 0) for k in ("answered", "quoted", "contradicted", "other")},
        "mode": mode_line(client),
    }
    if args.failures:
        for o in outcomes:
            if o["verdict"] != "answered":
                print(f"{o['id']} [{o['placement']}] {o['verdict']}: {o['reply']!r}")
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        n = max(1, len(items))
        print(figures["mode"])
        for k in ("answered", "quoted", "contradicted", "other"):
            print(f"{k:>13}: {figures[k]:3d} of {len(items)} ({100 * figures[k] / n:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
