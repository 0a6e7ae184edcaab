"""Terminal chat: `python -m helpers.chat --stage stateless|history|bounded|vector|memory_tool`, one message per stdin line. Tools for 01_goldfish_stateless, section 'From the terminal'."""

from __future__ import annotations

import argparse
import io
import json
import sys

from helpers.config import ConfigError, load_settings
from helpers.db.store import StoreError
from helpers.llm import get_client
from helpers.memory import EmptyMessageError, SessionConflict, TurnError
from helpers.memory.history import MAX_USER_CHARS
from helpers.memory.importer import import_turns
from helpers.tools.cli_checks import OneLineParser, UsageError, check_args, positive_int, terminal_safe
from helpers.tools.erase import forget_command
from helpers.tools.settle import message_kept, settle_failed_turn

__all__ = ["main", "build_parser", "make_memory", "read_jsonl"]

STAGES = ("stateless", "history", "bounded", "vector", "memory_tool")
PERSISTENT = ("bounded", "vector", "memory_tool")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m helpers.chat",
        description="Chat with the model from the terminal: one user message per line; 'quit' or EOF ends.",
    )
    parser.add_argument("--stage", choices=STAGES, default="history", help="which memory strategy to use")
    parser.add_argument(
        "--system", default=None, help="system prompt (default: plain assistant; Scout from 'bounded' on)"
    )
    parser.add_argument(
        "--stats",
        action="store_true",
        help="at exit, print the memory's counters (turns, version-guard conflicts, ...) as JSON on stderr",
    )
    group = parser.add_argument_group("persistent stages (bounded, vector, memory_tool)")
    group.add_argument(
        "--session-file",
        default=".session_id",
        help="file holding the session id (created if missing; delete it to start over)",
    )
    group.add_argument("--user", default="default", help="user id: sessions and memories are kept per user")
    group.add_argument(
        "--budget",
        type=positive_int,
        default=None,
        help="bounded, memory_tool: window budget in tokens (default WINDOW_BUDGET_TOKENS); vector: one context "
        "budget for window + summary + memories (default CONTEXT_BUDGET_TOKENS)",
    )
    group.add_argument(
        "--summary-max-tokens", type=positive_int, default=None, help="cap on the rolling summary in tokens"
    )
    group.add_argument(
        "--memory-budget",
        type=positive_int,
        default=None,
        help="tokens of retrieved long-term memory per request (vector; default MEMORY_BUDGET_TOKENS)",
    )
    actions = group.add_mutually_exclusive_group()
    actions.add_argument("--show-state", action="store_true", help="print the session state as JSON and exit")
    actions.add_argument(
        "--show-request",
        metavar="TEXT",
        help="print the exact JSON request the next turn would send for TEXT (nothing is sent or saved)",
    )
    actions.add_argument("--rebuild", action="store_true", help="recompute window and summary from the logs")
    actions.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE.jsonl",
        help="append a transcript ({role, content[, ts, speaker]} per line; '(conversation on DATE)' lines "
        "date what follows) without calling the chat model",
    )
    parser.add_argument(
        "--forget-user",
        metavar="USER",
        help="erase USER everywhere (sessions, logs, memories, facts and memory-tool files) in the store, print what "
        "was deleted as JSON and exit; other users are untouched. On the local server its files are then rewritten "
        "so no copy is left; on MONGODB_URI it says what only the operator can erase (oplog, backups)",
    )
    return parser


TOO_LONG = object()  # what _stdin_lines yields for a line longer than any message may be


def _stdin_lines():
    """Yield stdin lines decoded as UTF-8 (undecodable bytes become U+FFFD instead of crashing), ended by `\n` or
    `\r\n` only (a bare `\r` inside a line does not split it into two turns); a line longer than
    a message may be is read past in chunks, never held whole (one 300 MB line once took ~1 GB), and yields TOO_LONG."""
    stream = (
        io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline="\n")
        if hasattr(sys.stdin, "buffer")
        else sys.stdin
    )
    limit = MAX_USER_CHARS + 2  # a longer message is refused anyway (helpers.memory.history.check_user_text)
    while line := stream.readline(limit):
        if len(line) == limit and not line.endswith("\n"):
            while (rest := stream.readline(1 << 16)) and not rest.endswith("\n"):
                pass
            yield TOO_LONG
            continue
        yield line.rstrip("\r\n")


def make_memory(args, settings, client):
    from helpers.memory import BoundedMemory, HistoryMemory, StatelessMemory, VectorMemory

    if args.stage == "memory_tool":  # the model keeps its own memory files (helpers/memory_tool, issue 33)
        from helpers.db.store import open_store
        from helpers.memory_tool import MemoryToolMemory

        return MemoryToolMemory(
            client,
            settings,
            store=open_store(settings),
            user_id=args.user,
            session_file=args.session_file,
            budget=args.budget,
            system=args.system,
        )
    if args.stage in PERSISTENT:
        from helpers.db.store import open_store

        store = open_store(settings)
        cls = VectorMemory if args.stage == "vector" else BoundedMemory
        if args.stage == "vector":  # one context budget, allocated per question (helpers.memory.budget)
            from helpers.retrieval import (
                embeddings,  # the embedder follows the same settings (VOYAGE_API_KEY / EMBEDDER, env or .env)
            )

            extra = {
                "memory_budget": args.memory_budget,
                "context_budget": args.budget or settings.context_budget,
                "embedder": embeddings.get_embedder(settings),
            }
            budget = None
        else:
            extra, budget = {}, args.budget
        return cls(
            client,
            settings,
            store=store,
            user_id=args.user,
            session_file=args.session_file,
            budget=budget,
            summary_max_tokens=args.summary_max_tokens,
            system=args.system,
            **extra,
        )
    cls = {"stateless": StatelessMemory, "history": HistoryMemory}[args.stage]
    return cls(client, settings, system=args.system)


