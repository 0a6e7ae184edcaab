"""What a failed turn tells the user: empty input, a failed model call or save. Taught in 01_goldfish_stateless, section 'The same thing, packaged'."""

from __future__ import annotations

from typing import Any

import anthropic

from helpers.db.store import short_reason

__all__ = ["EmptyMessageError", "TurnError", "SessionConflict", "explain", "explain_store"]


class EmptyMessageError(ValueError):
    """The user message is empty or whitespace only; nothing was sent or stored."""


class TurnError(RuntimeError):
    """A turn failed (model or store); the user's text is kept in `.text` and, where there is a store, in the logs."""

    def __init__(self, message: str, text: str, cause: BaseException | None = None):
        super().__init__(message)
        self.text = text
        self.cause = cause


class SessionConflict(RuntimeError):
    """The session kept changing under us (other writers) beyond the retry bound."""


def explain(err: anthropic.APIError) -> str:
    """A clear, one-line message for a failed model call (no stack trace, no secrets)."""
    message = getattr(err, "message", str(err))
    if isinstance(err, anthropic.BadRequestError) and "prompt is too long" in str(message):
        return (
            "your message is too long for the model's context window ("
            + str(message).split("prompt is too long:")[-1].strip(" '}")
            + "); shorten it or split it into parts. Nothing was lost."
        )
    if isinstance(err, anthropic.APITimeoutError):
        return "the model did not answer in time (after retries); your message is saved — try again."
    if isinstance(err, anthropic.APIConnectionError):
        return "could not reach the model (after retries); your message is saved — check the network and try again."
    if getattr(err, "says_why", False):  # an error that explains itself (helpers.llm.LiveCallLimit)
        return f"{message} Your message is saved."
    if isinstance(err, anthropic.RateLimitError):
        return (
            "rate limited by the API (after retries); your message is saved — wait a moment and try again "
            "(a class sharing one key shares its per-minute limit)."
        )
    if isinstance(err, anthropic.APIStatusError) and err.status_code == 529:
        return (
            "the model call failed with HTTP 529 (after retries): the API is overloaded; your message is saved — "
            "wait a moment and try again."
        )
    if isinstance(err, anthropic.APIStatusError):
        return f"the model call failed with HTTP {err.status_code} (after retries); your message is saved — try again."
    return f"the model call failed: {err.__class__.__name__}; your message is saved — try again."


def explain_store(err: BaseException, store: Any = None) -> str:
    """A clear, one-line message for a failed database operation during a turn (naming a full disk, if that is it)."""
    disk = store.disk_problem() if hasattr(store, "disk_problem") else None
    if disk:
        reason = (getattr(err, "details", None) or {}).get("errmsg") or short_reason(err)
        return f"the database could not write ({reason}): {disk}."
    return (
        f"the database failed during this turn ({short_reason(err)}); the turn may not have been saved. "
        "Check the store (`python -m helpers.db.store status` for the local server, or MONGODB_URI) and try again."
    )
