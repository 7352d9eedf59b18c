"""A reply posted early and edited as it streams (as llmcord does), so a table sees the story arrive instead of
"thinking…" for the whole turn: the Game Master's in its own messages, an NPC's through its webhook."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Awaitable, Callable

import discord
import structlog

from .render import NO_PINGS
from .text import split_message
from .voices import Voice

log = structlog.get_logger(__name__)

CURSOR = " ▌"  # more is coming


class LiveReply:
    """Told the visible reply as it grows (`show`); at most one post or edit per `interval` seconds, the first
    only after one interval (a reply done by then is posted once, whole); pieces roll over at 2,000
    characters. `finish` puts the committed text in place; `abandon` takes back what a failed turn showed.

    The Game Master's reply goes to the interaction's follow-up or as a reply to the player's message; an NPC's
    goes wherever `npc_voice(name)` says (its webhook), or is not streamed when that gives None."""

    def __init__(self, channel: discord.abc.Messageable, followup: discord.Webhook | None,
                 reply_to: discord.Message | None, interval: float,
                 npc_voice: Callable[[str], Awaitable[Voice | None]] | None = None) -> None:
        self.channel, self.followup, self.reply_to, self.interval = channel, followup, reply_to, interval
        self.npc_voice = npc_voice
        self.speaker: str | None = None  # who this turn's reply is spoken by: "GM" or an NPC's name
        self.voice: Voice | None = None
        self.messages: list[Any] = []  # posted so far, in order
        self.shown: list[str] = []  # what each shows
        self.text = ""
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._last_put = float("-inf")  # when the last post or edit was sent (the event loop's clock)

    @property
    def started(self) -> bool:
        return bool(self.messages)

    def speaks_for(self, speaker: str) -> bool:
        """Whether what streamed is this speaker's reply (a replayed turn may be answered by someone else)."""
        return self.started and self.speaker == speaker

    def show(self, speaker: str, text: str) -> None:
        if self._stop.is_set() or (self.speaker is not None and speaker != self.speaker):
            return
        if speaker != "GM" and self.npc_voice is None:
            return  # nowhere to stream an NPC: its words are posted whole
        self.speaker, self.text = speaker, text
        if self._task is None:
            self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        synced = ""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.interval)
                return  # stopped: whatever was in flight has finished
            text = self.text
            if text.strip() and text != synced:
                try:
                    voice = await self._voice()
                    if voice is None:
                        return  # this NPC cannot be streamed: the reply is posted whole at the end
                    await self._put(split_message(text.rstrip() + CURSOR, voice.limit))
                except Exception:  # a refused edit, a closing connection: the final text is put in place anyway
                    log.warning("stream_edit_failed", exc_info=True)
                synced = text

    async def _voice(self) -> Voice | None:
        if self.voice is None:
            if self.speaker == "GM":
                self.voice = Voice(self._post_for_gm)
            else:
                assert self.npc_voice is not None and self.speaker is not None
                self.voice = await self.npc_voice(self.speaker)
                if self.voice is None:
                    self.npc_voice = None
        return self.voice

    async def _put(self, pieces: list[str], embed: discord.Embed | None = None) -> None:
        assert self.voice is not None
        for i, piece in enumerate(pieces):
            content = self.voice.prefix + piece
            extra = {"embed": embed} if embed is not None and i == len(pieces) - 1 else {}
            if i < len(self.messages):
                if self.shown[i] != content or extra:
                    await self.messages[i].edit(content=content, allowed_mentions=NO_PINGS, **extra)
                    self.shown[i] = content
                continue
            self.messages.append(await self.voice.post(piece, first=not self.messages, **extra))
            self.shown.append(content)
        self._last_put = asyncio.get_running_loop().time()
        for message in self.messages[len(pieces):]:  # the final text needs fewer pieces than the stream did
            with contextlib.suppress(discord.HTTPException):
                await message.delete()
        del self.messages[len(pieces):], self.shown[len(pieces):]

    async def _post_for_gm(self, piece: str, *, first: bool, **extra: Any) -> Any:
        if first and self.followup is not None:
            return await self.followup.send(piece, wait=True, allowed_mentions=NO_PINGS, **extra)
        if first and self.reply_to is not None:
            reference = self.reply_to.to_reference(fail_if_not_exists=False)
            return await self.channel.send(piece, allowed_mentions=NO_PINGS, reference=reference,
                                           mention_author=False, **extra)
        return await self.channel.send(piece, allowed_mentions=NO_PINGS, **extra)

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def finish(self, pieces: list[str], embed: discord.Embed | None = None) -> None:
        """The committed reply, in the messages the stream posted (more or fewer as it needs)."""
        await self.stop()
        assert self.voice is not None
        if self.voice.prefix:  # pieces were cut for a bare message: cut again to leave room for the name
            pieces = split_message("\n\n".join(pieces), self.voice.limit)
        # The final edit keeps the pace too (LOREKEEPER_STREAM_INTERVAL): Discord rate-limits a message's edits.
        wait = self._last_put + self.interval - asyncio.get_running_loop().time()
        if wait > 0:
            await asyncio.sleep(wait)
        await self._put(pieces, embed)

    async def abandon(self) -> None:
        """The turn failed (or the bot is stopping): nothing of it happened, so what it showed goes."""
        try:
            await self.stop()
            for message in [*self.messages, *(self.voice.opened if self.voice else [])]:
                await message.delete()
        except Exception:  # best effort: the bot may be shutting down; the failure itself is what counts
            log.warning("stream_abandon_failed", exc_info=True)
        self.messages, self.shown = [], []
        if self.voice is not None:
            self.voice.opened = []