def read_jsonl(path: str) -> list:
    """The transcript's turns (helpers.memory.transcript: optional `ts`, `speaker` and `(conversation on DATE)` lines)."""
    from helpers.memory.transcript import read_transcript_file

    try:
        return read_transcript_file(path)
    except ValueError as err:
        raise SystemExit(str(err)) from None


def _one_shot(args, memory) -> int | None:
    """--show-state / --show-request / --rebuild / --import: print JSON and return an exit code."""
    if args.show_state:
        result = memory.state()
    elif args.show_request is not None:
        result = memory.build_request(args.show_request)
    elif args.rebuild:
        result = memory.rebuild()
    elif args.import_file:
        turns = args.turns if hasattr(args, "turns") else read_jsonl(args.import_file)
        result = import_turns(memory, turns)  # both stages keep each turn's ts, speaker and conversation
    else:
        return None
    print(terminal_safe(json.dumps(result, indent=2, ensure_ascii=False, default=str)))
    return 0


def _one_line(err: BaseException) -> str:
    """An error as one short line: its message, with the type named when it is not one of ours."""
    text = " ".join(str(err).split()) or "no details"
    if isinstance(err, (TurnError, SessionConflict, StoreError, UsageError, ConfigError)):
        return terminal_safe(text)  # our own messages: already one actionable sentence or two
    return terminal_safe(f"{type(err).__name__}: {text}"[:300])


def _settle(memory, err: BaseException) -> str:
    """Settle the failed turn's log entries; the advice to print after the error (it says kept only if it is)."""
    store = getattr(memory, "store", None)
    if store is None:
        return "(not added to the conversation; send it again)"
    turn = getattr(memory, "turn_id", None)
    try:
        settle_failed_turn(store, memory.user_id, memory.session_id, turn, _one_line(err))
        kept = message_kept(store, memory.user_id, memory.session_id, turn)
    except Exception:  # noqa: BLE001 - the database is down too: its entries (if any) stay 'pending'
        return "(the database did not answer, so your message may not have been saved: send it again once it works)"
    return "(your message was kept; try again)" if kept else "(your message was NOT saved; send it again)"


def main(argv: list[str] | None = None) -> int:
    """Run the chat loop; returns the process exit code (2: a bad argument or setting, nothing written)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error already printed on one line (2)
        return exit_.code if isinstance(exit_.code, int) else 2
    one_shot = args.show_state or args.show_request is not None or args.rebuild or args.import_file
    if args.forget_user is not None and (one_shot):
        print("error: --forget-user runs alone (no --show-state/--show-request/--rebuild/--import)", file=sys.stderr)
        return 2
    if args.import_file and args.stage == "memory_tool":
        print(
            "error: --import is not available at --stage memory_tool: there the model writes its own memory while "
            "it chats (an import would bypass it); import with --stage bounded or vector",
            file=sys.stderr,
        )
        return 2
    if one_shot and args.stage not in PERSISTENT:
        print(
            "error: --show-state/--show-request/--rebuild/--import need a persistent stage (--stage bounded)",
            file=sys.stderr,
        )
        return 2
    try:  # every argument and setting is checked before anything is created or written
        settings = load_settings()
        read = check_args(args, settings, args.stage in PERSISTENT, read_jsonl)
        if "turns" in read:
            args.turns = read["turns"]
        if args.forget_user is not None:
            return forget_command(settings, args.forget_user, _one_line)
        client = get_client(settings)
    except (ConfigError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        memory = make_memory(args, settings, client)
        reads_only = args.show_state or args.show_request is not None
        if hasattr(memory, "recover") and not reads_only:  # what a killed process saved but did not yet remember
            memory.recover()  # is stored (vector), after settling as below
        elif hasattr(memory, "settle_interrupted"):  # a turn a killed process never saved becomes 'unanswered'
            memory.settle_interrupted()
        code = _one_shot(args, memory)
    except (StoreError, UsageError, ConfigError, ValueError) as err:  # e.g. MONGODB_URI's server unreachable
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - the store, the model or the embedder failed: one line, no traceback
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 1
    if code is not None:
        return code
    print(f"# {args.stage} chat · {settings.mode} model · type 'quit' to end", file=sys.stderr)
    failures = 0
    for line in _stdin_lines():
        if line is TOO_LONG:
            print(
                f"! message too long (more than {MAX_USER_CHARS:,} characters); nothing was sent or saved: send it "
                "in smaller parts",
                file=sys.stderr,
            )
            continue
        if line.strip().lower() in ("quit", "exit"):
            break
        try:
            result = memory.turn(line)
        except EmptyMessageError as err:
            print(f"! {err}", file=sys.stderr)
            continue
        except Exception as err:  # noqa: BLE001 - model, database, embedder, network: the chat goes on
            failures += 1
            print(f"! {_one_line(err)} {_settle(memory, err)}", file=sys.stderr)
            continue
        print(terminal_safe(" ".join(result.reply.split())) or "(empty reply)", flush=True)
    try:
        if hasattr(memory, "close"):
            memory.close()  # background memory work finishes before the process ends
    except Exception as err:  # noqa: BLE001
        failures += 1
        print(f"! background memory work failed: {_one_line(err)}", file=sys.stderr)
    if args.stats:
        print("# stats " + json.dumps(getattr(memory, "stats", {}), sort_keys=True, default=str), file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
