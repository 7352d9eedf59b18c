"""/feature: a class feature that is spent and comes back with a rest (Rage, Second Wind, Lay on Hands, Ki, …)."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from engine.errors import GameError
from engine.rules import features

from ..client import LorekeeperBot
from ..render import clip


class FeatureCog(commands.Cog):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot

    @app_commands.command(name="feature")
    @app_commands.guild_only()
    @app_commands.describe(name="A feature of yours that is spent (the list shows what is left)",
                           target="Whom it is used on (Lay on Hands, Bardic Inspiration; several with commas for "
                                  "Turn Undead or Preserve Life)",
                           amount="Hit points from Lay on Hands' pool (default: what the target is missing)",
                           option="Ki: flurry of blows, patient defense, step of the wind, stunning strike; Channel "
                                  "Divinity: turn undead, preserve life, sacred weapon; Lay on Hands: cure; Wild "
                                  "Shape: the beast",
                           slot="Sorcery points: the level of the slot to make")
    async def feature(self, interaction: discord.Interaction, name: app_commands.Range[str, 2, 40],
                      target: app_commands.Range[str, 1, 300] | None = None,
                      amount: app_commands.Range[int, 1, 100] | None = None,
                      option: app_commands.Range[str, 1, 40] | None = None,
                      slot: app_commands.Range[int, 1, 5] | None = None) -> None:
        """Use a class feature: the engine spends it and does what it does (the Game Master sees it in the story)."""
        await self.bot.ack_if_busy(interaction)
        text = await self.bot.engine.use_feature(str(interaction.channel_id), str(interaction.user.id),
                                                 interaction.user.display_name, name, target, amount, option, slot)
        await self.bot.announce(interaction, clip(f"🌀 {discord.utils.escape_markdown(text)}", 2000))

    @feature.autocomplete("name")
    async def feature_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """The caller's spendable features, with what is left of each."""
        try:
            ch = await self.bot.engine.character(str(interaction.channel_id), str(interaction.user.id))
        except GameError:
            return []
        return [app_commands.Choice(name=clip(f"{r.name} ({r.left(ch)} left, {r.recharge(ch)} rest)", 100), value=r.name)
                for r in features.resources(ch) if current.lower() in r.name.lower()][:25]


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(FeatureCog(bot))
