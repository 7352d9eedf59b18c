"""The turns' one embedding each: every channel's player message goes to one worker thread, which embeds what is
waiting in batches; the event loop only awaits the result. When too many are already waiting, a turn gets no
vector (None) and goes on with words alone (BM25) rather than waiting: a busy embedder slows no turn."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    import numpy as np

    from .embed import Embedder

log = structlog.get_logger(__name__)

QUERY_TOKENS = 64  # a message is embedded from its first 64 tokens: ~45 ms of CPU at 256 tokens, ~10 at 12
BUSY_AFTER = 24  # texts waiting: past this, a new one is not embedded (its turn uses BM25 alone)
BATCH = 16  # texts embedded in one run of the model


class QueryEmbedder:
    def __init__(self, embedder: Embedder, limit: int | None, busy_after: int = BUSY_AFTER) -> None:
        self.embedder, self.limit, self.busy_after = embedder, limit, busy_after
        self._queue: queue.SimpleQueue[tuple[str, concurrent.futures.Future]] = queue.SimpleQueue()
        self._waiting = 0
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self.skipped = 0  # texts refused because the queue was full (for the log and the benchmarks)

    @property
    def idle(self) -> bool:
        """Nothing is waiting: background embedding (old turns' memory) may use the model without slowing a turn."""
        return self._waiting == 0

    async def embed(self, text: str) -> np.ndarray | None:
        """The text's unit vector, or None when the embedder is too busy or failed (said in the log)."""
        with self._lock:
            if self._waiting >= self.busy_after:
                self.skipped += 1
                log.info("embedding_skipped", waiting=self._waiting)
                return None
            self._waiting += 1
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="lore-queries", daemon=True)
                self._worker.start()
        done: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((text, done))
        try:
            return await asyncio.wrap_future(done)
        except Exception as exc:  # the turn goes on without a vector
            log.warning("embedding_failed", error=f"{type(exc).__name__}: {exc}")
            return None

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                vectors = self.embedder.embed([text for text, _ in batch], self.limit)
            except Exception as exc:  # noqa: BLE001  (every waiter is told, none hangs)
                vectors, failed = None, exc
            # No longer waiting before anyone is told: a waiter that resumes at once and asks whether the
            # embedder is idle (memory's backfill does) must not find its own text still counted.
            with self._lock:
                self._waiting -= len(batch)
            if vectors is None:
                for _, done in batch:
                    done.set_exception(failed)
            else:
                for (_, done), vector in zip(batch, vectors):
                    done.set_result(vector)
