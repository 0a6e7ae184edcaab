"""`FactWorker` and its latency. Taught in further/04_memory_in_production, section 'Latency: extract inline or in the background'.

`helpers.memory.facts` re-exports everything here.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from helpers.retrieval import MemoryIndex, check_user_id

__all__ = ["FactWorker", "WorkerError", "Rememberer", "measure_extraction_latency", "latency_summary"]

log = logging.getLogger(__name__)


class Rememberer(Protocol):
    """What the worker and the latency measurement need of a `helpers.memory.facts.FactMemory`."""

    index: MemoryIndex

    def remember(
        self, user_id: str, exchange_messages: list[dict], source: dict | None = None, **kwargs: Any
    ) -> Any: ...


def latency_summary(samples_ms: list[float]) -> dict | None:
    """p50, p95 (numpy's percentiles), mean and max of timings in ms, rounded to µs; None without samples."""
    if not samples_ms:
        return None
    data = np.asarray(samples_ms, dtype=np.float64)
    p50, p95 = np.percentile(data, [50, 95])
    return {
        "p50": round(float(p50), 3),
        "p95": round(float(p95), 3),
        "mean": round(float(data.mean()), 3),
        "max": round(float(data.max()), 3),
    }


@dataclass(frozen=True)
class WorkerError:
    """A job the worker could not complete: which user, what went wrong, the traceback."""

    user_id: str
    source: Any
    error: str
    traceback: str


_STOP = object()


class FactWorker:
    """Stores memories off the reply path: a thread with a bounded queue. Taught in 05_vector_memory.

    `submit` blocks while the queue is full (back-pressure, never dropping work); `drain` waits until
    everything submitted is stored; `close` drains and stops, and runs at interpreter exit too. A
    failed job is counted in `error_count`, kept in `errors` (the last 100) and logged; `close` warns.
    The default job is `facts.remember(user_id, exchange_messages, source, **kwargs)`.
    """

    def __init__(
        self,
        facts: Rememberer | None = None,
        *,
        handler: Callable[..., Any] | None = None,
        maxsize: int = 64,
        name: str = "fact-worker",
    ):
        if handler is None:
            if facts is None:
                raise ValueError("FactWorker needs a FactMemory (or a handler)")
            handler = facts.remember
        if not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"maxsize must be a positive int, got {maxsize!r}")
        self.handler = handler
        self.maxsize = maxsize
        self.done = 0
        self.error_count = 0
        self.errors: deque[WorkerError] = deque(maxlen=100)
        self._queue: queue.Queue = queue.Queue(maxsize=maxsize)
        self._cond = threading.Condition()
        self._unfinished = 0
        self._closed = False
        self._warned = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        atexit.register(self.close)  # daemon threads still run while atexit handlers do: the queue drains

    def __repr__(self) -> str:
        return f"FactWorker(pending={self.pending}, done={self.done}, errors={self.error_count}, closed={self._closed})"

    def __enter__(self) -> FactWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pending(self) -> int:
        """Jobs submitted and not yet finished."""
        with self._cond:
            return self._unfinished

    def submit(self, user_id: str, exchange_messages: list[dict], source: dict | None = None, **kwargs: Any) -> None:
        """Queue one exchange; blocks while `maxsize` jobs are waiting. Raises RuntimeError after close."""
        check_user_id(user_id)  # fail in the caller's thread, not later in the worker
        with self._cond:
            if self._closed:
                raise RuntimeError("FactWorker is closed; create a new one to submit more work")
            self._unfinished += 1
        self._queue.put((user_id, list(exchange_messages), source, kwargs))

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is _STOP:
                return
            user_id, messages, source, kwargs = job
            try:
                self.handler(user_id, messages, source, **kwargs)
                self.done += 1
            except Exception as exc:  # noqa: BLE001 - counted, kept and logged, never silent
                self.error_count += 1
                self.errors.append(WorkerError(user_id, source, f"{type(exc).__name__}: {exc}", traceback.format_exc()))
                log.error("FactWorker job for user %r failed: %s: %s", user_id, type(exc).__name__, exc)
            finally:
                with self._cond:
                    self._unfinished -= 1
                    self._cond.notify_all()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every submitted job has finished; False if `timeout` seconds passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._unfinished == 0, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Refuse new work, drain, stop the thread; True if everything was stored. Safe to call twice."""
        with self._cond:
            self._closed = True
        drained = self.drain(timeout)
        if self._thread.is_alive() and drained:
            self._queue.put(_STOP)
            self._thread.join(timeout)
        atexit.unregister(self.close)
        if self.error_count and not self._warned:
            self._warned = True
            first = self.errors[0].error if self.errors else "?"
            warnings.warn(
                f"FactWorker: {self.error_count} of {self.done + self.error_count} jobs failed "
                f"(first: {first}); see worker.errors",
                RuntimeWarning,
                stacklevel=2,
            )
        return drained


def measure_extraction_latency(
    facts: Rememberer,
    exchanges: list[tuple[str, str]],
    *,
    user_id: str = "latency-demo",
    session_id: str = "latency",
    maxsize: int = 64,
    cleanup: bool = True,
) -> dict:
    """How long memory writing blocks a turn: sync (`remember` inline) vs background (`FactWorker.submit`).

    `exchanges` are (user_text, assistant_text) pairs; each mode writes to its own user id. Returns
    per-turn milliseconds (p50/p95/mean/max and samples) and how long the worker then took to drain.
    """
    check_user_id(user_id)
    sync_user, worker_user = f"{user_id}-sync", f"{user_id}-worker"

    def messages(user_text: str, reply: str) -> list[dict]:
        return [{"role": "user", "content": user_text}, {"role": "assistant", "content": reply}]

    sync_ms = []
    for i, (user_text, reply) in enumerate(exchanges):
        started = time.perf_counter()
        facts.remember(sync_user, messages(user_text, reply), {"session_id": session_id, "seq": 2 * i + 1})
        sync_ms.append((time.perf_counter() - started) * 1000)
    worker = FactWorker(facts, maxsize=maxsize)
    submit_ms = []
    for i, (user_text, reply) in enumerate(exchanges):
        started = time.perf_counter()
        worker.submit(worker_user, messages(user_text, reply), {"session_id": session_id, "seq": 2 * i + 1})
        submit_ms.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    worker.close()
    drain_ms = (time.perf_counter() - started) * 1000
    stored = {name: len(facts.index.all(uid)) for name, uid in (("sync", sync_user), ("worker", worker_user))}
    if cleanup:
        facts.index.delete_user(sync_user)
        facts.index.delete_user(worker_user)
    return {
        "turns": len(exchanges),
        "sync_ms": latency_summary(sync_ms),
        "worker_submit_ms": latency_summary(submit_ms),
        "worker_drain_ms": round(drain_ms, 1),
        "worker_done": worker.done,
        "worker_errors": worker.error_count,
        "stored": stored,
        "sync_samples": [round(x, 3) for x in sync_ms],
        "worker_samples": [round(x, 3) for x in submit_ms],
    }
