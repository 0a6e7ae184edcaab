"""helpers.config: settings from env/.env, describe(), nothing at import time."""

import subprocess
import sys

import pytest

from helpers.config import ConfigError, describe, load_settings


def test_defaults_without_env():
    s = load_settings({})
    assert s.mode == "offline"
    assert s.chat_model == "claude-haiku-4-5"
    assert s.mongodb_uri is None
    assert s.window_budget > 0 and s.summary_max_tokens > 0


def test_env_values_are_read():
    s = load_settings(
        {
            "ANTHROPIC_API_KEY": "sk-test",
            "MONGODB_URI": "mongodb://u:p@h:1",
            "WINDOW_BUDGET_TOKENS": "300",
            "OFFLINE_CONTEXT_WINDOW": "4_000",
            "CHAT_MODEL": "claude-sonnet-4-5",
            "MAX_RETRIES": "0",
        }
    )
    assert s.mode == "live" and s.window_budget == 300 and s.offline_context_window == 4000
    assert s.chat_model == "claude-sonnet-4-5" and s.max_retries == 0


def test_bad_number_names_the_setting():
    with pytest.raises(ConfigError, match="WINDOW_BUDGET_TOKENS"):
        load_settings({"WINDOW_BUDGET_TOKENS": "lots"})
    with pytest.raises(ConfigError, match="SUMMARY_MAX_TOKENS"):
        load_settings({"SUMMARY_MAX_TOKENS": "0"})


def test_dotenv_file_is_read_and_environment_wins(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text("CHAT_MODEL=from-dotenv\nSUMMARY_MODEL=summary-from-dotenv\n")
    monkeypatch.setenv("CHAT_MODEL", "from-environment")
    s = load_settings(dotenv_path=env_file)
    assert s.chat_model == "from-environment"
    assert s.summary_model == "summary-from-dotenv"


def test_describe_is_one_line_and_hides_credentials():
    line = describe(
        load_settings({"ANTHROPIC_API_KEY": "sk-secret-123", "MONGODB_URI": "mongodb://bob:hunter2@db:27017"})
    )
    assert "\n" not in line and "live" in line
    assert "hunter2" not in line and "sk-secret-123" not in line
    offline = describe(load_settings({}))
    assert "offline" in offline and "SecantusDB" in offline
    assert "Claude" not in offline.replace("claude-haiku", "")


def test_repr_never_shows_the_key():
    s = load_settings({"ANTHROPIC_API_KEY": "sk-secret-123"})
    assert "sk-secret-123" not in repr(s)


@pytest.mark.slow  # a fresh interpreter (seconds): the full set runs it
def test_import_reads_and_connects_nothing():
    code = (
        "import sys, helpers.config, helpers.llm, helpers.memory, helpers.tools.chat, helpers.tokens;"
        "bad=[m for m in ('pymongo','anthropic_tokenizer') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "anthropic_tokenizer" not in out
