"""Plumbing: argparse types and output shared by the benchmark subcommands of `python -m helpers.bench`."""

from __future__ import annotations

import argparse
import json
from typing import Callable

__all__ = ["int_at_least", "positive_int", "non_negative_int", "print_figures"]


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
