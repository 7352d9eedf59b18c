"""Turns take the event loop one step at a time, first come first served.

asyncio runs, in one pass of its loop, every task that became ready since the last pass. When 200 channels' model
replies land together, one pass ran 200 turns' worth of work (~1.5 ms each) before the loop looked at its sockets
or timers again: a ticker woke up to 0.3 s late (bench/channels.py), long enough to delay Discord's heartbeats and
an interaction's 3-second answer. A turn now calls `await step()` where its work resumes after waiting (it begins,
a model's reply arrives, the database answers): one such step is let through per pass of the loop, in the order
they asked, so a pass holds at most one turn's stretch of work plus whatever else is due (timers, sockets, the
gateway). Nothing is held across an await, so a turn waiting on anything (a lock, a model, another turn) never
stops the others.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque


class Fair:
    """One step per pass of the loop: the first to ask goes now if nobody went in this pass, the others wait their
    turn in order."""

    def __init__(self) -> None:
        self.waiting: deque[asyncio.Future[None]] = deque()
        self.granted = False  # a step went in this pass; `_next` (queued behind it) lets the next one go

    async def step(self) -> None:
        if not self.granted and not self.waiting:
            self._grant()
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            # Cancelled while waiting: it leaves the queue. Cancelled just after it was let through: that pass
            # goes unused, and `_next` (already queued) lets the next one go.
            if turn in self.waiting:
                self.waiting.remove(turn)
            raise

    def _grant(self) -> None:
        self.granted = True
        asyncio.get_running_loop().call_soon(self._next)  # runs in the next pass, after the step let through in this one

    def _next(self) -> None:
        self.granted = False
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():  # a cancelled waiter has left the queue
                turn.set_result(None)  # its task runs in the next pass, and `_next` right after it
                self._grant()
                return


# One per event loop, forgotten with it (a Fair holds no reference to its loop).
_FAIR: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Fair] = weakref.WeakKeyDictionary()


async def step() -> None:
    """Wait for this pass of the loop to be yours (no wait at all when nobody else is asking)."""
    loop = asyncio.get_running_loop()
    fair = _FAIR.get(loop)
    if fair is None:
        fair = _FAIR[loop] = Fair()
    await fair.step()
