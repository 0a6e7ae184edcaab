"""`python -m helpers.bench kinds` (helpers/bench/kinds.py): the platform-compaction memory keeps and resends the
compaction block and prices the compaction step; calls are counted the same way for every row; the results file the
notebooks load comes from a clean tree, names each row's model, and has a chat whose compaction row compacted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anthropic
import pytest

from helpers.bench.kinds import COMPACT_TRIGGER, KINDS, KINDS_MODEL, OUT, PlatformCompaction, measure_kinds
from helpers.config import load_settings
from helpers.pricing import CostLedger
from helpers.sim.simulate import simulation_client

ROOT = Path(__file__).resolve().parents[2]
FILLER = "We talked about the weather and the trains for a while. " * 90  # ~1,000 tokens a message


def test_past_the_trigger_the_block_is_kept_and_the_compaction_step_is_priced():
    ledger = CostLedger()
    memory = PlatformCompaction(simulation_client(load_settings({})), system="You are Scout.", ledger=ledger)
    memory.messages = [{"role": "user", "content": "I live in Portland. " + FILLER}]
    for k in range(30):
        memory.messages += [{"role": "assistant", "content": f"Noted {k}. " + FILLER},
                            {"role": "user", "content": f"More {k}. " + FILLER}]  # fmt: skip
    memory.messages.pop()
    result = memory.turn("Where do I live?")
    assert memory.compactions == 1 and [e.purpose for e in ledger.entries] == ["compaction", "chat"]
    assert ledger.entries[0].input_tokens >= COMPACT_TRIGGER > result.input_tokens and "Portland" in result.reply
    assert memory.messages[-1]["content"][0]["type"] == "compaction"
    memory.turn("And the weather?")  # the block is sent back: the next request starts from it
    assert memory.compactions == 1 and ledger.entries[-1].input_tokens < COMPACT_TRIGGER


def test_compaction_is_refused_on_a_model_without_it():
    memory = PlatformCompaction(simulation_client(load_settings({})), system="You are Scout.", ledger=CostLedger(),
                                model="claude-haiku-4-5")  # fmt: skip
    with pytest.raises(anthropic.BadRequestError, match="not supported on claude-haiku-4-5"):
        memory.turn("Hello")


@pytest.mark.slow  # runs every row of the memory-kinds benchmark (seconds): the full set runs it
def test_every_row_runs_on_one_model_and_calls_are_requests_sent():
    chat = measure_kinds(6)
    assert {row["model"] for row in chat["rows"].values()} == {KINDS_MODEL}
    compaction = chat["rows"]["compaction"]
    assert compaction["compactions"] == 0 and compaction["calls"] == 6 + 2 * 20  # one request per turn and question
    assert all(row["compactions"] is None for name, row in chat["rows"].items() if name != "compaction")


def test_the_results_file_has_its_provenance_and_every_kind():
    assert OUT.exists(), "06_memory_tool loads it: python -m helpers.bench kinds writes it"
    report = json.loads(OUT.read_text())
    source = report["provenance"]
    assert source["command"].startswith("python -m helpers.bench kinds") and source["mode"].startswith("offline")
    known = subprocess.run(["git", "cat-file", "-e", f"{source['commit']}^{{commit}}"], cwd=ROOT, capture_output=True)
    assert known.returncode == 0, f"commit {source['commit']} is not in this repository"
    assert source["uncommitted_changes"] is False, "regenerate the file from a clean tree (commit the code first)"
    for chat in report["chats"]:
        assert list(chat["rows"]) == [name for name, _, _ in KINDS]
        for row in chat["rows"].values():
            assert 0 <= row["answered_new_session"] <= row["questions"] and row["calls"] > chat["turns"]
            assert row["model"] == source["model"]
    assert max(chat["rows"]["compaction"]["compactions"] for chat in report["chats"]) >= 1, "no chat compacted"
