"""/gm-admin: debug tools for server admins (hidden from other members, and checked again at run time)."""

from __future__ import annotations

import asyncio
import io
import json
from dataclasses import asdict
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from engine import GameError
from engine.errors import NeedsConfirming
from engine.content import list_adventures, load_adventure
from engine.server_settings import ServerSettings, Starters, Verbosity

from ..client import LorekeeperBot
from ..confirm import Confirm
from ..render import NO_PINGS, clip
from ..tree import InputError, respond

INLINE_LIMIT = 1900


def is_admin(interaction: discord.Interaction, admin_role: str | None) -> bool:
    member = interaction.user
    permissions = getattr(member, "guild_permissions", None)  # only a server member has them
    if permissions is None:
        return False
    if permissions.manage_guild:
        return True
    return admin_role is not None and any(r.name == admin_role for r in getattr(member, "roles", []))


def may_start_games(interaction: discord.Interaction, settings: ServerSettings, admin_role: str | None) -> bool:
    """Whether this member may start a game on this server, by its admins' choice (/gm-admin config)."""
    if settings.starters == "everyone" or is_admin(interaction, admin_role):
        return True
    return settings.starters == "role" and any(str(r.id) == settings.starter_role
                                               for r in getattr(interaction.user, "roles", []))


def as_file(text: str, filename: str) -> discord.File:
    return discord.File(io.BytesIO(text.encode("utf-8")), filename=filename)


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class AdminCog(commands.GroupCog, group_name="gm-admin", group_description="Game master tools for server admins"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot
        super().__init__()

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        # Default permissions only hide the commands; a server can override them, so check again.
        if not is_admin(interaction, self.bot.settings.admin_role):
            raise app_commands.CheckFailure("not an admin")
        return True

    async def _say(self, interaction: discord.Interaction, text: str, filename: str = "output.txt") -> None:
        if len(text) <= INLINE_LIMIT:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.response.send_message(f"Attached ({len(text)} characters).", file=as_file(text, filename),
                                                    ephemeral=True)

    async def _say_lines(self, interaction: discord.Interaction, lines: list[str], empty: str, filename: str) -> None:
        """A list, a bullet a line (Markdown in it escaped), privately; `empty` when there is nothing."""
        await self._say(interaction, "\n".join(f"- {discord.utils.escape_markdown(line)}" for line in lines) or empty,
                        filename)

    @app_commands.command(name="debug")
    @app_commands.describe(mode="on: send you (privately) the agents, tool calls and token use after each reply here")
    async def debug(self, interaction: discord.Interaction, mode: Literal["on", "off"]) -> None:
        """Send yourself the engine's workings after each reply here (by direct message: they name secrets)."""
        await self.bot.engine.set_debug(str(interaction.channel_id), mode == "on", str(interaction.user.id))
        await self._say(interaction, "Debug is on in this channel: after each reply its report (agents, tool calls, "
                                     "tokens; it names secrets not yet found) comes to you by direct message, never "
                                     "to the channel." if mode == "on" else "Debug is off in this channel.")

    @app_commands.command(name="feedback")
    async def feedback(self, interaction: discord.Interaction) -> None:
        """The agent's own report on its tools for the last turn here (with debug on)."""
        text = await self.bot.engine.last_feedback(str(interaction.channel_id))
        await self._say(interaction, text or "No tool feedback yet: turn /gm-admin debug on, then play a turn.",
                        "feedback.txt")

    @app_commands.command(name="config")
    @app_commands.describe(sources="The Sources line under replies, for every channel that has not chosen its own",
                           mechanics="How much of the rolls and changes shows under replies",
                           who_starts="Who may start games on this server",
                           role="With who_starts=role: the role whose members may start games (admins always may)",
                           leveling="How characters earn levels, in new games and the game in this channel",
                           starting_level="The level new characters start at (and the most they may bring)",
                           player_notes="Whether players may add canon notes to their game's journal (/note)")
    @app_commands.choices(mechanics=[app_commands.Choice(name="full: every roll and change", value="full"),
                                     app_commands.Choice(name="dice: rolls and attacks only", value="dice"),
                                     app_commands.Choice(name="story: none (the story alone)", value="story")])
    async def config(self, interaction: discord.Interaction, sources: Literal["on", "off", "default"] | None = None,
                     mechanics: Verbosity | None = None, who_starts: Starters | None = None,
                     role: discord.Role | None = None, leveling: Literal["xp", "milestone"] | None = None,
                     starting_level: app_commands.Range[int, 1, 20] | None = None,
                     player_notes: Literal["on", "off"] | None = None) -> None:
        """This server's settings for every game on it; with no options, shows them."""
        assert interaction.guild_id is not None  # the group is guild-only
        guild_id = str(interaction.guild_id)
        engine = self.bot.engine
        if role is not None and who_starts is None:
            who_starts = "role"  # naming a role means that role may start games
        if role is not None and who_starts != "role":
            raise InputError(f"A role only counts with who_starts=role (you chose {who_starts}).")
        if sources is None and mechanics is None and who_starts is None and leveling is None and starting_level is None \
                and player_notes is None:
            settings, said = await engine.server_settings(guild_id), "This server's settings"
        else:
            settings = await engine.configure_server(
                guild_id, str(interaction.channel_id),
                sources=None if sources is None else (sources == "on" if sources != "default" else "default"),
                verbosity=mechanics, starters=who_starts, starter_role=str(role.id) if role is not None else None,
                leveling=leveling, starting_level=starting_level,
                player_notes=None if player_notes is None else player_notes == "on")
            said = f"Saved by {discord.utils.escape_markdown(interaction.user.display_name)}"
        role_name = None
        if settings.starter_role is not None and interaction.guild is not None:
            found = interaction.guild.get_role(int(settings.starter_role))
            role_name = found.name if found is not None else "(a deleted role: only admins, until you choose again)"
        text = settings.describe(role_name, engine.deps.config.lore.sources, engine.deps.config.game)
        await self._say(interaction, f"**{said}:**\n{text}\n-# A channel's own `/gm-admin sources` still wins there.")

    @app_commands.command(name="award")
    @app_commands.describe(xp="Experience points, split evenly among those named (or the party)",
                           milestone="yes: a level by milestone (in games that level by milestone)",
                           to="Characters' names, separated by commas (none: the whole party)",
                           reason="What it is for; the story and the GM hear it")
    async def award(self, interaction: discord.Interaction, xp: app_commands.Range[int, 1, 100_000] | None = None,
                    milestone: bool = False, to: app_commands.Range[str, 1, 300] | None = None,
                    reason: app_commands.Range[str, 1, 120] = "") -> None:
        """Award XP, or grant a milestone, to characters in this channel's game, as the GM's tools do."""
        if (xp is None) == (not milestone):
            raise InputError("Give either xp (a number) or milestone: yes, not both.")
        names = [n.strip() for n in (to or "").split(",") if n.strip()]
        told = await self.bot.engine.award(str(interaction.channel_id), interaction.user.display_name,
                                           xp=xp or 0, milestone=milestone, to=names, reason=reason)
        await interaction.response.send_message(f"🏅 {clip(told, INLINE_LIMIT)}", allowed_mentions=NO_PINGS)

    world = app_commands.Group(name="world", description="What play added to this channel's world")

    @world.command(name="list")
    async def world_list(self, interaction: discord.Interaction) -> None:
        """The people, places and things the GM made in play here, a line each."""
        await self._say_lines(interaction, await self.bot.engine.world_additions(str(interaction.channel_id)),
                              "Nothing has been made in play in this game yet.", "world.txt")

    @world.command(name="edit")
    @app_commands.describe(kind="What it is", ref="Its id or name (from /gm-admin world list)",
                           field="npc: name, role, persona, attitude, location; location: name, description; "
                                 "item: name, description, price",
                           value="The new value")
    async def world_edit(self, interaction: discord.Interaction, kind: Literal["npc", "location", "item"],
                         ref: app_commands.Range[str, 1, 80], field: app_commands.Range[str, 1, 20],
                         value: app_commands.Range[str, 1, 800]) -> None:
        """Correct one field of something the GM made in play; the GM reads the correction."""
        said = await self.bot.engine.world_change(str(interaction.channel_id), interaction.user.display_name, "edit",
                                                  kind, ref, field, value)
        await self._say(interaction, said)

    @world.command(name="remove")
    @app_commands.describe(kind="What it is", ref="Its id or name (from /gm-admin world list)")
    async def world_remove(self, interaction: discord.Interaction, kind: Literal["npc", "location", "item"],
                           ref: app_commands.Range[str, 1, 80]) -> None:
        """Take something the GM made in play out of the world (and every way or mention that led to it)."""
        said = await self.bot.engine.world_change(str(interaction.channel_id), interaction.user.display_name,
                                                  "remove", kind, ref)
        await self._say(interaction, said)

    @world.command(name="export")
    @app_commands.describe(adventure_id="The new adventure's id (lowercase, digits, hyphens)", title="Its title")
    async def world_export(self, interaction: discord.Interaction,
                           adventure_id: app_commands.Range[str, 1, 60] | None = None,
                           title: app_commands.Range[str, 1, 100] | None = None) -> None:
        """This game's world as played, as an adventure file to check, edit and play again."""
        text = await self.bot.engine.world_export(str(interaction.channel_id), adventure_id, title)
        await interaction.response.send_message(
            "The world as played, as an adventure file: put it in `corpus/adventures/<id>/adventure.yaml`, then "
            "`lorekeeper adventure check` it.", file=as_file(text, "adventure.yaml"), ephemeral=True)

    note = app_commands.Group(name="note", description="Canon notes: true facts the GM reads when they bear on the scene")

    @note.command(name="add")
    @app_commands.describe(text="The fact, as true as the adventure (it wins over what the GM remembers)",
                           gm_only="yes: for the GM alone, never shown to players", about="A person's or place's "
                           "name or id: read only when they are in the scene (none: always)")
    async def note_add(self, interaction: discord.Interaction, text: app_commands.Range[str, 1, 500],
                       gm_only: bool = False, about: app_commands.Range[str, 1, 80] | None = None) -> None:
        """Add a canon note to this channel's game."""
        said = await self.bot.engine.note(str(interaction.channel_id), interaction.user.display_name, "add", text,
                                          gm_only=gm_only, about=about)
        await self._say(interaction, said)

    @note.command(name="edit")
    @app_commands.describe(note_id="The note's id (n1, n2, … from /gm-admin note list)", text="What it says now")
    async def note_edit(self, interaction: discord.Interaction, note_id: app_commands.Range[str, 2, 8],
                        text: app_commands.Range[str, 1, 500]) -> None:
        """Correct a canon note."""
        said = await self.bot.engine.note(str(interaction.channel_id), interaction.user.display_name, "edit", text,
                                          note_id=note_id)
        await self._say(interaction, said)

    @note.command(name="remove")
    @app_commands.describe(note_id="The note's id (n1, n2, … from /gm-admin note list)")
    async def note_remove(self, interaction: discord.Interaction, note_id: app_commands.Range[str, 2, 8]) -> None:
        """Take a canon note back."""
        said = await self.bot.engine.note(str(interaction.channel_id), interaction.user.display_name, "remove",
                                          note_id=note_id)
        await self._say(interaction, said)

    @note.command(name="list")
    async def note_list(self, interaction: discord.Interaction) -> None:
        """Every canon note of this game, GM-only ones included."""
        await self._say_lines(interaction, await self.bot.engine.notes(str(interaction.channel_id)),
                              "No notes yet: /gm-admin note add.", "notes.txt")

    @app_commands.command(name="sources")
    @app_commands.describe(mode="on: a line under replies naming the lore they drew on")
    async def sources(self, interaction: discord.Interaction, mode: Literal["on", "off"]) -> None:
        """Show or hide the "Sources" line under replies in this channel."""
        await self.bot.engine.set_sources(str(interaction.channel_id), mode == "on")
        await self._say(interaction, f"The Sources line is {mode} in this channel.")

    @app_commands.command(name="state")
    async def state(self, interaction: discord.Interaction) -> None:
        """This channel's game state, as JSON."""
        state = await self.bot.engine.state(str(interaction.channel_id))
        await self._say(interaction, "```json\n" + state.model_dump_json(indent=1) + "\n```", "state.json")

    @app_commands.command(name="prompt")
    async def prompt(self, interaction: discord.Interaction) -> None:
        """The last prompt sent to the model for this channel."""
        request = self.bot.engine.last_request.get(str(interaction.channel_id))
        if request is None:
            await self._say(interaction, "No prompt has been sent for this channel since the bot started.")
            return
        parts = [f"# agent: {request.agent.value}, model: {request.model or '(provider default)'}",
                 "## system (cached part)", request.system, "## system (this turn)", request.context]
        parts += [f"## {m.role}\n{m.content}" for m in request.messages]
        await interaction.response.send_message("The last prompt is attached.", file=as_file("\n\n".join(parts), "prompt.md"),
                                                ephemeral=True)

    @app_commands.command(name="suggestions")
    async def suggestions(self, interaction: discord.Interaction) -> None:
        """The pre-flight tool suggestions of the last turn here."""
        hints = self.bot.engine.last_suggestions.get(str(interaction.channel_id))
        if hints is None:
            text = "No turn has been played in this channel since the bot started."
        elif not hints:
            text = "The last turn got no suggestions (or suggestions are turned off in the config)."
        else:
            text = "\n".join(h.line() for h in hints)
        await self._say(interaction, text)

    @app_commands.command(name="telemetry")
    async def telemetry(self, interaction: discord.Interaction) -> None:
        """Tools suggested and called, the verifier, lore look-ups and model usage of this channel's game."""
        channel_id = str(interaction.channel_id)
        data = await self.bot.engine.telemetry(channel_id)  # also says "no game" plainly when there is none
        table = await self.bot.engine.analysis(channel_id)
        lore = data["lore"]
        embed = discord.Embed(title="Telemetry", description=f"```\n{table[:3900]}\n```")
        embed.add_field(name="Lore", value=f"{lore['calls']} look-ups, {lore['denied']} refused, {lore['tokens_returned']} "
                                           f"tokens, cache hits {lore['cache_hit_ratio'] if lore['cache_hit_ratio'] is not None else 'n/a'}, "
                                           f"{lore['turns_citing']} turns citing lore")
        embed.add_field(name="Model", value=f"{data['model_calls']} calls, p50 {data['latency_ms_p50']} ms, "
                                            f"{data['cache_read_tokens']} cached tokens")
        if interaction.guild_id is not None:
            usage = await self.bot.engine.usage(str(interaction.guild_id))
            embed.add_field(name="This server", value=usage.line(), inline=False)
            data["server_today"] = asdict(usage)
        await interaction.response.send_message(embed=embed, file=as_file(json.dumps(data, indent=1), "telemetry.json"),
                                                ephemeral=True)

    @app_commands.command(name="undo")
    @app_commands.describe(turns="How many of the last turns to take back (1 to 20)")
    async def undo(self, interaction: discord.Interaction, turns: app_commands.Range[int, 1, 20] = 1) -> None:
        """Take back the last turns of this channel's game: the state as it was before them (the log keeps them)."""
        await self.bot.ack_if_busy(interaction)
        await self._undo(interaction, turns, seen=0)

    async def _undo(self, interaction: discord.Interaction, turns: int, *, seen: int) -> None:
        """Undo, or ask first when it would also take back what players did themselves since (a deal, a rest)."""
        channel_id = str(interaction.channel_id)
        try:
            undone = await self.bot.engine.undo(channel_id, turns, seen=seen)
        except NeedsConfirming as exc:
            shown = exc.seen

            async def confirm(pressed: discord.Interaction) -> None:
                await self._undo(pressed, turns, seen=shown)

            async def cancel(pressed: discord.Interaction) -> None:
                await pressed.response.edit_message(content="Nothing was undone.", view=None)

            question = clip(f"{exc.message}\n\nUndo all of it?", 2000)
            view = Confirm(interaction.user, "undo", confirm, cancel, confirm="Undo all of it", cancel="Keep it",
                           danger=True)
            if interaction.type is discord.InteractionType.component:  # asked again: more was done meanwhile
                await interaction.response.edit_message(content=question, view=view)
            else:
                await respond(interaction, question, view=view, ephemeral=True, allowed_mentions=NO_PINGS)
            return
        state = undone.state
        said = (f"↩️ {undone.turns} turn{'s' if undone.turns > 1 else ''} undone by "
                f"{discord.utils.escape_markdown(interaction.user.display_name)}: back at turn {state.turn}, at "
                f"{state.location().name}.")
        if interaction.type is discord.InteractionType.component:  # confirmed with the button
            await interaction.response.edit_message(content="Done.", view=None)
            assert interaction.channel is not None
            await interaction.channel.send(said, allowed_mentions=NO_PINGS)
        else:
            await self.bot.announce(interaction, said)

    @app_commands.command(name="reset")
    async def reset(self, interaction: discord.Interaction) -> None:
        """End this channel's game at once (its log is kept); /game start begins a new one."""
        await self.bot.ack_if_busy(interaction)
        await self.bot.engine.end_game(str(interaction.channel_id))
        await respond(interaction, "This channel's game has been reset. Start a new one with /game start.", ephemeral=True)

    @app_commands.command(name="reload-corpus")
    async def reload_corpus(self, interaction: discord.Interaction) -> None:
        """Re-read every adventure file and re-index the lore (only changed files), reporting any problem."""
        await interaction.response.defer(ephemeral=True, thinking=True)  # embedding new lore takes a while
        lines = []
        for adventure_id, path in list_adventures(self.bot.settings.corpus).items():
            try:
                adventure = load_adventure(path)
                lines.append(f"✅ {adventure_id}: {adventure.title}")
            except GameError as exc:
                lines.append(f"❌ {adventure_id}: {exc.message}")
        if not lines:
            lines.append(f"No adventures under {self.bot.settings.corpus}.")
        lore = self.bot.engine.deps.lore
        if lore is not None:
            try:
                report = await asyncio.to_thread(lore.ingest, self.bot.settings.corpus)
                lines += ["", "Lore: " + report.summary()]
            except GameError as exc:
                lines += ["", f"❌ Lore: {exc.message}"]
        text = "\n".join(lines)
        if len(text) <= INLINE_LIMIT:
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.followup.send(f"Attached ({len(text)} characters).", file=as_file(text, "corpus.txt"),
                                            ephemeral=True)

    @app_commands.command(name="sync")
    @app_commands.describe(scope="guild: this server now; global: every server (can take a while to show)")
    async def sync(self, interaction: discord.Interaction, scope: Literal["guild", "global"] = "guild") -> None:
        """Sync the slash commands (the bot's owner only)."""
        if not await self.bot.is_owner(interaction.user):
            raise app_commands.CheckFailure("owner only")
        await interaction.response.defer(ephemeral=True, thinking=True)
        synced = await sync_commands(self.bot, interaction.guild if scope == "guild" else None)
        await interaction.followup.send(f"Synced {len(synced)} commands ({scope}).", ephemeral=True)

    @commands.command(name="sync")
    @commands.is_owner()
    async def sync_text(self, ctx: commands.Context, scope: Literal["guild", "global"] = "guild") -> None:
        """`@Lorekeeper sync [guild|global]`: the first sync, before any slash command exists."""
        synced = await sync_commands(self.bot, ctx.guild if scope == "guild" else None)
        await ctx.reply(f"Synced {len(synced)} commands ({scope}).", mention_author=False)


async def sync_commands(bot: LorekeeperBot, guild: discord.abc.Snowflake | None) -> list[app_commands.AppCommand]:
    if guild is not None:
        bot.tree.copy_global_to(guild=guild)
    return await bot.tree.sync(guild=guild)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(AdminCog(bot))
