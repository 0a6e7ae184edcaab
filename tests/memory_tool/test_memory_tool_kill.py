"""Issue 41: every saved memory-tool write has its audit line. A real process writing on the local server is
SIGKILLed at random moments, KILLS times; after each kill the trail holds exactly one "ok" entry for every version
the user's files reached (none missing, none twice)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from helpers.memory_tool import FILES, MongoMemoryTool

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("KILLS", "8"))

_WRITER = """
import sys
from helpers.config import load_settings
from helpers.db.store import open_store
from helpers.memory_tool import MongoMemoryTool

user, start = sys.argv[1], int(sys.argv[2])
store = open_store(load_settings(), fallback=False)
tool = MongoMemoryTool(store, user)
tool.context = {"session_id": "kill", "turn": "t"}
if start == 0:
    tool.call({"command": "create", "path": "/memories/log.md", "file_text": "start\\n"})
print("ready", flush=True)
for i in range(start, start + 100000):
    tool.call({"command": "insert", "path": "/memories/log.md", "insert_line": 1, "insert_text": f"w{i}"})
"""


@pytest.mark.slow
def test_a_memory_tool_writer_killed_at_random_moments_leaves_every_saved_write_audited(local_store):
    user, rnd = f"kill-{uuid.uuid4().hex[:8]}", random.Random(41)
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "MONGODB_URI": "", "GTE_DB_NAME": local_store.db.name}
    tool = MongoMemoryTool(local_store, user)
    for k in range(KILLS):
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, user, str(k * 100000 + 1 if k else 0)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        assert writer.stdout.readline().strip() == b"ready", writer.stderr.read()[-2000:]
        time.sleep(rnd.uniform(0.05, 0.6))
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        doc = local_store.db[FILES].find_one({"user_id": user})
        left = len(doc.get("pending_audit") or [])  # entries the kill left with the files: flushed by trail()
        trail = tool.trail(limit=10**6)
        versions = sorted(e["version"] for e in trail if e["outcome"] == "ok")
        assert versions == list(range(1, doc["version"] + 1)), (k, left, versions[-5:], doc["version"])
        lines = tool.read("/memories/log.md").splitlines()
        assert len(lines) == doc["version"]  # start + one line per saved insert: each saved write is one version
