"""Every setting in one place, read from the environment and an optional `.env`. Taught in 01_goldfish_stateless, section 'Setup'."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from helpers.db.redact import redact_uri

__all__ = ["Settings", "load_settings", "describe", "project_root", "ConfigError"]


EMBEDDERS = ("", "local", "voyage")
MAX_SETTING = 1_000_000_000  # any token setting above this is a typo (and would not fit the database's ints)
MAX_RETRIES_LIMIT = 20
MEMORY_TOOL_USER_CAP = 8 * 1024 * 1024  # a user's memory files are one MongoDB document (16 MB): room for 1,000 paths
_DB_NAME_BAD = set('/\\. "$\x00')


class ConfigError(ValueError):
    """A setting has a value the helpers cannot use; the message names the setting."""


def project_root() -> Path:
    """The checkout this package was installed from (editable install), else the working directory."""
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").exists() and (here / "helpers").is_dir():
        return here
    return Path.cwd()


def _int(env: dict, name: str, default: int, minimum: int = 1, maximum: int = MAX_SETTING) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.replace("_", "").replace(",", ""))
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number; set {name} to e.g. {default}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise ConfigError(f"{name} must be at most {maximum:,}, got {value:,}")
    return value


def _secret(env: dict, name: str) -> str | None:
    """An API key: printable ASCII without spaces (an HTTP header cannot carry anything else), or None."""
    value = (env.get(name) or "").strip()
    if not value:
        return None
    if not all(33 <= ord(c) <= 126 for c in value):
        raise ConfigError(f"{name} contains spaces or characters an API key never has; copy the key again into {name}")
    return value


def _db_name(value: str) -> str:
    """MongoDB's rules for a database name (no /\\. "$, spaces or NUL; at most 63 bytes)."""
    bad = sorted({c for c in value if c in _DB_NAME_BAD or c.isspace()})
    if bad or len(value.encode("utf-8")) > 63:
        raise ConfigError(
            f"GTE_DB_NAME={value!r} is not a valid MongoDB database name (no {''.join(bad) or 'more than 63 bytes'}); "
            "use letters, digits, '-' and '_'"
        )
    return value


@dataclass(frozen=True)
class Settings:
    """Resolved settings. Build with `load_settings()`; override fields with `settings.with_(...)`."""

    anthropic_api_key: str | None = field(default=None, repr=False)
    chat_model: str = "claude-haiku-4-5"
    summary_model: str = "claude-haiku-4-5"
    extraction_model: str = "claude-haiku-4-5"
    mongodb_uri: str | None = field(default=None, repr=False)
    db_name: str = "goldfish_to_elephant"
    data_dir: Path = field(default_factory=lambda: project_root() / ".data")
    window_budget: int = 400  # tokens of recent messages kept verbatim (04)
    summary_max_tokens: int = 300  # cap on the rolling summary (04)
    memory_budget: int = 400  # tokens of retrieved long-term memory per request (05)
    context_budget: int = 2000  # vector stage: one budget for window + summary + memories (05)
    reply_max_tokens: int = 400  # max_tokens for a chat reply
    offline_context_window: int = 200_000  # the offline model's context window in tokens (03 sets it small)
    max_retries: int = 3  # SDK retries for 429/5xx/timeouts, with backoff and jitter
    timeout_s: float = 60.0
    voyage_api_key: str | None = field(default=None, repr=False)  # hosted embeddings (05); None: local MiniLM
    embedder: str = ""  # EMBEDDER: "" (Voyage if a key is set, else local), "local" or "voyage"
    simulate_live: bool = False  # SIMULATE_LIVE=1: replays, benchmarks and imports go live too (04-06)
    max_live_calls: int = 300  # MAX_LIVE_CALLS: live API requests one process may make (a runaway-loop stop)
    index_cache_mb: int = 256  # INDEX_CACHE_MB: memory search data one process keeps, all users together (05)
    # the memory tool's files (helpers/memory_tool): bytes per file, bytes and files per user, characters per view
    memory_tool_max_file_bytes: int = 65_536
    memory_tool_max_user_bytes: int = 1_048_576
    memory_tool_max_files: int = 256
    memory_tool_view_chars: int = 16_000

    @property
    def mode(self) -> str:
        """'live' when an API key is set, else 'offline'."""
        return "live" if self.anthropic_api_key else "offline"

    def with_(self, **changes) -> Settings:
        """A copy with some fields changed (settings are immutable)."""
        return replace(self, **changes)


def _flag(env: dict, name: str) -> bool:
    """A yes/no setting: 1/true/yes/on or 0/false/no/off (or unset)."""
    raw = (env.get(name) or "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}={raw!r} is not a yes/no value; set {name}=1 (on) or leave it unset (off)")


def _data_dir(value: str | None) -> Path:
    if not value:
        return project_root() / ".data"
    try:
        return Path(value).expanduser().resolve()
    except (OSError, ValueError, RuntimeError) as err:
        raise ConfigError(f"GTE_DATA_DIR={value!r} is not a usable path ({err}); point it at a directory") from None


MAX_DOTENV_BYTES = 1_000_000  # a .env holds a few settings; more is not a .env


