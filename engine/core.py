"""What every part of the engine shares: its deps, one lock per channel, reading and writing a channel's game, and
work done in the background."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable, TypeVar

import structlog

from .deps import Deps
from .errors import NoGameRunning, StaleSession
from .state import GameState, Message
from .store import Session

log = structlog.get_logger(__name__)

WRITES = 3  # times an admin write is tried when another process keeps changing the game under it
T = TypeVar("T")


class Core:
    """The engine's base: the parts of Engine (actions, roster, rewind) build on these."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._queued: defaultdict[str, int] = defaultdict(int)  # holders and waiters per channel
        self._running: dict[str, asyncio.Task[None]] = {}  # background work, one per key
        self._background: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def channel_lock(self, channel_id: str) -> AsyncIterator[None]:
        """Turns in one channel run one at a time, in arrival order; channels run in parallel."""
        self._queued[channel_id] += 1
        try:
            async with self._locks[channel_id]:
                yield
        finally:
            self._queued[channel_id] -= 1

    def busy(self, channel_id: str) -> bool:
        """Whether work holds or awaits this channel: a free asyncio.Lock may still have a waiter about to wake."""
        return self._queued[channel_id] > 0

    async def session(self, channel_id: str) -> Session:
        found = await self.deps.store.load_session(channel_id)
        if found is None:
            raise NoGameRunning()
        return found

    async def state(self, channel_id: str) -> GameState:
        return (await self.session(channel_id)).state

    async def _write(self, channel_id: str, change: Callable[[Session, list[Message]], T]) -> T:
        """Apply `change` to the channel's saved state (it may add log lines) and write both back, unless someone
        wrote first: then the change is made again on what they wrote. A change that raises writes nothing."""
        for attempt in range(1, WRITES + 1):
            async with self.channel_lock(channel_id):
                session = await self.session(channel_id)
                session.state = session.state.clone()  # the loaded state is the store's cached one: change a copy
                lines: list[Message] = []
                result = change(session, lines)
                try:
                    await self.deps.store.save_state(session.id, session.state, lines, version=session.version)
                    return result
                except StaleSession:
                    if attempt == WRITES:
                        raise
                    log.info("write_replayed", channel_id=channel_id, attempt=attempt)
        raise AssertionError("unreachable")

    def _later(self, key: str, work: Awaitable[object]) -> None:
        """Background work, one at a time per key; a failure is logged (what it skipped is done next time)."""
        if key in self._running:
            work.close()  # type: ignore[attr-defined]  # the one running will be followed by the next turn's
            return

        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("background_failed", task=key)

        task = self._track(asyncio.create_task(guarded()))
        self._running[key] = task
        task.add_done_callback(lambda _: self._running.pop(key, None))

    def _track(self, task: asyncio.Task[None]) -> asyncio.Task[None]:
        """Keep a background task until it ends (asyncio holds only a weak reference), for `drain`."""
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def drain(self) -> None:
        """Wait for background work (summaries, memory) to finish: before shutting down, and in tests."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
