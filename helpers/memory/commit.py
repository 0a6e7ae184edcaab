"""Commit one exchange under the session's version guard, or rebuild the session from its logs. Taught in 04_bounded_memory_mongodb, "One turn, arrow by arrow".

The write path of `BoundedMemory` (helpers/memory/bounded.py), which takes it as a mixin: trim the grown window,
fold what left it into the summary (helpers.memory.pending), save with the version guard (the commit point), let
the retriever (long-term memory) store the exchange, and confirm the turn's log entries (helpers.memory.fold);
`rebuild` refolds the committed log the same way; `recover` (every start) finishes what a killed process left.
"""

from __future__ import annotations

import random
import time

from helpers.db.crash import crash_point
from helpers.memory.errors import SessionConflict, TurnError
from helpers.memory.fold import committed_exchanges, confirm_turns, rebase, settle_interrupted, summary_fields
from helpers.memory.pending import fold_pending
from helpers.memory.summary import merge_summary
from helpers.memory.window import trim, trim_in_chunks

__all__ = ["SessionCommit"]


class SessionCommit:
    """BoundedMemory's writes: place an exchange, fold the pending turns, save under the version guard; rebuild.

    A mixin: it uses the session, token and store attributes `BoundedMemory` sets up (store, user_id, session_id,
    budget, stats, retriever, load, base_tokens, ...).
    """

    def _place(self, session: dict, exchange: list[dict], base: int | None) -> tuple[dict, dict]:
        """Apply one exchange without any model call: trim; what was dropped joins `pending`."""
        grown = [*session["window"], *exchange]
        if self.cache_aware:  # the marks of the cache layout chosen for this model (helpers.memory.caching)
            layout = self.cache_layout(session, grown, base)
            window, dropped = trim_in_chunks(grown, layout.high, layout.low)
        else:
            window, dropped = trim(grown, self.budget)
        fields = {
            "window": window,
            "persona": self.system,
            "base_tokens": base,
            "pending": [*session.get("pending", []), *dropped],
        }
        return fields, {"dropped": len(dropped), "summary_s": 0.0, "summary_error": None}

    def _merge_pending(self, session: dict, max_chunks: int | None = 1) -> tuple[dict, dict, list[int]]:
        """Fold the session's pending turns into its summary (helpers.memory.pending); returns (fields, info, seqs left out)."""
        pending = session.get("pending") or []
        info: dict = {"summary_s": 0.0, "summary_error": None}
        if not pending:
            return {}, info, []
        t0 = time.perf_counter()

        known = list(session.get("facts") or [])  # every fact the summary is responsible for, carried merge to merge

        def merge(summary: str, messages: list[dict]):
            result = merge_summary(
                self.client,
                self.settings.summary_model,
                summary,
                messages,
                max_tokens=self.summary_max_tokens,
                extraction_model=self.settings.extraction_model,
                ledger=self.ledger,
                check_retention=self.check_retention,
                known_facts=list(known),
            )
            if result.retention is not None or result.facts:
                known[:] = result.facts
            return result

        out = fold_pending(
            merge,
            session.get("summary", ""),
            session.get("summary_tokens") or 0,
            pending,
            max_tokens=self.pending_max_tokens,
            max_count=self.pending_max_count,
            max_chunks=max_chunks,
        )
        info["summary_s"] = time.perf_counter() - t0
        if out.error:
            self.stats["summary_failures"] += 1
            info["summary_error"] = out.error
        if out.warning:
            info["summary_warning"] = out.warning
        if out.unsummarised or out.warning:
            self.stats["unsummarised"] = self.stats.get("unsummarised", 0) + len(out.unsummarised)
        fields, more, left_out = summary_fields(
            session, out, known, lambda summary: self._count_base(self.system_prompt({"summary": summary}))
        )
        info.update(more)
        return fields, info, left_out

    def _fold(
        self, session: dict, exchange: list[dict], base: int | None, max_chunks: int | None = 1
    ) -> tuple[dict, dict, list[int]]:
        """Place one exchange and fold what is pending, in one go (import and rebuild: no concurrent save between)."""
        fields, info = self._place(session, exchange, base)
        merged, minfo, left_out = self._merge_pending({**session, **fields}, max_chunks)
        return {**fields, **merged}, {**info, **minfo}, left_out

    def commit_exchange(
        self, session: dict, exchange: list[dict], base: int, *, remember: bool = True, max_chunks: int | None = 1
    ) -> tuple[dict, dict]:
        """Save the exchange with the version guard; the summary merge runs once, before the retry loop.

        A turn folds at most `max_chunks` bounded summary calls (1); an import passes None: as many calls as it
        takes for everything that left the window (each within the pending bound).

        On a conflict the exchange is placed on the reloaded session (no model call) and the merge result
        is re-applied if that session still has the same summary and the merged turns pending; otherwise
        the result is dropped and the turns stay pending for a later merge (never merged twice).
        Once saved, the retriever (if any) remembers the exchange, unless `remember` is False (a batch import), and
        only then are the exchange's log entries marked 'ok', with the retriever's mark that it remembered them in
        the same update: a crash in between leaves them marked as still owed, for `recover` to finish.
        """
        fields, info = self._place(session, exchange, base)
        read = {**session, **fields}
        merged, minfo, left_out = self._merge_pending(read, max_chunks)
        info.update(minfo)
        handled = {m.get("seq") for m in read["pending"]} - {m.get("seq") for m in merged.get("pending", [])}
        turns = list(dict.fromkeys(m["turn"] for m in exchange if m.get("turn")))
        life = self.life
        for attempt in range(self.MAX_SAVE_ATTEMPTS):
            if attempt:
                self.stats["conflicts"] += 1
                time.sleep(random.uniform(0, 0.005 * (attempt + 1)))
                session = self.load()
                if life is not None and self.life != life:  # erased while this turn ran: it was built on erased data
                    self._drop_erased(turns, exchange)
                fields, _ = self._place(session, exchange, self.base_tokens(session))
                if merged:
                    merged = rebase(merged, read, {**session, **fields}, handled)
                    if merged is None:
                        merged, left_out = {}, []
                        info["summary_error"] = info["summary_error"] or "summary not applied: the session changed"
            # Crash safety: the save records this exchange's turn ids in `commits`, so its entries are committed
            # the moment it lands; the ids a previous save recorded are confirmed in the logs first, then dropped.
            confirm_turns(
                self.store, self.user_id, self.session_id, [t for t in session.get("commits") or [] if t not in turns]
            )
            saved = self.store.save_session(
                self.user_id, self.session_id, session["version"], {**fields, **merged, "commits": turns}
            )
            if saved is not None:
                crash_point("commit:saved")
                self._mark_unsummarised(left_out)
                saved = {**self._fresh(), **saved}
                marks = None
                if remember and self.retriever is not None:  # written once, after the commit point
                    marks = self.retriever.committed(saved, exchange)
                confirm_turns(self.store, self.user_id, self.session_id, turns, also=marks, entries=len(exchange))
                crash_point("commit:confirmed")
                info["conflicts"] = attempt
                return saved, info
        self.stats["conflicts"] += 1
        raise SessionConflict(
            f"session {self.session_id!r} changed {self.MAX_SAVE_ATTEMPTS} times while saving; "
            "the exchange is kept in the logs: run --rebuild"
        )

    def _drop_erased(self, turns: list[str], exchange: list[dict]) -> None:
        """The user was erased during this turn: delete what the turn logged (its request and reply came from the
        erased conversation; found by turn id, never by seq, which a new conversation reuses) and fail the turn."""
        if turns:
            self.store.logs.delete_many(
                {"user_id": self.user_id, "session_id": self.session_id, "turn": {"$in": turns}}
            )
        raise TurnError(
            "this user's data was erased while the turn ran, so nothing of the turn was kept; send the message again "
            "to start a new conversation",
            next((m["content"] for m in exchange if m.get("role") == "user"), ""),
        )

    def settle_interrupted(self) -> dict:
        """On start: settle what a killed process left 'pending' (helpers.memory.fold.settle_interrupted)."""
        return settle_interrupted(self.store, self.user_id, self.session_id)

    def recover(self) -> dict:
        """On start: settle what a killed process left 'pending', then let the retriever (long-term memory) store
        what committed exchanges still owe it (helpers.memory.remember); returns the counts."""
        done = self.settle_interrupted()
        if self.retriever is not None:
            done["remembered"] = self.retriever.recover()
        return done

    def _mark_unsummarised(self, seqs: list[int]) -> None:
        """Log entries left out of the summary: kept, flagged for --rebuild."""
        if seqs:
            self.store.set_log_status(self.user_id, self.session_id, seqs, "unsummarised")

    def rebuild(self) -> dict:
        """Recompute window and summary from the logs (the source of truth), e.g. after a crash or import.

        Safe beside live turns: the transcript read at the start is folded (in summary chunks within the
        pending bound); if another writer commits meanwhile, only the exchanges it committed are folded on
        top and the save is retried, so nothing committed is lost or counted twice. Then long-term memory (if any)
        stores what committed exchanges still owe it (`recover`).
        """
        self.settle_interrupted()
        session = self.load()
        included: set[int] = set()
        work = {**self._fresh(), "version": session["version"]}
        left_out: list[int] = []
        for attempt in range(self.MAX_SAVE_ATTEMPTS):
            messages = self._committed_messages(session, included)
            if attempt == 0:
                while messages and messages[0]["role"] != "user":  # a leading greeting starts no exchange
                    included.add(messages.pop(0)["seq"])
            fields, _info, more = self._fold(work, messages, work.get("base_tokens"), max_chunks=None)
            left_out += more
            included |= {m["seq"] for m in messages}
            work = {**work, **fields, "version": session["version"]}
            saved = self.store.save_session(
                self.user_id,
                self.session_id,
                session["version"],
                {k: v for k, v in work.items() if k not in ("user_id", "session_id", "version")},
            )
            if saved is not None:
                in_session = {m.get("seq") for m in [*saved.get("window", []), *saved.get("pending", [])]}
                folded = sorted(included - set(left_out))
                # entries recovered into the window, pending or summary are acknowledged again
                self.store.set_log_status(self.user_id, self.session_id, folded, "ok", only_if_status="unsummarised")
                self.store.set_log_status(
                    self.user_id,
                    self.session_id,
                    [s for s in folded if s in in_session],
                    "ok",
                    only_if_status="pending",
                )
                self._mark_unsummarised(left_out)
                if self.retriever is not None:
                    self.retriever.recover()
                return self.state()
            self.stats["conflicts"] += 1
            time.sleep(random.uniform(0, 0.005 * (attempt + 1)))
            session = self.load()
        raise SessionConflict("the session kept changing during --rebuild; try again")

    def _committed_messages(self, session: dict, skip: set[int]) -> list[dict]:
        """Committed log messages not in `skip`, grouped into exchanges (helpers.memory.fold)."""
        return committed_exchanges(
            session, self.store.logs_for(self.user_id, self.session_id), skip, self.tokens_of_text
        )
