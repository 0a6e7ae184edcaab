"""Terminal chat: `python -m helpers.chat --stage stateless|history|bounded|vector`, one message per stdin line. Taught in 01_goldfish_stateless."""

from __future__ import annotations

import argparse
import io
import sys

from .config import load_settings
from .llm import get_client

__all__ = ["main", "build_parser"]

STAGES = ("stateless", "history")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.chat",
        description="Chat with the model from the terminal: one user message per line; 'quit' or EOF ends.",
    )
    parser.add_argument("--stage", choices=STAGES, default="history", help="which memory strategy to use")
    parser.add_argument("--system", default=None, help="system prompt (default: a plain assistant)")
    return parser


def _stdin_lines():
    """Yield stdin lines decoded as UTF-8; undecodable bytes become U+FFFD instead of crashing."""
    stream = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline=None) \
        if hasattr(sys.stdin, "buffer") else sys.stdin
    for line in stream:
        yield line.rstrip("\r\n")


def _make_memory(args, settings, client):
    from .memory import HistoryMemory, StatelessMemory

    cls = {"stateless": StatelessMemory, "history": HistoryMemory}[args.stage]
    return cls(client, settings, system=args.system)


def main(argv: list[str] | None = None) -> int:
    """Run the chat loop; returns the process exit code."""
    from .memory import EmptyMessageError, TurnError

    args = build_parser().parse_args(argv)
    settings = load_settings()
    client = get_client(settings)
    memory = _make_memory(args, settings, client)
    print(f"# {args.stage} chat · {settings.mode} model · type 'quit' to end", file=sys.stderr)
    failures = 0
    for line in _stdin_lines():
        if line.strip().lower() in ("quit", "exit"):
            break
        try:
            result = memory.turn(line)
        except EmptyMessageError as err:
            print(f"! {err}", file=sys.stderr)
            continue
        except TurnError as err:
            failures += 1
            print(f"! {err} (your message was kept; try again)", file=sys.stderr)
            continue
        print(" ".join(result.reply.split()) or "(empty reply)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
