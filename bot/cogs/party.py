"""/party join|leave|list."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from ..client import LorekeeperBot


@app_commands.guild_only()
class PartyCog(commands.GroupCog, group_name="party", group_description="Who travels together"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot
        super().__init__()

    async def _set(self, interaction: discord.Interaction, member: bool) -> None:
        await self.bot.ack_if_busy(interaction)
        ch = await self.bot.engine.set_party_membership(str(interaction.channel_id), str(interaction.user.id), member)
        verb = "rejoins the party" if member else "leaves the party for now; your messages here are no longer actions"
        await self.bot.announce(interaction, f"{discord.utils.escape_markdown(ch.name)} {verb}.")

    @app_commands.command(name="join")
    async def join(self, interaction: discord.Interaction) -> None:
        """Your character (re)joins the party; your messages here become actions."""
        await self._set(interaction, True)

    @app_commands.command(name="leave")
    async def leave(self, interaction: discord.Interaction) -> None:
        """Your character steps away from the party."""
        await self._set(interaction, False)

    @app_commands.command(name="list")
    async def list_members(self, interaction: discord.Interaction) -> None:
        """Everyone in the party."""
        state = await self.bot.engine.state(str(interaction.channel_id))
        lines = [f"**{c.name}**, level {c.level} {c.char_class} ({c.hp}/{c.max_hp} HP)"
                 for pid, c in state.characters.items() if pid in state.party.player_ids]
        lines += [f"**{state.npcs[n].name}**, companion" for n in state.party.npc_ids]
        await interaction.response.send_message("\n".join(lines) or "The party is empty. Make a character with /char create.",
                                                allowed_mentions=discord.AllowedMentions.none())


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(PartyCog(bot))
