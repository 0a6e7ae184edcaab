"""helpers.memory as a package: BoundedMemory composed with a long-term retriever, typed turn results, clean imports."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import BoundedMemory, LongTermMemory, TurnResult, VectorMemory
from helpers.memory.importer import import_turns
from helpers.prompts import MEMORY_OPEN

PACKAGE = Path(__file__).resolve().parents[2] / "helpers" / "memory"
HOOKS = {
    "_count",
    "_count_text",
    "_block",
    "_pack",
    "_search",
    "_place",
    "commit_exchange",
    "_fold",
    "_merge_pending",
    "_request_for",
    "base_tokens",
    "_memory_tokens",
    "_state",
    "_gauge",
    "turn",
    "_turn",
    "system_prompt",
    "rebuild",
    "build_request",
    "state",
}


@pytest.fixture
def settings():
    return load_settings({})


def test_vector_memory_overrides_no_bounded_hook():
    # the old VectorMemory overrode _count/_block/_pack/_place/_commit/_base_tokens/_state/turn/... of BoundedMemory
    assert not HOOKS & set(vars(VectorMemory)), sorted(HOOKS & set(vars(VectorMemory)))


def test_bounded_memory_with_a_retriever_is_vector_memory(settings):
    client, store = get_client(settings), mongomock_store()
    vector = VectorMemory(client, settings, store=store, user_id="maya", session_id="s1", budget=200)
    vector.long_term.facts.add_facts("maya", ["The user's flight number is UA1432."])
    composed = BoundedMemory(
        client, settings, store=store, user_id="maya", session_id="s1", budget=200, retriever=LongTermMemory()
    )
    question = "What is my flight number?"
    request = composed.build_request(question)
    assert request == vector.build_request(question)
    assert "UA1432" in request["system"][request["system"].index(MEMORY_OPEN) :]
    result = composed.turn(question)
    assert result.retrieved and "UA1432" in result.reply and composed.state()["retrieved"] == result.retrieved
    # without a retriever the same session sends no memory block
    plain = BoundedMemory(client, settings, store=store, user_id="maya", session_id="s1", budget=200)
    assert MEMORY_OPEN not in plain.build_request(question)["system"]


def test_turn_result_fields_are_typed(settings):
    client = get_client(settings)
    memory = BoundedMemory(client, settings, store=mongomock_store(), user_id="u", session_id="s", budget=300)
    result = memory.turn("Hello, I am planning a trip to Los Angeles.")
    assert not hasattr(result, "extra")
    assert (result.session_id, result.user_seq, result.assistant_seq) == ("s", 1, 2)
    assert result.user_tokens > 0 and result.window_tokens == memory.state()["window_tokens"] and result.version == 1
    assert result.retrieved == [] and result.split is None and result.dropped == 0
    assert TurnResult("hi", 1, 1, None, {}, "stateless").user_seq is None  # the stateless stages leave them unset


def _late_imports(path: Path) -> list[int]:
    """Line numbers of imports that are not at the top of the module: after a def/class, or inside one
    (`if TYPE_CHECKING:` at the top is fine)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    late, seen_body = [], False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            seen_body = True
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and seen_body:
            late.append(node.lineno)
    type_only = {
        id(n)
        for top in tree.body
        if isinstance(top, ast.If) and ast.unparse(top.test).endswith("TYPE_CHECKING")
        for n in ast.walk(top)
    }  # imports for type hints only never run
    nested = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom)) and n not in tree.body and id(n) not in type_only
    ]
    return sorted(late + nested)


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_memory_modules_are_small_with_top_imports_and_all(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    assert "noqa: E402" not in text and "__all__ +=" not in text and "_register" not in text
    assert _late_imports(path) == []
    assert "__all__ = [" in text


@pytest.mark.slow  # a fresh interpreter (seconds): the full set runs it
def test_memory_imports_nothing_from_the_cost_tools():
    code = "import sys, helpers.memory; print(sorted(m for m in sys.modules if m.startswith('helpers.cost')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_composed_memory_imports_a_dated_transcript(settings):
    client, store = get_client(settings), mongomock_store()
    memory = BoundedMemory(
        client, settings, store=store, user_id="maya", session_id="s1", budget=200, retriever=LongTermMemory()
    )
    result = import_turns(
        memory,
        [
            {"role": "user", "content": "My flight number is UA1432.", "ts": "2023-05-08T10:00:00+00:00"},
            {"role": "assistant", "content": "Noted: UA1432.", "ts": "2023-05-08T10:00:05+00:00"},
        ],
    )
    assert result["imported"] == 2 and result["conversations"] == 1
    assert any("UA1432" in m["text"] for m in result["memories"])
