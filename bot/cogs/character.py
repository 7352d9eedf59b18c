"""/char create|import|sheet|inventory|levelup."""

from __future__ import annotations

from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from engine.characters import BACKGROUNDS, CLASSES, SPECIES
from engine.jsonio import untrusted
from engine.rules.levels import progress
from engine.rules.origins import origin

from ..client import LorekeeperBot
from ..render import inventory_embed, sheet_embed
from ..tree import InputError

MAX_IMPORT = 100_000  # bytes: a character file is a few kilobytes


@app_commands.guild_only()
class CharacterCog(commands.GroupCog, group_name="char", group_description="Your character in this channel's game"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="create")
    @app_commands.describe(name="Your character's name", char_class="A D&D 5e class",
                           level="Starting level (default and highest: the game's starting level)",
                           scores="standard (default), roll (4d6 drop lowest), or six numbers STR DEX CON INT WIS CHA "
                                  "(the standard array in any order, or a 27-point buy)",
                           species="Human (default), dwarf, elf, halfling, dragonborn, gnome, half-elf, half-orc, "
                                   "tiefling",
                           background="Where your character comes from (default: the class's usual one)",
                           expertise="Rogue or bard: skills you are proficient in to double (commas between)",
                           style="Fighter, paladin or ranger: your fighting style (default: defense; archery for "
                                 "a ranger)")
    @app_commands.rename(char_class="class")
    async def create(self, interaction: discord.Interaction, name: app_commands.Range[str, 1, 40], char_class: str,
                     level: app_commands.Range[int, 1, 20] | None = None,
                     scores: app_commands.Range[str, 1, 40] | None = None,
                     species: app_commands.Range[str, 1, 40] | None = None,
                     background: app_commands.Range[str, 1, 40] | None = None,
                     expertise: app_commands.Range[str, 1, 120] | None = None,
                     style: Literal["archery", "defense", "dueling", "great weapon fighting", "protection",
                                    "two-weapon fighting"] | None = None) -> None:
        """Make your character for this game."""
        await self.bot.ack_if_busy(interaction)
        picks = [s for s in (expertise or "").split(",") if s.strip()] or None
        ch, made = await self.bot.engine.create_character_scored(str(interaction.channel_id), str(interaction.user.id),
                                                                 name, char_class, level, scores, species, background,
                                                                 picks, style)
        how = f" Ability scores: {made}." if scores else ""
        await self.bot.announce(interaction, f"**{discord.utils.escape_markdown(ch.name)}** the {origin(ch)} joins "
                                             f"the party.{how}", embed=sheet_embed(ch))

    @create.autocomplete("char_class")
    async def class_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=c, value=c) for c in CLASSES if current.lower() in c][:25]

    @create.autocomplete("species")
    async def species_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=s.title, value=key) for key, s in SPECIES.items()
                if current.lower() in s.title or current.lower() in key][:25]

    @create.autocomplete("background")
    async def background_choices(self, interaction: discord.Interaction, current: str
                                 ) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=f"{key} ({', '.join(b.skills)})", value=key)
                for key, b in BACKGROUNDS.items() if current.lower() in key][:25]

    @app_commands.command(name="levelup")
    @app_commands.describe(hp="Hit points: the hit die's average (default) or a roll of it",
                           improve="At an Ability Score Improvement: one ability (+2) or two with a comma (+1 each)")
    async def levelup(self, interaction: discord.Interaction, hp: Literal["average", "roll"] = "average",
                      improve: app_commands.Range[str, 3, 40] | None = None) -> None:
        """Your character gains a level: hit points, a hit die, new class features."""
        await self.bot.ack_if_busy(interaction)
        ch, gained = await self.bot.engine.level_up(str(interaction.channel_id), str(interaction.user.id),
                                                    interaction.user.display_name, roll=hp == "roll", improve=improve)
        await self.bot.announce(interaction, f"⬆️ {discord.utils.escape_markdown(gained.describe())}",
                                embed=sheet_embed(ch))

    @app_commands.command(name="import")
    @app_commands.describe(file="A JSON character file (docs/character-format.md says what it holds)")
    async def import_(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        """Bring your character from a JSON file into this game."""
        if file.size > MAX_IMPORT:
            raise InputError(f"That file is {file.size:,} bytes; a character file is at most {MAX_IMPORT:,}.")
        await self.bot.ack_if_busy(interaction)
        try:
            data = untrusted(await file.read())
        except ValueError as exc:
            raise InputError(f"{file.filename} cannot be used: {exc}.") from None
        except discord.HTTPException as exc:
            raise InputError(f"Discord would not hand over {file.filename} ({exc.status}); try again.") from None
        ch = await self.bot.engine.import_character(str(interaction.channel_id), str(interaction.user.id), data)
        await self.bot.announce(interaction, f"**{discord.utils.escape_markdown(ch.name)}** the {origin(ch)} joins "
                                             f"the party.", embed=sheet_embed(ch))

    @app_commands.command(name="sheet")
    async def sheet(self, interaction: discord.Interaction) -> None:
        """Your character sheet."""
        ch = await self.bot.engine.character(str(interaction.channel_id), str(interaction.user.id))
        state = await self.bot.engine.state(str(interaction.channel_id))
        await interaction.response.send_message(embed=sheet_embed(ch, progress(ch, state.leveling)), ephemeral=True)

    @app_commands.command(name="inventory")
    async def inventory(self, interaction: discord.Interaction) -> None:
        """What you carry."""
        ch = await self.bot.engine.character(str(interaction.channel_id), str(interaction.user.id))
        await interaction.response.send_message(embed=inventory_embed(ch), ephemeral=True)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(CharacterCog(bot))
