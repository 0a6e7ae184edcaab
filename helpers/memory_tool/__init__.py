"""Memory the model keeps itself. Taught in 06_memory_tool, section 'Watch the model use it'.

The platform's memory tool (`memory_20250818`) on MongoDB, per user, and the chat stage that runs it.

Read in this order: paths.py (every path confined to /memories), views.py (what `view` shows), commands.py (the
six commands and their documented texts), storage.py (one MongoDB document per user under a version guard, and
the audit trail), backend.py (`MongoMemoryTool`, the SDK's `BetaAbstractMemoryTool` on that storage, every read
passed through the one sanitiser), loop.py (one turn's `tool_runner` loop) and stage.py (`MemoryToolMemory`, the
`turn(text)` stage the terminal chat and the simulator run as `memory_tool`).
"""

from helpers.memory_tool.backend import MongoMemoryTool
from helpers.memory_tool.commands import COMMANDS, Limits, MemoryFile, MemoryTree
from helpers.memory_tool.loop import DEFAULT_MAX_ITERATIONS, ToolLoop, run_tool_loop
from helpers.memory_tool.paths import ROOT, check_path
from helpers.memory_tool.stage import MemoryToolMemory
from helpers.memory_tool.storage import AUDIT, FILES, MemoryFiles

__all__ = [
    "ROOT",
    "COMMANDS",
    "FILES",
    "AUDIT",
    "DEFAULT_MAX_ITERATIONS",
    "check_path",
    "Limits",
    "MemoryFile",
    "MemoryTree",
    "MemoryFiles",
    "MongoMemoryTool",
    "ToolLoop",
    "run_tool_loop",
    "MemoryToolMemory",
]
