"""Plumbing: measure how well the model reads its request on a hand-written phrasing corpus.

Each corpus pair is a statement the user made and a question asked in other words. The harness puts the
statement (with an unrelated statement from another relation and a filler exchange) in an ordinary chat
request, asks the question through the real SDK client, and judges the reply:

- correct: no "I don't know" and every expected answer word is in the reply;
- false "I don't know": the statement was in the request, yet the reply declined;
- invented: for an *absent* item (only a distractor statement is in the request), any reply that does not decline.

`python -m helpers.bench.reader_eval [--part tuning|held_out|all] [--failures] [--json]` prints the table by relation,
per file and per part. Tuning: tests/data/phrasing_corpus.json, phrasing_corpus_b.json, phrasing_corpus_c.json and
phrasing_holdout_2/3/4.json (the reader was developed against their failures; C and holdouts 2-4 were each first the
blind held-out file, measured once, then used for tuning). Held out: tests/data/phrasing_holdout_5.json, written
blind by a helper who never saw the reader, never used to tune it;
`--part held_out` fails with a clear message while that file is missing, `--part all` reads the files that exist.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from helpers.config import load_settings
from helpers.conversation import text_of
from helpers.llm import get_client, mode_line
from helpers.prompts import PLAIN_PERSONA

__all__ = [
    "CORPUS_FILES",
    "CorpusMissing",
    "Outcome",
    "load_corpus",
    "declines",
    "has_answer",
    "build_request",
    "evaluate",
    "table",
    "main",
]

DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data"
CORPUS_FILES: dict[str, list[Path]] = {
    "tuning": [
        DATA_DIR / "phrasing_corpus.json",
        DATA_DIR / "phrasing_corpus_b.json",
        DATA_DIR / "phrasing_corpus_c.json",
        DATA_DIR / "phrasing_holdout_2.json",
        DATA_DIR / "phrasing_holdout_3.json",
        DATA_DIR / "phrasing_holdout_4.json",
    ],
    "held_out": [DATA_DIR / "phrasing_holdout_5.json"],
}


class CorpusMissing(FileNotFoundError):
    """A corpus file of the part asked for is not there (the held-out file is written separately, blind)."""


# Ways a reply says it does not have the answer (a real model's wording varies; these cover the usual ones).
_DECLINE = re.compile(
    r"\b(?:do(?:n't| not) know|not sure|no idea|(?:have|has)n't (?:told|mentioned|said|shared)|"
    r"did(?:n't| not) (?:tell|mention|say|share)|(?:haven't|have not|never) (?:told|mentioned|said)|"
    r"(?:wasn't|was not|isn't|is not|not been) (?:mentioned|told|stated|shared|said)|"
    r"no (?:record|information|mention|details?)|do(?:n't| not) have (?:that|any|this|the|information|details?)|"
    r"can(?:'t|not) (?:tell|say|find|see|know)|not (?:something|anything) you(?:'ve| have)|unknown to me|only know what)\b",
    re.I,
)

# The filler exchange between the statements and the question: it states nothing about the user.
_FILLER = ("Any ideas for a rainy afternoon?", "A museum, a cinema or a long lunch somewhere cosy would all work.")
_ACK = "Thanks, noted."


@dataclass
class Outcome:
    """One judged question: which item, what was asked, the reply and the verdict."""

    id: str
    relation: str
    part: str
    present: bool
    source: (
        str  # the corpus file's stem (phrasing_corpus, phrasing_corpus_b, phrasing_corpus_c, phrasing_holdout_2 ... _5)
    )
    question: str
    reply: str
    verdict: str  # correct | wrong | false_idk | declined (absent, right) | invented (absent, wrong)


def load_corpus(part: str = "all") -> list[dict]:
    """Corpus items of `part` (tuning, held_out or all), each with `present`, `part` and `source` set.

    A named part whose file is missing raises CorpusMissing; `all` reads every file that exists."""
    if part != "all" and part not in CORPUS_FILES:
        raise ValueError(f"part must be one of {sorted(CORPUS_FILES)} or 'all', got {part!r}")
    items = []
    for name in list(CORPUS_FILES) if part == "all" else [part]:
        for path in CORPUS_FILES[name]:
            if not path.exists():
                if part == "all":
                    continue
                raise CorpusMissing(
                    f"the {name} corpus file {path.name} is not in {path.parent} "
                    f"(it is written separately; `--part all` measures the files that exist)"
                )
            data = json.loads(path.read_text(encoding="utf-8"))
            items += [{**pair, "present": True, "part": name, "source": path.stem} for pair in data["pairs"]]
            items += [{**item, "present": False, "part": name, "source": path.stem} for item in data["absent"]]
    return items


def declines(reply: str) -> bool:
    """True when the reply says the model does not know / was not told."""
    return bool(_DECLINE.search(reply.replace("\u2019", "'")))


def has_answer(reply: str, expect: list[list[str]]) -> bool:
    """Every group of expected words appears in the reply as whole words (any spelling of a group, any case):
    "teal" is not found in "steal", "4411" not in "44112", "7:45" not in "17:45"."""
    low = reply.lower()
    return all(any(re.search(_whole(option), low) for option in group) for group in expect)


def _whole(option: str) -> str:
    """`option` as a whole word: an ending may follow a word ("dinosaur" finds "dinosaurs"), an ordinal or
    am/pm a number ("25" finds "25th"), but no other letter or digit on either side."""
    tail = r"(?:st|nd|rd|th|am|pm)?" if option[-1:].isdigit() else r"(?:s|es|ed|d|ing|y|ies|er|ers|'s|\u2019s)?"
    return rf"(?<!\w){re.escape(option.lower())}{tail}(?!\w)"


def _other_statement(item: dict, items: list[dict]) -> str:
    """A statement from another relation of the same part: something else the user said, to read past."""
    pool = [i for i in items if i["present"] and i["relation"] != item["relation"] and i["part"] == item["part"]]
    return pool[sum(map(ord, item["id"])) % len(pool)]["statement"]


def build_request(item: dict, items: list[dict], model: str) -> dict:
    """A chat request holding the item's statement (or distractor), another statement, a filler exchange,
    then the question."""
    said = item["statement"] if item["present"] else item["distractor"]
    other = _other_statement(item, items)
    first, second = (said, other) if len(item["id"]) % 2 else (other, said)
    messages = [
        {"role": "user", "content": first},
        {"role": "assistant", "content": _ACK},
        {"role": "user", "content": second},
        {"role": "assistant", "content": _ACK},
        {"role": "user", "content": _FILLER[0]},
        {"role": "assistant", "content": _FILLER[1]},
        {"role": "user", "content": item["question"]},
    ]
    return {"model": model, "max_tokens": 200, "system": PLAIN_PERSONA, "messages": messages}


def _judge(item: dict, reply: str) -> str:
    if not item["present"]:
        return "declined" if declines(reply) else "invented"
    if declines(reply):
        return "false_idk"
    return "correct" if has_answer(reply, item["expect"]) else "wrong"


def evaluate(client, items: list[dict], model: str, pool: list[dict] | None = None) -> list[Outcome]:
    """Ask every item's question through `client` and judge each reply. `pool` (default `items`) supplies the other
    statement each request holds: a sample evaluated with its whole part as the pool gets the very same requests."""
    outcomes = []
    for item in items:
        message = client.messages.create(**build_request(item, pool or items, model))
        reply = " ".join(text_of({"content": [b.model_dump() for b in message.content]}).split())
        outcomes.append(
            Outcome(
                item["id"],
                item["relation"],
                item["part"],
                item["present"],
                item.get("source", item["part"]),
                item["question"],
                reply,
                _judge(item, reply),
            )
        )
    return outcomes


def table(outcomes: list[Outcome]) -> dict[str, dict]:
    """Figures by relation plus an `all` row: n, correct, false_idk, wrong (rates of present items),
    absent n and invented (a count)."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.relation].append(o)
        groups["all"].append(o)
    rows = {}
    for name in [*sorted(k for k in groups if k != "all"), "all"]:
        present = [o for o in groups[name] if o.present]
        absent = [o for o in groups[name] if not o.present]
        n = len(present) or 1
        rows[name] = {
            "n": len(present),
            "correct": sum(o.verdict == "correct" for o in present) / n,
            "false_idk": sum(o.verdict == "false_idk" for o in present) / n,
            "wrong": sum(o.verdict == "wrong" for o in present) / n,
            "absent": len(absent),
            "invented": sum(o.verdict == "invented" for o in absent),
        }
    return rows


