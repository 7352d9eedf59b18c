"""Trading: /shop shows what is sold where the party is, /buy and /sell deal at the listed prices (no model call)."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from engine.shops import MAX_QUANTITY, shops_here

from ..client import LorekeeperBot
from ..render import clip, shop_embed
from .play import carried_choices, game_here


class TradeCog(commands.Cog):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot

    @app_commands.command(name="shop")
    @app_commands.guild_only()
    async def shop(self, interaction: discord.Interaction) -> None:
        """What the shop here sells, for how much, and how many are left."""
        state = await self.bot.engine.state(str(interaction.channel_id))
        await interaction.response.send_message(embed=shop_embed(state), ephemeral=True)

    @app_commands.command(name="buy")
    @app_commands.guild_only()
    @app_commands.describe(item="Something the shop here sells (the list shows its stock)", quantity="How many",
                           shop="Which shop, where there are several here (else the one that sells it)")
    async def buy(self, interaction: discord.Interaction, item: app_commands.Range[str, 1, 80],
                  quantity: app_commands.Range[int, 1, MAX_QUANTITY] = 1,
                  shop: app_commands.Range[str, 1, 80] | None = None) -> None:
        """Buy from the shop here at its listed price (the Game Master sees it in the story)."""
        await self._trade(interaction, item, quantity, shop, selling=False)

    @buy.autocomplete("item")
    async def stock_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """What the shops here sell, with the price."""
        if (state := await game_here(self.bot, interaction)) is None:
            return []
        found = []
        for shop in shops_here(state):
            for entry in shop.stock:
                info = state.items.get(entry.item)
                if info is not None and entry.quantity != 0 and current.lower() in info.name.lower():
                    price = entry.price or info.price
                    found.append(app_commands.Choice(name=clip(f"{info.name} ({price})", 100), value=info.name[:100]))
        return found[:25]

    @app_commands.command(name="sell")
    @app_commands.guild_only()
    @app_commands.describe(item="Something you carry (the list shows your pack)", quantity="How many",
                           shop="Which shop, where there are several here (else the one that buys)")
    async def sell(self, interaction: discord.Interaction, item: app_commands.Range[str, 1, 80],
                   quantity: app_commands.Range[int, 1, MAX_QUANTITY] = 1,
                   shop: app_commands.Range[str, 1, 80] | None = None) -> None:
        """Sell something you carry to the shop here, if it buys (the Game Master sees it in the story)."""
        await self._trade(interaction, item, quantity, shop, selling=True)

    @sell.autocomplete("item")
    async def pack_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await carried_choices(self.bot, interaction, current)

    @buy.autocomplete("shop")
    @sell.autocomplete("shop")
    async def shop_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """The shops where the party is."""
        if (state := await game_here(self.bot, interaction)) is None:
            return []
        return [app_commands.Choice(name=clip(s.name, 100), value=s.id[:100]) for s in shops_here(state)
                if current.lower() in s.name.lower() or current.lower() in s.id][:25]

    async def _trade(self, interaction: discord.Interaction, item: str, quantity: int, shop: str | None, *,
                     selling: bool) -> None:
        await self.bot.ack_if_busy(interaction)
        text = await self.bot.engine.trade(str(interaction.channel_id), str(interaction.user.id),
                                           interaction.user.display_name, item, quantity, selling=selling, shop=shop)
        await self.bot.announce(interaction, f"🪙 {discord.utils.escape_markdown(text)}")


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(TradeCog(bot))
