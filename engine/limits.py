"""How much one player may play and one server may spend: turns per user in a sliding window, and model tokens
per server per UTC day. Both are counted from the database (the turns players began, the tokens turns and
summaries used), so a restart resets neither, and processes sharing a database share the counts.

Commands that call no model (/roll, /sheet, /attack, /buy …) have a limit of their own, generous and counted in
memory (Commands): it guards the process and the database against a flood, not a budget, so counting it in the
database would make every /sheet (a read today) cost a write; a restart forgetting a minute's count costs nothing;
and Discord sends each server's commands to one process, so a player is counted whole in each server's process."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Callable

from .config import LimitSettings
from .errors import GameError
from .basics import utcnow


class RateLimited(GameError):
    """A player started turns faster than the server allows; the message says when they may go on."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BudgetSpent(GameError):
    """The server used its model tokens for the day; the message says when the GM is back."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Usage:
    """A server's use of the model on one UTC day."""

    day: str
    tokens: int
    turns: int
    budget: int  # tokens a day; 0: no limit

    def line(self) -> str:
        spent = f"{self.tokens:,} tokens" + (f" of {self.budget:,} ({100 * self.tokens / self.budget:.0f}%)"
                                            if self.budget else " (no daily budget)")
        return f"Today (UTC {self.day}): {spent}, {self.turns} turn{'s' if self.turns != 1 else ''}."


def today(now: datetime | None = None) -> str:
    return (now or utcnow()).astimezone(timezone.utc).date().isoformat()


def window_start(settings: LimitSettings, now: datetime | None = None) -> str:
    return ((now or utcnow()) - timedelta(seconds=settings.user_window_s)).isoformat()


@dataclass
class Rate:
    """A turn rate to hold a player to: their newest `turns` turns begun after `since` go to `refuse`, which raises
    if this turn would exceed the limit (the store counts them in the same write that stores the turn)."""

    turns: int
    since: str
    refuse: Callable[[list[str]], None]


def rate(settings: LimitSettings, guild_id: str | None) -> Rate | None:
    """The rate a turn's first write holds the player to (servers only), or None."""
    if guild_id is None or not settings.user_turns:
        return None
    return Rate(settings.user_turns, window_start(settings), lambda recent: refuse(settings, recent, None))


def refuse(settings: LimitSettings, recent: list[str], usage: Usage | None, now: datetime | None = None) -> None:
    """Raise the refusal a player should read, if either limit is reached.

    `recent`: when the user's turns in the window began (newest first, at most `user_turns` of them);
    `usage`: the server's use today (None outside a server: no budget applies)."""
    now = now or utcnow()
    if settings.user_turns and len(recent) >= settings.user_turns:
        oldest = datetime.fromisoformat(recent[settings.user_turns - 1])
        wait = max(1, round((oldest + timedelta(seconds=settings.user_window_s) - now).total_seconds()))
        raise RateLimited(f"Easy there: that is {settings.user_turns} turns in {_span(settings.user_window_s)}, "
                          f"as fast as this server allows. Go on in {_span(wait)}.", retry_after=wait)
    if usage is not None and usage.budget and usage.tokens >= usage.budget:
        midnight = datetime.fromisoformat(usage.day).replace(tzinfo=timezone.utc) + timedelta(days=1)
        left = int((midnight - now).total_seconds())
        raise BudgetSpent(f"This server has used today's model budget ({usage.budget:,} tokens), so the Game Master "
                          f"rests until 00:00 UTC, in {_span(left)}. Your words were not sent; nothing happened.",
                          retry_after=left)


class Commands:
    """Each user's model-free commands in a sliding window, in this process's memory (see the module's docstring)."""

    SWEEP = 1000  # every this many commands, users whose window is empty are forgotten: the memory stays bounded

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}
        self._counted = 0

    def admit(self, settings: LimitSettings, user_id: str) -> None:
        """Count one command by `user_id`, or raise RateLimited (counting nothing) when the window is full."""
        most, window = settings.user_commands, settings.user_commands_window_s
        if not most:
            return
        now = self.clock()
        seen = self._seen.setdefault(user_id, deque())
        while seen and seen[0] <= now - window:
            seen.popleft()
        if len(seen) >= most:
            wait = max(1, round(seen[0] + window - now))
            raise RateLimited(f"Easy there: that is {most} commands in {_span(window)}, as fast as this server "
                              f"allows. Go on in {_span(wait)}.", retry_after=wait)
        seen.append(now)
        self._counted += 1
        if self._counted % self.SWEEP == 0:
            for user in [u for u, times in self._seen.items() if not times or times[-1] <= now - window]:
                del self._seen[user]


def _span(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"
