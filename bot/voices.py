"""NPC voices: one webhook per channel, each message posted under the speaking NPC's name and avatar."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import discord
import structlog

from engine.entities import NPC

from .render import NO_PINGS
from .text import LIMIT, split_message

log = structlog.get_logger(__name__)

WEBHOOK_NAME = "Lorekeeper NPCs"


@dataclass
class Voice:
    """Where one speaker's words are posted as they stream: `post(piece, first, **extra)` sends a new message;
    `prefix` is written before every piece (a bot speaking for an NPC), so pieces are cut `limit` long; `opened`
    holds messages posted to introduce the speaker (taken back with the reply if the turn fails)."""

    post: Callable[..., Awaitable[Any]]
    prefix: str = ""
    opened: list[Any] = field(default_factory=list)

    @property
    def limit(self) -> int:
        return LIMIT - len(self.prefix)


class NpcVoices:
    """Discord allows 15 webhooks a channel, so every NPC shares one, with a per-message name."""

    def __init__(self, bot_user_id: int | None = None) -> None:
        self._hooks: dict[int, discord.Webhook] = {}
        self.bot_user_id = bot_user_id

    @staticmethod
    def _parent(channel: discord.abc.Messageable) -> discord.TextChannel | None:
        if isinstance(channel, discord.Thread):
            return channel.parent if isinstance(channel.parent, discord.TextChannel) else None
        return channel if isinstance(channel, discord.TextChannel) else None

    async def webhook(self, channel: discord.abc.Messageable) -> discord.Webhook | None:
        parent = self._parent(channel)
        if parent is None:
            return None
        if parent.id in self._hooks:
            return self._hooks[parent.id]
        try:
            existing = [h for h in await parent.webhooks() if h.name == WEBHOOK_NAME and h.token]
            hook = existing[0] if existing else await parent.create_webhook(name=WEBHOOK_NAME, reason="NPC voices for Lorekeeper")
        except discord.HTTPException as exc:  # no Manage Webhooks, or the channel's 15 webhooks are taken
            log.warning("webhook_unavailable", channel_id=parent.id, status=exc.status, code=exc.code)
            return None
        self._hooks[parent.id] = hook
        return hook

    @staticmethod
    def speaker(message: discord.Message, npcs: list[NPC]) -> NPC | None:
        """The NPC who posted a webhook message, by the name it was posted under (works after a restart too)."""
        if message.webhook_id is None:
            return None
        return next((n for n in npcs if webhook_username(n.name) == message.author.name), None)

    async def voice(self, channel: discord.abc.Messageable, npc: NPC) -> Voice:
        """The NPC's voice for a streamed reply: its webhook, or the bot speaking for it without one."""
        hook = await self.webhook(channel)
        if hook is None:
            prefix = speaking_for(npc)

            async def speak_for(piece: str, first: bool, **extra: Any) -> Any:
                return await channel.send(prefix + piece, allowed_mentions=NO_PINGS, **extra)
            return Voice(speak_for, prefix)
        thread = channel if isinstance(channel, discord.Thread) else discord.utils.MISSING

        async def post(piece: str, first: bool, **extra: Any) -> Any:
            return await hook.send(piece, username=webhook_username(npc.name), allowed_mentions=NO_PINGS, thread=thread,
                                   avatar_url=npc.avatar_url or discord.utils.MISSING, wait=True, **extra)
        return Voice(post)

    async def say(self, channel: discord.abc.Messageable, npc: NPC, pieces: list[str]) -> None:
        """Post the NPC's words; without the Manage Webhooks permission, the bot speaks for it."""
        thread = channel if isinstance(channel, discord.Thread) else discord.utils.MISSING
        sent = 0
        for attempt in (1, 2):
            hook = await self.webhook(channel)
            if hook is None:
                await self._speak_for(channel, npc, pieces[sent:])
                return
            try:
                for piece in pieces[sent:]:
                    await hook.send(piece, username=webhook_username(npc.name), allowed_mentions=NO_PINGS, thread=thread,
                                    avatar_url=npc.avatar_url or discord.utils.MISSING, wait=True)
                    sent += 1
                return
            except discord.NotFound:
                # Someone deleted the webhook: forget it and make a new one, once.
                parent = self._parent(channel)
                self._hooks.pop(parent.id if parent else 0, None)
                log.warning("webhook_gone", channel_id=getattr(channel, "id", None), attempt=attempt)
                if attempt == 2:
                    raise
            except discord.HTTPException as exc:  # any other refusal: the bot speaks for the NPC instead
                log.warning("webhook_failed", channel_id=getattr(channel, "id", None), status=exc.status)
                await self._speak_for(channel, npc, pieces[sent:])
                return

    @staticmethod
    async def _speak_for(channel: discord.abc.Messageable, npc: NPC, pieces: list[str]) -> None:
        """The bot posts the NPC's words under a name prefix, re-split so prefix and words fit 2,000 characters."""
        prefix = speaking_for(npc)
        for piece in split_message("\n\n".join(pieces), LIMIT - len(prefix)):
            await channel.send(prefix + piece, allowed_mentions=NO_PINGS)


def speaking_for(npc: NPC) -> str:
    return f"**{discord.utils.escape_markdown(npc.name)}:** "


_BANNED = re.compile(r"(discor)(d)|(clyd)(e)", re.I)


def webhook_username(name: str) -> str:
    """A name Discord accepts for a webhook message: 1-80 characters, never containing "discord" or "clyde"."""
    name = _BANNED.sub(lambda m: f"{m.group(1) or m.group(3)}\u200b{m.group(2) or m.group(4)}", " ".join(name.split()))
    if name.lower() in ("everyone", "here"):
        name += "\u200b"
    return name[:80] or "NPC"
