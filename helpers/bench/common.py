"""Plumbing: argparse types and output shared by the benchmark subcommands of `python -m helpers.bench`."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import anthropic

from helpers.llm import offline_transport

__all__ = ["int_at_least", "positive_int", "non_negative_int", "print_figures", "time_model_calls"]


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def print_figures(figures: dict, as_json: bool) -> None:
    """One JSON object, or one right-aligned `key: value` line per figure."""
    if as_json:
        print(json.dumps(figures))
        return
    width = max(map(len, figures), default=0)
    for key, value in figures.items():
        print(f"{key:>{width}}: {value}")


def time_model_calls(client: anthropic.Anthropic, record: Callable[[float], None]) -> anthropic.Anthropic:
    """Wrap an offline client's transport so each model request's seconds go to `record`; returns the client.

    The benchmarks subtract this time to report what the memory layer itself costs per turn.
    """
    transport = offline_transport(client)
    serve = transport.handle_request

    def timed(request):
        t0 = time.perf_counter()
        try:
            return serve(request)
        finally:
            record(time.perf_counter() - t0)

    transport.handle_request = timed
    return client
