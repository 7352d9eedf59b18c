"""NPC voices: one webhook per channel, each message posted under the speaking NPC's name and avatar."""

from __future__ import annotations

import discord
import structlog

from engine.state import NPC

from .render import NO_PINGS

log = structlog.get_logger(__name__)

WEBHOOK_NAME = "Lorekeeper NPCs"


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
        except discord.Forbidden:
            log.warning("webhook_forbidden", channel_id=parent.id)
            return None
        self._hooks[parent.id] = hook
        return hook

    def is_npc_message(self, message: discord.Message) -> bool:
        parent = self._parent(message.channel)
        hook = self._hooks.get(parent.id) if parent else None
        return hook is not None and message.webhook_id == hook.id

    async def say(self, channel: discord.abc.Messageable, npc: NPC, pieces: list[str]) -> None:
        """Post the NPC's words; without the Manage Webhooks permission, the bot speaks for it."""
        hook = await self.webhook(channel)
        if hook is None:
            for piece in pieces:
                await channel.send(f"**{discord.utils.escape_markdown(npc.name)}:** {piece}", allowed_mentions=NO_PINGS)
            return
        thread = channel if isinstance(channel, discord.Thread) else discord.utils.MISSING
        for piece in pieces:
            await hook.send(piece, username=npc.name[:80], avatar_url=npc.avatar_url or discord.utils.MISSING,
                            allowed_mentions=NO_PINGS, thread=thread, wait=True)
