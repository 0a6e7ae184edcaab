"""Plumbing: the contract's rules on a request's top-level parameters (model, max_tokens, sampling, metadata, ...).

Each function is one rule of the table in helpers.offline.contract, which names its source.
"""

from __future__ import annotations

from helpers.offline import catalog
from helpers.offline.call import Call, refuse

__all__ = [
    "known_model",
    "max_tokens_range",
    "max_tokens_for_model",
    "sampling_params",
    "metadata_user_id",
    "stop_sequences",
    "effort_supported",
    "message_count",
]

MAX_MESSAGES = 100_000
MAX_USER_ID = 256


def known_model(call: Call) -> None:
    """The model is one the docs list and not retired: else the API's 404 not_found_error `model: NAME`."""
    name = call.body.get("model")
    info = catalog.lookup(name)
    if info is None or info.retired:
        raise refuse(f"model: {name}", 404, "not_found_error")
    call.model = info


def max_tokens_range(call: Call) -> None:
    """`max_tokens` is at least 0 (0 pre-warms the prompt cache and generates nothing)."""
    if call.endpoint == "create" and int(float(call.body["max_tokens"])) < 0:
        raise refuse("max_tokens: Input should be greater than or equal to 0")


def max_tokens_for_model(call: Call) -> None:
    """`max_tokens` is at most the model's output limit."""
    if call.endpoint != "create":
        return
    n = int(float(call.body["max_tokens"]))
    if n > call.model.max_output:
        raise refuse(
            f"max_tokens: {n} > {call.model.max_output}, which is the maximum allowed number of output tokens "
            f"for {call.model.id}"
        )


def sampling_params(call: Call) -> None:
    """API version 2023-06-01 only (2026-10-21 removed them: "Extra inputs are not permitted"): temperature and
    top_p in [0, 1], top_k >= 0; newer models take one of temperature and top_p, the newest none but the defaults."""
    if call.version != "2023-06-01":
        return
    body = call.body
    for name, low, high in (("temperature", 0.0, 1.0), ("top_p", 0.0, 1.0), ("top_k", 0, None)):
        if name not in body:
            continue
        value = float(body[name])
        if value < low:
            raise refuse(f"{name}: Input should be greater than or equal to {low:g}")
        if high is not None and value > high:
            raise refuse(f"{name}: Input should be less than or equal to {high:g}")
    if call.model.sampling == "default" and (
        float(body.get("temperature", 1)) != 1 or "top_p" in body or "top_k" in body
    ):
        raise refuse(
            f"{call.model.id} does not support sampling parameters: temperature, top_p and top_k may only be "
            "left at their defaults"
        )
    if "temperature" in body and "top_p" in body:
        raise refuse("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")


def metadata_user_id(call: Call) -> None:
    """`metadata.user_id` is at most 256 characters."""
    user = (call.body.get("metadata") or {}).get("user_id")
    if isinstance(user, str) and len(user) > MAX_USER_ID:
        raise refuse(f"metadata.user_id: String should have at most {MAX_USER_ID} characters")


def stop_sequences(call: Call) -> None:
    """Each stop sequence holds non-whitespace text."""
    for i, seq in enumerate(call.body.get("stop_sequences") or []):
        if not seq.strip():
            raise refuse(f"stop_sequences.{i}: each stop sequence must contain non-whitespace characters")


def effort_supported(call: Call) -> None:
    """`output_config.effort` only on models that take it, with a level the model offers."""
    effort = (call.body.get("output_config") or {}).get("effort")
    if effort is None:
        return
    if not call.model.effort:
        raise refuse(f"output_config.effort: the effort parameter is not supported on {call.model.id}")
    if effort not in call.model.effort:
        raise refuse(
            f"output_config.effort: {effort!r} is not supported on {call.model.id}; use one of "
            f"{', '.join(call.model.effort)}"
        )


def message_count(call: Call) -> None:
    """At least one message, at most 100,000."""
    n = len(call.messages)
    if n == 0:
        raise refuse("messages: at least one message is required")
    if n > MAX_MESSAGES:
        raise refuse(f"messages: too many messages: {n} > {MAX_MESSAGES}")
