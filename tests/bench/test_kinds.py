"""`python -m helpers.bench kinds` (helpers/bench/kinds.py): the platform-compaction memory keeps and resends the
compaction block and prices the compaction step; the results file the notebook loads is complete and consistent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.bench.kinds import COMPACT_TRIGGER, KINDS, OUT, PlatformCompaction
from helpers.config import load_settings
from helpers.pricing import CostLedger
from helpers.sim.simulate import simulation_client

ROOT = Path(__file__).resolve().parents[2]
FILLER = "We talked about the weather and the trains for a while. " * 90  # ~1,000 tokens a message


def test_past_the_trigger_the_block_is_kept_and_the_compaction_step_is_priced():
    ledger = CostLedger()
    memory = PlatformCompaction(simulation_client(load_settings({})), system="You are Scout.", ledger=ledger)
    memory.messages = [{"role": "user", "content": "I live in Lisbon. " + FILLER}]
    for k in range(30):
        memory.messages += [{"role": "assistant", "content": f"Noted {k}. " + FILLER},
                            {"role": "user", "content": f"More {k}. " + FILLER}]  # fmt: skip
    memory.messages.pop()
    result = memory.turn("Where do I live?")
    assert memory.compactions == 1 and [e.purpose for e in ledger.entries] == ["compaction", "chat"]
    assert ledger.entries[0].input_tokens >= COMPACT_TRIGGER > result.input_tokens and "Lisbon" in result.reply
    assert memory.messages[-1]["content"][0]["type"] == "compaction"
    memory.turn("And the weather?")  # the block is sent back: the next request starts from it
    assert memory.compactions == 1 and ledger.entries[-1].input_tokens < COMPACT_TRIGGER


def test_the_results_file_has_its_provenance_and_every_kind():
    assert OUT.exists(), "06_memory_tool loads it: python -m helpers.bench kinds writes it"
    report = json.loads(OUT.read_text())
    source = report["provenance"]
    assert source["command"].startswith("python -m helpers.bench kinds") and source["mode"].startswith("offline")
    known = subprocess.run(["git", "cat-file", "-e", f"{source['commit']}^{{commit}}"], cwd=ROOT, capture_output=True)
    assert known.returncode == 0, f"commit {source['commit']} is not in this repository"
    for chat in report["chats"]:
        assert list(chat["rows"]) == [name for name, _, _ in KINDS]
        for row in chat["rows"].values():
            assert 0 <= row["answered_new_session"] <= row["questions"] and row["calls"] > chat["turns"]
