"""Plumbing: read real conversations in the LoCoMo format (`bench longmem --data PATH`), split them, score a request.

The format (Maharana et al., 2024, `snap-research/LoCoMo`, `data/locomo10.json`; CC BY-NC, never
committed here: read from a path): a list of samples, each with `conversation` (`speaker_a`, `speaker_b`,
`session_N` turn lists `{speaker, dia_id, text[, blip_caption]}`, `session_N_date_time`) and `qa`
(`{question, answer, evidence, category}`). Speaker A plays the user and speaker B the assistant (as the data's
README says; a conversation may open with either); a turn
that shared a photo gets ` [shares a photo of CAPTION]` appended; category 5 (no answer) is left out.

Scoring, as the data's README says: **answer recall** is the share of the gold answer's content words
(lower-cased alphanumeric words, stop words removed) present in the request, the question itself
excluded; **evidence coverage** the share of evidence turns whose text is in the request verbatim
(whitespace-normalised).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from helpers.bench.longmem.data import Conversation, Question
from helpers.bench.scoring import request_text
from helpers.memory.transcript import parse_when

__all__ = [
    "read_locomo",
    "locomo_split",
    "TUNE_IDS",
    "LOCOMO_CATEGORIES",
    "content_words",
    "answer_recall",
    "evidence_coverage",
    "scored_text",
    "file_sha256",
    "write_transcript",
    "load_results",
    "rows_at",
    "strongest_baseline",
    "results_markdown",
]

# the fixed split inside the five shared conversations: tune on these, report on every other sample
TUNE_IDS = ("conv-26", "conv-30", "conv-41")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SCORING_STOPWORDS = frozenset(
    "a an the and or but of in on at to for with by from as is are was were be been being it its this that these "
    "those he she they them his her hers their theirs i me my we our us you your yes no not do does did done has "
    "have had will would can could should so than then there here what which who whom when where why how all any "
    "some very just also about into over up out".split()
)
_DIA = re.compile(r"D\d+:\d+")


def content_words(text: str) -> list[str]:
    """The lower-cased alphanumeric words of `text` without stop words (all its words if that leaves none)."""
    words = re.findall(r"[a-z0-9]+", str(text).lower())
    kept = [w for w in words if w not in SCORING_STOPWORDS]
    return list(dict.fromkeys(kept or words))


def scored_text(request: dict) -> str:
    """What a request gives the model besides the question: system and every message but the last user one."""
    messages = list(request.get("messages", []))
    if messages and messages[-1].get("role") == "user":
        messages = messages[:-1]
    return request_text({"system": request.get("system"), "messages": messages})


def answer_recall(request: dict, answer: str) -> float:
    """Share of `answer`'s content words present (as words) in the request, the question excluded."""
    wanted = content_words(answer)
    if not wanted:
        return 0.0
    have = set(re.findall(r"[a-z0-9]+", scored_text(request).lower()))
    return sum(w in have for w in wanted) / len(wanted)


def _squash(text: str) -> str:
    return " ".join(text.split())


def evidence_coverage(request: dict, texts: list[str]) -> float | None:
    """Share of `texts` (evidence turns) found verbatim in the request (whitespace-normalised); None for none."""
    if not texts:
        return None
    sent = _squash(scored_text(request))
    return sum(_squash(t) in sent for t in texts) / len(texts)


def _turn_text(turn: dict) -> str:
    text = str(turn.get("text") or "")
    caption = turn.get("blip_caption")
    return f"{text} [shares a photo of {caption}]" if caption else text


def _sessions(conv: dict) -> list[int]:
    found = {int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k))}
    return sorted(n for n in found if conv.get(f"session_{n}"))


def _conversation(index: int, sample: dict) -> Conversation:
    conv = sample["conversation"]
    user, friend = conv["speaker_a"], conv["speaker_b"]
    out = Conversation(index, str(sample.get("sample_id") or f"sample-{index}"), user, friend)
    where: dict[str, int] = {}
    for session, n in enumerate(_sessions(conv)):
        when = parse_when(conv[f"session_{n}_date_time"])
        out.dates.append(when)
        for turn in conv[f"session_{n}"]:
            role = "user" if turn["speaker"] == user else "assistant"
            where[turn["dia_id"]] = len(out.turns)
            out.turns.append(
                {
                    "role": role,
                    "content": _turn_text(turn),
                    "ts": when.isoformat(),
                    "speaker": turn["speaker"],
                    "session": session,
                    "dia_id": turn["dia_id"],
                    "date_line": conv[f"session_{n}_date_time"],
                }
            )
    for qn, qa in enumerate(sample.get("qa", [])):
        category = LOCOMO_CATEGORIES.get(qa.get("category"))
        if category is None or qa.get("answer") is None:
            continue  # category 5: no answer in the conversation
        evidence = sorted({where[d] for e in qa.get("evidence") or [] for d in _DIA.findall(str(e)) if d in where})
        out.questions.append(
            Question(
                f"{out.user_id}/q{qn}",
                category,
                qa["question"],
                [[str(qa["answer"])]],
                evidence,
                sorted({out.turns[i]["session"] for i in evidence}),
                answer=str(qa["answer"]),
            )
        )
    return out