def _check_dotenv(path: Path) -> None:
    """A .env is a regular file of settings: a FIFO would block every command, a device or huge file fill memory."""
    try:
        info = path.stat()
    except OSError as err:
        raise ConfigError(f"{path} cannot be read: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path} is not a regular file (a pipe, device or folder); make it a text file or remove it")
    if info.st_size > MAX_DOTENV_BYTES:
        raise ConfigError(
            f"{path} is {info.st_size:,} bytes; a .env holds a few settings (at most {MAX_DOTENV_BYTES:,})"
        )


def load_settings(env: dict | None = None, dotenv_path: str | os.PathLike | None = None) -> Settings:
    """Read settings from `env` (default: os.environ) plus an optional `.env` at the project root.

    Values already in the environment win over `.env`. Nothing is connected or cached.
    """
    merged: dict[str, str] = {}
    if env is None:
        path = Path(dotenv_path) if dotenv_path else project_root() / ".env"
        if path.exists():
            from dotenv import dotenv_values

            _check_dotenv(path)
            try:
                values = dotenv_values(path)
            except UnicodeDecodeError as err:
                raise ConfigError(f"{path} is not UTF-8 text (byte {err.start}); save it as UTF-8") from None
            except OSError as err:
                raise ConfigError(f"{path} cannot be read: {err.strerror or err}") from None
            merged.update({k: v for k, v in values.items() if v is not None})
        merged.update(os.environ)
    else:
        merged.update(env)

    def text(name: str, default: str | None = None) -> str | None:
        value = merged.get(name)
        return value.strip() if value and value.strip() else default

    chat_model = text("CHAT_MODEL", "claude-haiku-4-5")
    data_dir = text("GTE_DATA_DIR")
    voyage_api_key = _secret(merged, "VOYAGE_API_KEY")
    embedder = (text("EMBEDDER", "") or "").lower()
    if embedder not in EMBEDDERS:
        raise ConfigError(f"EMBEDDER={embedder!r} is not known; set EMBEDDER to 'local' or 'voyage', or leave it unset")
    if embedder == "voyage" and not voyage_api_key:
        raise ConfigError("EMBEDDER=voyage needs VOYAGE_API_KEY; set it, or set EMBEDDER=local")
    return Settings(
        anthropic_api_key=_secret(merged, "ANTHROPIC_API_KEY"),
        chat_model=chat_model,
        summary_model=text("SUMMARY_MODEL", "claude-haiku-4-5"),
        extraction_model=text("EXTRACTION_MODEL", "claude-haiku-4-5"),
        mongodb_uri=text("MONGODB_URI"),
        db_name=_db_name(text("GTE_DB_NAME", "goldfish_to_elephant")),
        data_dir=_data_dir(data_dir),
        window_budget=_int(merged, "WINDOW_BUDGET_TOKENS", 400),
        summary_max_tokens=_int(merged, "SUMMARY_MAX_TOKENS", 300),
        memory_budget=_int(merged, "MEMORY_BUDGET_TOKENS", 400),
        context_budget=_int(merged, "CONTEXT_BUDGET_TOKENS", 2000),
        reply_max_tokens=_int(merged, "REPLY_MAX_TOKENS", 400),
        offline_context_window=_int(merged, "OFFLINE_CONTEXT_WINDOW", 200_000),
        max_retries=_int(merged, "MAX_RETRIES", 3, minimum=0, maximum=MAX_RETRIES_LIMIT),
        voyage_api_key=voyage_api_key,
        embedder=embedder,
        simulate_live=_flag(merged, "SIMULATE_LIVE"),
        max_live_calls=_int(merged, "MAX_LIVE_CALLS", 300),
        index_cache_mb=_int(merged, "INDEX_CACHE_MB", 256),
        memory_tool_max_file_bytes=_int(merged, "MEMORY_TOOL_MAX_FILE_BYTES", 65_536, maximum=MEMORY_TOOL_USER_CAP),
        memory_tool_max_user_bytes=_int(merged, "MEMORY_TOOL_MAX_USER_BYTES", 1_048_576, maximum=MEMORY_TOOL_USER_CAP),
        memory_tool_max_files=_int(merged, "MEMORY_TOOL_MAX_FILES", 256, maximum=1_000),
        memory_tool_view_chars=_int(merged, "MEMORY_TOOL_VIEW_CHARS", 16_000, minimum=100),
    )


# Said once, up front, wherever the offline model answers (notebook banners, the chat widget's header).
OFFLINE_NOTE = (
    "it only knows what this conversation and its memories hold, and says so in one sentence when asked about the world"
)


def describe(settings: Settings | None = None) -> str:
    """One line saying which model mode and which store are configured; every notebook prints it."""
    s = settings or load_settings()
    if s.mode == "live":
        replays = "replays live too (SIMULATE_LIVE=1)" if s.simulate_live else "replays offline (SIMULATE_LIVE=1: live)"
        model = f"model: live Anthropic API ({s.chat_model}; {replays}; at most {s.max_live_calls} calls)"
    else:
        model = f"model: offline stand-in for {s.chat_model} (no network, no key; {OFFLINE_NOTE})"
    if s.mongodb_uri:
        store = f"store: MongoDB at {redact_uri(s.mongodb_uri)}"
    else:
        store = f"store: local SecantusDB server, data in {s.data_dir}"
    return f"{model} · {store}"
