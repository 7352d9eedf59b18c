"""What players read of the world: the journal (and the notes they add to it), the map and the rules' entries
(/journal, /note, /map, /lookup)."""

from __future__ import annotations

import io
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from ..client import LorekeeperBot
from ..render import NO_PINGS, clip
from ..text import split_message


class WorldCog(commands.Cog):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot

    @app_commands.command(name="journal")
    @app_commands.guild_only()
    @app_commands.describe(section="One part of it (else all that has something)")
    async def journal(self, interaction: discord.Interaction,
                      section: Literal["npcs", "places", "items", "quests", "secrets", "notes", "story"] | None = None
                      ) -> None:
        """What the party has met, seen and learned: people, places, notable things, quests, secrets, notes."""
        text = await self.bot.engine.journal(str(interaction.channel_id), section)
        pieces = split_message(text)
        await interaction.response.send_message(pieces[0], ephemeral=True, allowed_mentions=NO_PINGS)
        for piece in pieces[1:4]:  # a long campaign's journal: its first pages, section by section with /journal
            await interaction.followup.send(piece, ephemeral=True, allowed_mentions=NO_PINGS)

    @app_commands.command(name="note")
    @app_commands.guild_only()
    @app_commands.describe(text="A true fact of this game, for the journal and the GM (e.g. The ferryman owes us a favour)")
    async def note(self, interaction: discord.Interaction, text: app_commands.Range[str, 1, 500]) -> None:
        """Add a canon note to the journal, when this server lets players (admins: /gm-admin note)."""
        said = await self.bot.engine.player_note(str(interaction.channel_id), str(interaction.guild_id),
                                                 str(interaction.user.id), text)
        await interaction.response.send_message(clip(said, 1900), allowed_mentions=NO_PINGS)

    @app_commands.command(name="lookup")
    @app_commands.describe(kind="What to look up", name="Its name (offered as you type)")
    async def lookup(self, interaction: discord.Interaction,
                     kind: Literal["spell", "item", "condition", "monster"], name: app_commands.Range[str, 1, 80]
                     ) -> None:
        """The rules' entry for a spell, weapon or armour, or condition; or a creature of this game."""
        text = await self.bot.engine.lookup(str(interaction.channel_id), kind, name)
        await interaction.response.send_message(clip(text, 1900), ephemeral=True, allowed_mentions=NO_PINGS)

    @lookup.autocomplete("name")
    async def lookup_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        kind = getattr(interaction.namespace, "kind", None) or "spell"
        found = await self.bot.engine.lookup_names(str(interaction.channel_id), kind)
        return [app_commands.Choice(name=clip(n, 100), value=n[:80]) for n in found if current.lower() in n.lower()][:25]

    @app_commands.command(name="map")
    @app_commands.guild_only()
    async def map(self, interaction: discord.Interaction) -> None:
        """The places the party knows and the ways between them, with where it is marked."""
        await interaction.response.defer(thinking=True)  # drawing takes a moment
        text, picture = await self.bot.engine.world_map(str(interaction.channel_id))
        assert picture is not None
        here = next((line[2:].split(" — ")[0] for line in text.splitlines() if line.startswith("★ ")), "")
        await interaction.followup.send(f"🗺️ The party's map{': at ' + clip(here, 200) if here else ''}.",
                                        file=discord.File(io.BytesIO(picture), filename="map.png"),
                                        allowed_mentions=NO_PINGS)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(WorldCog(bot))
