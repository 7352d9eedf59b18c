"""What admins set (channel and server settings) and what the limits are judged on, in the store."""

from __future__ import annotations

from ..config import LimitSettings
from ..limits import Usage, refuse, today, window_start
from ..basics import utcnow
from .sql import Op, reads, row, rows, run, value, writes


class AdminRecords:
    """Settings and limits (a part of Store, kept in its own module)."""

    @reads
    def debug(self, channel_id: str) -> Op[bool | None]:
        """This channel's debug switch: on, off, or None when nobody set it here (then the config decides)."""
        on = yield value("SELECT debug_set FROM channel_settings WHERE channel_id = ?", channel_id)
        return None if on is None else bool(on)

    @writes
    def set_debug(self, channel_id: str, on: bool, by: str | None = None) -> Op[None]:
        yield run("INSERT INTO channel_settings (channel_id, debug, debug_set, debug_by) VALUES (?, ?, ?, ?) "
                  "ON CONFLICT(channel_id) DO UPDATE SET debug = excluded.debug, debug_set = excluded.debug_set, "
                  "debug_by = excluded.debug_by", channel_id, int(on), int(on), by if on else None)

    @reads
    def debug_reader(self, channel_id: str) -> Op[str | None]:
        """Who reads this channel's debug reports: the admin who turned debug on (None: nobody chose one)."""
        return (yield value("SELECT debug_by FROM channel_settings WHERE channel_id = ?", channel_id))

    @reads
    def sources(self, channel_id: str) -> Op[bool | None]:
        """Whether this channel shows a "Sources" line under replies; None: the config's default."""
        on = yield value("SELECT sources FROM channel_settings WHERE channel_id = ?", channel_id)
        return None if on is None else bool(on)

    @writes
    def set_sources(self, channel_id: str, on: bool) -> Op[None]:
        yield run("INSERT INTO channel_settings (channel_id, debug, sources) VALUES (?, 0, ?) "
                  "ON CONFLICT(channel_id) DO UPDATE SET sources = excluded.sources", channel_id, int(on))

    @reads
    def server_settings(self, guild_id: str) -> Op[str | None]:
        """A server's settings as stored (JSON), or None when its admins never chose any."""
        return (yield value("SELECT settings FROM server_settings WHERE guild_id = ?", guild_id))

    @writes
    def set_server_settings(self, guild_id: str, settings: str) -> Op[None]:
        yield run("INSERT INTO server_settings (guild_id, settings, updated_at) VALUES (?, ?, ?) "
                  "ON CONFLICT(guild_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at",
                  guild_id, settings, utcnow().isoformat())

    @reads
    def usage(self, guild_id: str, day: str) -> Op[tuple[int, int]]:
        """A server's (tokens, turns) on one UTC day."""
        found = yield row("SELECT tokens, turns FROM guild_usage WHERE guild_id = ? AND day = ?", guild_id, day)
        return (found["tokens"], found["turns"]) if found else (0, 0)

    @reads
    def limits(self, user_id: str, since: str, turns: int, guild_id: str | None, day: str
               ) -> Op[tuple[list[str], tuple[int, int]]]:
        """What the limits are judged on, in one read: when the user's newest `turns` turns since `since` began
        (newest first), and the server's (tokens, turns) that day."""
        recent = [] if not turns else [r[0] for r in (yield rows(
            "SELECT created_at FROM messages WHERE author_id = ? AND instance IS NOT NULL AND created_at > ? "
            "ORDER BY created_at DESC LIMIT ?", user_id, since, turns))]
        spent = (0, 0)
        if guild_id is not None:
            found = yield row("SELECT tokens, turns FROM guild_usage WHERE guild_id = ? AND day = ?", guild_id, day)
            spent = (found["tokens"], found["turns"]) if found else (0, 0)
        return recent, spent

    async def enforce_limits(self, settings: LimitSettings, user_id: str, guild_id: str | None, *,
                             rate: bool = True) -> None:
        """Refuse a turn that either limit forbids (engine/limits.py); both apply in Discord servers only (the
        terminal has one player, and no server to bill). `rate=False`: the turn was admitted before (a replay),
        only the budget is judged."""
        turns = settings.user_turns if rate else 0
        if guild_id is None or not (turns or settings.guild_daily_tokens):
            return  # nothing to judge: no read
        day = today()
        recent, (tokens, played) = await self.limits(user_id, window_start(settings), turns, guild_id, day)
        refuse(settings, recent if rate else [], Usage(day, tokens, played, settings.guild_daily_tokens))
