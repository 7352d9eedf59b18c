"""This process among others sharing the database: its heartbeat, and the turns a dead process left unanswered."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from datetime import timedelta
from typing import Callable

import structlog

from ..basics import utcnow
from ..state import Message
from .records import HEARTBEAT, STALE_AFTER, alive, message
from .sql import Op, rows, run, writes

log = structlog.get_logger(__name__)


class Instances:
    """Processes and their pending turns (a part of Store, kept in its own module)."""

    instance: str  # this process's (this store's) id, on the turns it answers
    _heartbeat: asyncio.Task[None] | None

    async def _register(self) -> None:
        now = utcnow().isoformat()
        await self.execute("INSERT INTO instances (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
                           self.instance, socket.gethostname(), os.getpid(), now, now)
        self._heartbeat = asyncio.create_task(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT)
            try:
                await self.execute("UPDATE instances SET heartbeat_at = ? WHERE id = ?", utcnow().isoformat(),
                                   self.instance)
            except Exception as exc:  # a busy or briefly unreachable database now is no reason to stop beating
                log.warning("heartbeat_failed", error=f"{type(exc).__name__}: {exc}")

    async def _unregister(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        try:
            await self.execute("DELETE FROM instances WHERE id = ?", self.instance)
        except Exception as exc:  # closing down: the row goes stale and others clear it
            log.warning("unregister_failed", error=f"{type(exc).__name__}: {exc}")

    async def recover_interrupted(self, where: Callable[[str, str | None], bool] = lambda channel_id, guild_id: True
                                  ) -> list[Message]:
        """Turns whose process is gone (crashed, killed) before answering, in the channels `where(channel_id,
        guild_id)` accepts (a front end takes those it can tell players about; guild_id None: a terminal game):
        marked interrupted, and returned, once (also among processes)."""
        orphans = await self.driver.write(self._recover(where))
        for r in orphans:
            log.warning("turn_interrupted", channel_id=r.channel_id, message_id=r.id)
        return orphans

    def _recover(self, where: Callable[[str, str | None], bool]) -> Op[list[Message]]:
        found = yield rows("SELECT messages.*, instances.host, instances.pid, instances.heartbeat_at, sessions.guild_id "
                           "FROM messages JOIN sessions ON sessions.id = messages.session_id "
                           "LEFT JOIN instances ON instances.id = messages.instance "
                           "WHERE messages.status IN ('pending', 'queued') ORDER BY messages.id")
        orphans = []
        for r in found:
            if r["instance"] == self.instance or not where(r["channel_id"], r["guild_id"]) or alive(r):
                continue
            # Only the process whose update lands reports it: two starting at once must not both tell the table.
            if (yield run("UPDATE messages SET status = 'interrupted' WHERE id = ? AND status IN ('pending', 'queued')",
                          r["id"])):
                orphans.append(message(r).model_copy(update={"status": "interrupted"}))
        gone = {r["instance"] for r in found if r["instance"] and r["instance"] != self.instance}
        cutoff = (utcnow() - timedelta(seconds=STALE_AFTER)).isoformat()
        for instance in gone:
            yield run("DELETE FROM instances WHERE id = ? AND heartbeat_at < ?", instance, cutoff)
        return orphans

    @writes
    def cancel_pending(self, channel_id: str) -> Op[int]:
        """This process's turns in a channel that its player stopped (Ctrl-C): their words kept, marked failed."""
        return (yield run("UPDATE messages SET status = 'failed' WHERE status IN ('pending', 'queued') "
                          "AND channel_id = ? AND instance = ?", channel_id, self.instance))