def read_locomo(path: str | Path) -> list[Conversation]:
    """Every sample of a LoCoMo-format file as a Conversation (turns dated by session, the first speaker = user)."""
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {path} as LoCoMo JSON: {err}") from None
    if not isinstance(samples, list) or not all(isinstance(s, dict) and "conversation" in s for s in samples):
        raise ValueError(f"{path}: expected a JSON list of samples with a 'conversation' (the LoCoMo format)")
    try:
        return [_conversation(i, s) for i, s in enumerate(samples)]
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not in the LoCoMo format ({type(err).__name__}: {err})") from None


def locomo_split(conversations: list[Conversation], split: str) -> list[Conversation]:
    """`tune`: the samples named in TUNE_IDS; `report`: every other sample; `all`: all of them."""
    if split not in ("tune", "report", "all"):
        raise ValueError(f"split must be tune, report or all, got {split!r}")
    if split == "all":
        return conversations
    return [c for c in conversations if (c.user_id in TUNE_IDS) == (split == "tune")]


def write_transcript(conv: Conversation, path: str | Path) -> Path:
    """The transcript as `python -m helpers.chat --import PATH` reads it: a `(conversation on DATE)` line per
    session, then one {"role", "content", "speaker"} object per turn."""
    lines, session = [], None
    for turn in conv.turns:
        if turn["session"] != session:
            session = turn["session"]
            lines.append(f"(conversation on {turn.get('date_line') or turn['ts']})")
        lines.append(json.dumps({k: turn[k] for k in ("role", "content", "speaker")}, ensure_ascii=False))
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def file_sha256(path: str | Path) -> str:
    """The file's sha256 (results name the exact data they were measured on)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


RAW_TURN_BASELINES = ("bm25", "embeddings", "hybrid")
LABELS = {
    "full": "whole transcript",
    "last_turns": "last turns that fit",
    "bm25": "BM25 over raw turns",
    "embeddings": "MiniLM over raw turns",
    "hybrid": "hybrid (RRF) over raw turns",
    "vector": "vector stage",
    "bounded": "bounded stage",
}


def load_results(path: str | Path) -> dict:
    """The results file `bench longmem --data ... --out FILE` wrote: {"parts": {split: result with provenance}}."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("parts"), dict):
        raise ValueError(f"{path}: not a longmem results file (no 'parts')")
    return doc


def rows_at(doc: dict, part: str, budget: int) -> dict[str, dict]:
    """{method: row} of one part at one budget; the whole transcript (no budget) is included."""
    rows = doc["parts"][part]["rows"]
    return {r["method"]: r for r in rows if r["budget"] in (budget, None)}


def strongest_baseline(doc: dict, part: str, budget: int) -> dict:
    """The raw-turn baseline (BM25, MiniLM or hybrid) with the best answer recall in that part at that budget."""
    rows = rows_at(doc, part, budget)
    return max((rows[m] for m in RAW_TURN_BASELINES if m in rows), key=lambda r: r["recall"])


def results_markdown(doc: dict, part: str, budget: int) -> str:
    """A Markdown table of one part at one budget: answer recall, evidence coverage, tokens/question per method."""
    source = doc["parts"][part]["provenance"]
    lines = [
        f"Real conversations ({part} part: {', '.join(doc['parts'][part]['conversations'])}; "
        f"{doc['parts'][part]['questions']} questions), {budget:,} tokens per question, {source['mode']}, "
        f"commit {str(source['commit'])[:7]}, {source['date'][:10]}:",
        "",
        "| context sent | answer recall | evidence turns in request | tokens/question |",
        "|---|---:|---:|---:|",
    ]
    for method, row in rows_at(doc, part, budget).items():
        evidence = "-" if row.get("evidence") is None else f"{row['evidence']:.3f}"
        lines.append(
            f"| {LABELS.get(method, method)} | {row['recall']:.3f} | {evidence} | {row['tokens_per_question']:,.0f} |"
        )
    return "\n".join(lines)
