"""/game start|end|status|recap."""

from __future__ import annotations

import asyncio

import discord
from discord import app_commands
from discord.ext import commands

from engine import GameError
from engine.content import adventure_titles

from ..client import LorekeeperBot
from ..confirm import Confirm
from ..render import EMBED_BUDGET, NO_PINGS, clip, combat_embed, status_embed
from ..text import split_message
from ..tree import InputError
from .admin import is_admin, may_start_games


@app_commands.guild_only()  # on the group: on a subcommand discord.py ignores it
class GameCog(commands.GroupCog, group_name="game", group_description="Start, end and follow a game in this channel"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="start")
    @app_commands.describe(adventure="Which adventure (default: the starter)", thread="Play in a new thread of this channel",
                           premise="A new world from a sentence, e.g. a haunted mining town in the mountains")
    async def start(self, interaction: discord.Interaction, adventure: str | None = None, thread: bool = False,
                    premise: app_commands.Range[str, 3, 300] | None = None) -> None:
        """Start a new game here, or in a new thread; from a written adventure, or a new world from a premise."""
        channel = interaction.channel
        if thread and not isinstance(channel, discord.TextChannel):
            await interaction.response.send_message("Threads can be started only from a text channel.", ephemeral=True)
            return
        # Refusals (not allowed here, a game already here, no such adventure) before anything public or any thread.
        assert interaction.guild_id is not None  # the group is guild-only
        settings = await self.bot.engine.server_settings(str(interaction.guild_id))
        if not may_start_games(interaction, settings, self.bot.settings.admin_role):
            who = "admins" if settings.starters == "admins" else "admins and members with a chosen role"
            raise InputError(f"On this server, only {who} start games (/gm-admin config). Ask one of them, or "
                             "join a game that is running: /char create, then /party join.")
        if premise and adventure:
            raise InputError("Give an adventure or a premise, not both.")
        await self.bot.engine.check_start(None if thread else str(interaction.channel_id), adventure)
        await interaction.response.defer(thinking=True)
        made = ""
        if premise:  # the world-builder takes a while (up to two minutes with the local model): the reply is deferred
            world = await self.bot.engine.make_world(premise)
            adventure = world.id
            made = (f"\n\n-# A new world from your premise, saved as `{world.id}` ({len(world.locations)} places, "
                    f"{len(world.npcs)} people): start it again with /game start adventure:{world.id}.")
        if thread:
            assert isinstance(channel, discord.TextChannel)
            channel = await channel.create_thread(name="Lorekeeper game", type=discord.ChannelType.public_thread,
                                                  auto_archive_duration=1440)
        state, intro = await self.bot.engine.start_game(str(channel.id), str(interaction.guild_id), adventure,
                                                        started_by=str(interaction.user.id))
        opening = f"## {state.title}\n{intro}{made}\n\n-# Make your character with /char create, then say what you do."
        pieces = split_message(opening)
        if channel is interaction.channel:
            await interaction.followup.send(pieces[0], allowed_mentions=NO_PINGS)
            pieces = pieces[1:]
        else:
            await interaction.followup.send(f"The game begins in {channel.mention}.")
        for piece in pieces:
            await channel.send(piece, allowed_mentions=NO_PINGS)

    @start.autocomplete("adventure")
    async def adventure_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Adventures by title (the id is what is sent); typing matches either."""
        titles = await asyncio.to_thread(adventure_titles, self.bot.settings.corpus)  # a new file is parsed once
        wanted = current.lower()
        return [app_commands.Choice(name=clip(f"{title} ({a})", 100), value=a) for a, title in titles.items()
                if wanted in a.lower() or wanted in title.lower()][:25]

    @app_commands.command(name="end")
    async def end(self, interaction: discord.Interaction) -> None:
        """End the game in this channel (its log is kept): for whoever started it, and server admins."""
        session = await self.bot.engine.session(str(interaction.channel_id))
        state, member = session.state, str(interaction.user.id)
        # Games from before the starter was recorded: any of their players may end them, as before.
        allowed = member == state.started_by if state.started_by is not None else member in state.characters
        if not allowed and not is_admin(interaction, self.bot.settings.admin_role):
            raise app_commands.CheckFailure("only the game's starter or an admin ends a game")
        game = session.id  # this game, not whichever is here when the button is pressed

        async def confirm(pressed: discord.Interaction) -> None:
            try:
                await self.bot.engine.end_game(str(pressed.channel_id), game=game)
            except GameError as exc:  # ended meanwhile, by someone else (and maybe another game begun)
                await pressed.response.edit_message(content=exc.message, view=None)
                return
            await pressed.response.edit_message(content="Done.", view=None)
            assert pressed.channel is not None
            who = discord.utils.escape_markdown(pressed.user.display_name)
            await pressed.channel.send(f"The game is over (ended by {who}). Start another with /game start.",
                                       allowed_mentions=NO_PINGS)

        async def cancel(pressed: discord.Interaction) -> None:
            await pressed.response.edit_message(content="The game goes on.", view=None)

        await interaction.response.send_message(
            f"End **{discord.utils.escape_markdown(state.title)}** for everyone here? Its log is kept, but the game "
            "cannot be resumed.", ephemeral=True,
            view=Confirm(interaction.user, "game-end", confirm, cancel, confirm="End the game", cancel="Keep playing",
                         danger=True))

    @app_commands.command(name="status")
    async def status(self, interaction: discord.Interaction) -> None:
        """Where the party is, who is in it, and any combat."""
        state = await self.bot.engine.state(str(interaction.channel_id))
        status = status_embed(state)
        embeds = [status] + ([combat_embed(state, budget=EMBED_BUDGET - len(status) - 50)] if state.combat.active else [])
        await interaction.response.send_message(embeds=embeds)

    @app_commands.command(name="recap")
    async def recap(self, interaction: discord.Interaction) -> None:
        """The story so far."""
        text = await self.bot.engine.recap(str(interaction.channel_id))
        pieces = split_message(text)
        await interaction.response.send_message(pieces[0], allowed_mentions=NO_PINGS)
        for piece in pieces[1:]:
            await interaction.followup.send(piece, allowed_mentions=NO_PINGS)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(GameCog(bot))