def _print_table(rows: dict[str, dict], title: str) -> None:
    print(title)
    print(f"{'relation':<12} {'n':>4} {'correct':>8} {'false IDK':>10} {'wrong':>7} {'absent':>7} {'invented':>9}")
    for name, r in rows.items():
        print(
            f"{name:<12} {r['n']:>4} {r['correct']:>8.1%} {r['false_idk']:>10.1%} {r['wrong']:>7.1%} "
            f"{r['absent']:>7} {r['invented']:>9}"
        )


def main(argv: list[str] | None = None) -> int:
    """CLI: print the reader table by relation for a corpus part (targets: correct ≥ 90%, false IDK ≤ 5%, invented 0)."""
    parser = argparse.ArgumentParser(prog="python -m helpers.bench.reader_eval", description=main.__doc__)
    parser.add_argument("--part", default="all", choices=[*CORPUS_FILES, "all"])
    parser.add_argument("--failures", action="store_true", help="also print every reply that was not right")
    parser.add_argument("--json", action="store_true", help="print the tables (and failures) as JSON")
    parser.add_argument(
        "--every",
        type=int,
        default=1,
        metavar="N",
        help="ask only every Nth item (a quick look; each request is the one the whole part gets)",
    )
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error(f"--every must be at least 1, got {args.every}")
    settings = load_settings()
    client = get_client(settings)
    try:
        items = load_corpus(args.part)
    except CorpusMissing as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    outcomes = evaluate(client, items[:: args.every], settings.chat_model, pool=items)
    tables: dict[str, dict] = {}
    for part in sorted({o.part for o in outcomes}):
        sources = sorted({o.source for o in outcomes if o.part == part})
        if len(sources) > 1:
            tables.update({f"{part} / {s}": table([o for o in outcomes if o.source == s]) for s in sources})
        tables[part] = table([o for o in outcomes if o.part == part])
    if len({o.part for o in outcomes}) > 1:
        tables["all"] = table(outcomes)
    failures = [asdict(o) for o in outcomes if o.verdict not in ("correct", "declined")]
    if args.json:
        print(
            json.dumps(
                {"mode": mode_line(client), "tables": tables, "failures": failures if args.failures else len(failures)},
                indent=1,
            )
        )
        return 0
    print(mode_line(client))
    for name, rows in tables.items():
        _print_table(rows, f"\npart: {name}")
    if args.failures:
        print()
        for f in failures:
            print(f"[{f['verdict']}] {f['id']}: {f['question']} -> {f['reply']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
