"""Plumbing: the `python -m helpers.bench COMMAND` parser; one subcommand per benchmark module."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from helpers.bench.coarse_real import add_coarse
from helpers.bench.compare import add_compare
from helpers.bench.cost import add_cost
from helpers.bench.kinds import add_kinds
from helpers.bench.load import add_load
from helpers.bench.longmem.command import add_longmem
from helpers.bench.longmem.floor import add_floor
from helpers.bench.overhead import add_overhead
from helpers.bench.published import add_all
from helpers.bench.recall import add_recall
from helpers.bench.retrieval import add_retrieval

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_cost,
    add_overhead,
    add_recall,
    add_compare,
    add_retrieval,
    add_load,
    add_longmem,
    add_floor,
    add_kinds,
    add_coarse,
    add_all,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand in SUBCOMMANDS."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench", description="Measure the memory strategies of Goldfish to Elephant."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` and run the chosen subcommand; returns the exit code."""
    args = build_parser().parse_args(argv)
    return args.func(args)
