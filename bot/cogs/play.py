"""Playing: /act, /roll, /check, /save, /attack, /quests, /rest, and plain messages (or replies to an NPC) from party members."""

from __future__ import annotations

import contextlib
import time
from typing import Awaitable, Callable, Literal

import discord
from discord import app_commands
from discord.ext import commands

from engine import GameError, NoGameRunning, TurnFailed
from engine.dice import Roll
from engine.hostility import ConfirmAttack
from engine.limits import BudgetSpent, RateLimited
from engine.rules import SKILLS, spells, title
from engine.rules.attacks import UNARMED, profile
from engine.rules.equipment import carried_weapons
from engine.basics import ABILITIES
from engine.state import GameState
from engine.tools.combat import participant_hp

from ..client import LorekeeperBot
from ..confirm import Confirm
from .admin import is_admin
from ..render import NO_PINGS, clip, quests_embed
from ..tree import InputError, respond



async def game_here(bot: LorekeeperBot, interaction: discord.Interaction) -> GameState | None:
    """The game in the channel where someone is typing, for an autocomplete (none: there is nothing to offer)."""
    try:
        return await bot.engine.state(str(interaction.channel_id))
    except GameError:
        return None


async def carried_choices(bot: LorekeeperBot, interaction: discord.Interaction, current: str
                          ) -> list[app_commands.Choice[str]]:
    """What the one typing carries, with how many (for /use and /sell)."""
    try:
        ch = await bot.engine.character(str(interaction.channel_id), str(interaction.user.id))
    except GameError:
        return []
    return [app_commands.Choice(name=clip(f"{i.name} ×{i.quantity}", 100), value=i.name[:100])
            for i in ch.inventory if current.lower() in i.name.lower()][:25]


class DiceTransformer(app_commands.Transformer):
    """A dice expression, rolled as it is parsed; a bad one is a friendly error, not a stack trace."""

    async def transform(self, interaction: discord.Interaction, value: str) -> Roll:
        bot: LorekeeperBot = interaction.client  # type: ignore[assignment]
        try:
            return bot.engine.roll(value)
        except GameError as exc:
            raise InputError(exc.message) from None


HINT_NO_CHARACTER = ("-# You're not playing in this game yet, so that was table talk. To join: `/char create` "
                     "(a name and a class), then `/party join`. `/help` says more.")
HINT_NOT_IN_PARTY = "-# You have a character here but aren't in the party, so that was table talk: `/party join` to play."
HELP = (
    "**Playing**\n"
    "• `/game start` begins a game in a channel (or a new thread); `/game status`, `/game recap`, `/game end`.\n"
    "• `/char create name class` makes your character, `/party join` brings them into the game; "
    "`/char sheet`, `/char inventory`.\n"
    "• Party members just type what they do. `@Name …` speaks to someone who is here, and replying to an "
    "NPC's message speaks to them again.\n"
    "• `/talk` picks someone here to speak to; `/use` picks something from your pack.\n"
    "• `/shop` shows what is sold where you are; `/buy item [quantity]` and `/sell item` deal at its prices.\n"
    "• `/act` does the same as typing; `/roll 1d20+3 [reason]` rolls dice the GM sees; `/check`, `/save` and "
    "`/attack weapon [target]` roll from your sheet; `/quests`; `/rest short|long`; `/char levelup`; "
    "`/retry` asks the GM again for your last turn (the dice fall the same).\n"
    "• `/cast spell [target] [level]` casts one of your spells (the engine spends the slot and rolls; the GM sees "
    "it). `/attack unarmed` strikes with fists; its `sneak`, `smite`, `offhand`, `reaction` options add "
    "Sneak Attack, Divine Smite, the off hand's attack, an opportunity attack. `/feature name` uses Rage, Second Wind, "
    "Ki, …; at 0 HP, `/deathsave` on your turn.\n"
    "• `/journal` shows what the party has met, seen and learned (`/note text` adds a canon note to it, if the "
    "server lets players); `/map` the places you know; "
    "`/lookup spell|item|condition|monster name` the rules' entry; `/help` shows this.\n"
    "**Admins** (Manage Server): `/gm-admin` — `config` (this server: sources, mechanics, who starts games, "
    "levelling by XP or milestone, starting level, whether players add notes), `award` (XP or a milestone), `world` (what the GM made in play: "
    "list, edit, remove, export), `note` (canon notes), `undo`, `reset`, `debug`, `sources`, `state`, `prompt`, "
    "`suggestions`, `feedback`, `telemetry`, `reload-corpus`, `sync`.")


class PlayCog(commands.Cog):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot
        self.hinted: set[tuple[int, str]] = set()  # (game, member) already told how to join: once is enough
        self.told_limit: dict[str, float] = {}  # player or channel → until when a limit's reason was said

    @app_commands.command(name="help")
    async def help(self, interaction: discord.Interaction) -> None:
        """How to play: commands, talking to NPCs, joining a game."""
        await interaction.response.send_message(HELP, ephemeral=True)

    @app_commands.command(name="act")
    @app_commands.guild_only()
    @app_commands.describe(action="What your character does or says; @Name speaks to someone here",
                           debug="Admins: show the engine's workings (and the GM's tool report) for this action only")
    async def act(self, interaction: discord.Interaction, action: app_commands.Range[str, 1, 2000],
                  debug: bool | None = None) -> None:
        """Do something in the game."""
        if debug is not None and not is_admin(interaction, self.bot.settings.admin_role):
            raise app_commands.CheckFailure("debug is for admins")
        await self._act(interaction, action, debug)

    @app_commands.command(name="talk")
    @app_commands.guild_only()
    @app_commands.describe(npc="Someone who is here (the list shows who)", words="What you say to them")
    async def talk(self, interaction: discord.Interaction, npc: str, words: app_commands.Range[str, 1, 1900]) -> None:
        """Speak to someone who is here (the same as typing @Name and your words)."""
        state = await self.bot.engine.state(str(interaction.channel_id))
        found = state.find_npc(npc)
        if found is None:
            here = ", ".join(n.name for n in state.present_npcs()) or "no one"
            raise InputError(f"No one called {npc} is in this game. Here: {here}.")
        await self._act(interaction, f"@{found.name} {words}")

    @talk.autocomplete("npc")
    async def npc_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Who is here and can answer, for the one typing."""
        if (state := await game_here(self.bot, interaction)) is None:
            return []
        return [app_commands.Choice(name=clip(n.name, 100), value=n.id[:100]) for n in state.present_npcs()
                if n.hp > 0 and current.lower() in n.name.lower()][:25]

    @app_commands.command(name="use")
    @app_commands.guild_only()
    @app_commands.describe(item="Something you carry (the list shows your pack)",
                           how="On whom or how, if it matters (e.g. on Bram, or to unlock the gate)")
    async def use(self, interaction: discord.Interaction, item: str,
                  how: app_commands.Range[str, 1, 300] | None = None) -> None:
        """Use something you carry: a potion, a key, a rope; the Game Master plays it out."""
        ch = await self.bot.engine.character(str(interaction.channel_id), str(interaction.user.id))
        wanted = " ".join(item.split()).lower()
        found = next((i for i in ch.inventory if i.name.lower() == wanted), None)
        if found is None:
            raise InputError(f"{ch.name} carries no {item}. `/char inventory` shows what you have.")
        await self._act(interaction, f"I use my {found.name}{' ' + how.strip() if how else ''}.")

    @use.autocomplete("item")
    async def item_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await carried_choices(self.bot, interaction, current)

    async def _act(self, interaction: discord.Interaction, action: str, debug: bool | None = None) -> None:
        """Play an action; refusals (no game, no character, someone not here, the turn limit) come before the
        defer, so they can be private."""
        await self.bot.engine.check_action(str(interaction.channel_id), str(interaction.user.id), action)
        await interaction.response.defer(thinking=True)
        assert interaction.channel is not None
        try:
            await self.bot.play(interaction.channel, interaction.user, action, followup=interaction.followup,
                                debug=debug)
        except TurnFailed:
            raise  # the table's: the Game Master's apology takes the place of "thinking…" for everyone
        except GameError as exc:  # refused after all (a race past the checks: the turn limit, another's write)
            await self._refused_after_defer(interaction, exc.message)

    @staticmethod
    async def _refused_after_defer(interaction: discord.Interaction, text: str) -> None:
        """The public "thinking…" goes, and the reason is said to the player alone, as a refusal before the defer
        would have been (it never replaces the placeholder, which everyone sees)."""
        with contextlib.suppress(discord.HTTPException):
            await interaction.delete_original_response()
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)

    @app_commands.command(name="retry")
    @app_commands.guild_only()
    async def retry(self, interaction: discord.Interaction) -> None:
        """Ask the Game Master again for your last turn (while nothing newer happened; the dice fall the same)."""
        admin = is_admin(interaction, self.bot.settings.admin_role)
        await self.bot.engine.check_retry(str(interaction.channel_id), str(interaction.user.id), admin=admin)
        await interaction.response.defer(thinking=True)
        assert interaction.channel is not None
        await self.bot.retry(interaction.channel, interaction.user, followup=interaction.followup, admin=admin)

    @app_commands.command(name="deathsave")
    @app_commands.guild_only()
    async def deathsave(self, interaction: discord.Interaction) -> None:
        """Your dying character's death saving throw (a d20: 10 or more succeeds; three of either decide)."""
        text = await self.bot.engine.death_save(str(interaction.channel_id), str(interaction.user.id),
                                                interaction.user.display_name)
        await interaction.response.send_message(f"💀 {clip(text, 1900)}", allowed_mentions=NO_PINGS)

    @app_commands.command(name="roll")
    @app_commands.describe(dice="For example 1d20+3, 2d6, 4d6kh3 or 1d20+2 adv",
                           reason="What it is for (e.g. perception); the Game Master sees it in the story")
    async def roll(self, interaction: discord.Interaction, dice: app_commands.Transform[Roll, DiceTransformer],
                   reason: app_commands.Range[str, 1, 80] | None = None) -> None:
        """Roll dice (in a game, the Game Master sees the result)."""
        player = discord.utils.escape_markdown(interaction.user.display_name)
        character = await self.bot.engine.record_roll(str(interaction.channel_id), str(interaction.user.id),
                                                      interaction.user.display_name, dice, reason)
        who = f"{discord.utils.escape_markdown(character)} ({player})" if character else player
        why = f" for {discord.utils.escape_markdown(reason)}" if reason else ""
        await interaction.response.send_message(f"🎲 {who} rolls {dice.describe()}{why}", allowed_mentions=NO_PINGS)

    @app_commands.command(name="check")
    @app_commands.guild_only()
    @app_commands.describe(skill="A skill (stealth, perception, …) or an ability (strength, dex, …)",
                           advantage="Roll twice and keep the higher (advantage) or the lower (disadvantage)")
    async def check(self, interaction: discord.Interaction, skill: app_commands.Range[str, 1, 40],
                    advantage: Literal["advantage", "disadvantage"] | None = None) -> None:
        """Roll a check from your character's sheet (the Game Master sees the result)."""
        await self._rolled(interaction, skill, advantage, save=False)

    @check.autocomplete("skill")
    async def skill_autocomplete(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=title(name), value=name) for name in [*SKILLS, *ABILITIES]
                if current.lower() in name][:25]

    @app_commands.command(name="save")
    @app_commands.guild_only()
    @app_commands.describe(ability="The ability the saving throw uses",
                           advantage="Roll twice and keep the higher (advantage) or the lower (disadvantage)")
    async def save(self, interaction: discord.Interaction,
                   ability: Literal["strength", "dexterity", "constitution", "intelligence", "wisdom", "charisma"],
                   advantage: Literal["advantage", "disadvantage"] | None = None) -> None:
        """Roll a saving throw from your character's sheet (the Game Master sees the result)."""
        await self._rolled(interaction, ability, advantage, save=True)

    async def _rolled(self, interaction: discord.Interaction, what: str, mode: str | None, *, save: bool) -> None:
        name, result = await self.bot.engine.player_check(str(interaction.channel_id), str(interaction.user.id),
                                                          interaction.user.display_name, what, mode, save=save)
        mark = " (proficient)" if result.proficient else ""
        await interaction.response.send_message(
            f"🎲 {discord.utils.escape_markdown(name)}: {result.label}{mark} {result.roll.describe()}",
            allowed_mentions=NO_PINGS)

    @app_commands.command(name="cast")
    @app_commands.guild_only()
    @app_commands.describe(spell="A cantrip or a spell you know or have prepared (the list shows yours)",
                           target="Who it is cast at (several: commas between); a healing spell with none heals you",
                           level="The spell slot to spend (default: the lowest you have left that fits)",
                           advantage="On your spell attack roll (for a spell with a saving throw: on the targets' saves)")
    async def cast(self, interaction: discord.Interaction, spell: app_commands.Range[str, 1, 60],
                   target: app_commands.Range[str, 1, 300] | None = None,
                   level: app_commands.Range[int, 1, 9] | None = None,
                   advantage: Literal["advantage", "disadvantage"] | None = None) -> None:
        """Cast a spell: the engine spends the slot and rolls (the Game Master sees it in the story)."""
        cid, uid, name = str(interaction.channel_id), str(interaction.user.id), interaction.user.display_name
        await self._strike(interaction, "Cast it", "✨", lambda confirmed: self.bot.engine.cast(
            cid, uid, name, spell, target, level, advantage, confirmed=confirmed))

    @cast.autocomplete("spell")
    async def spell_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """The caster's cantrips and spells, with their levels."""
        try:
            ch = await self.bot.engine.character(str(interaction.channel_id), str(interaction.user.id))
        except GameError:
            return []
        names = spells.cantrips_of(ch) + spells.spells_of(ch)
        def level(name: str) -> str:
            n = spells.find_spell(name).level
            return f"{spells.ordinal(n)} level" if n else "cantrip"
        return [app_commands.Choice(name=f"{n} ({level(n)})", value=n) for n in names if current.lower() in n.lower()][:25]

    @cast.autocomplete("target")
    async def target_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Who can be targeted here: combatants still standing, the party, and the people here; after a comma, one
        more."""
        if (state := await game_here(self.bot, interaction)) is None:
            return []
        before, _, typing = current.rpartition(",")
        chosen = {n.strip().lower() for n in before.split(",") if n.strip()}
        names = [p.name for p in state.combat.order if p.hp != 0] if state.combat.active else []
        names += [c.name for pid, c in state.characters.items() if pid in state.party.player_ids]
        names += [n.name for n in state.present_npcs()]
        lead = f"{before.strip()}, " if before.strip() else ""
        offered = list(dict.fromkeys(n for n in names if n.lower() not in chosen and typing.strip().lower() in n.lower()))
        return [app_commands.Choice(name=clip(lead + n, 100), value=(lead + n)[:100]) for n in offered][:25]

    @app_commands.command(name="attack")
    @app_commands.guild_only()
    @app_commands.describe(weapon="A weapon you carry (the list shows yours, with to-hit and damage)",
                           target="Whom you attack: an enemy in the fight or someone here (none: just the rolls)",
                           advantage="Roll twice and keep the higher (advantage) or the lower (disadvantage)",
                           sneak="A rogue's Sneak Attack (with advantage, or an ally beside the target)",
                           smite="A paladin's Divine Smite: the spell slot level to spend on a hit",
                           offhand="Two-weapon fighting: the light weapon in your off hand, as your bonus action",
                           reaction="An opportunity attack, on someone else's turn (your reaction)")
    async def attack(self, interaction: discord.Interaction, weapon: app_commands.Range[str, 1, 40],
                     target: app_commands.Range[str, 1, 60] | None = None,
                     advantage: Literal["advantage", "disadvantage"] | None = None, sneak: bool = False,
                     smite: app_commands.Range[int, 1, 5] | None = None, offhand: bool = False,
                     reaction: bool = False) -> None:
        """Attack with a weapon from your sheet; a hit's damage is dealt (the Game Master sees the result)."""
        cid, uid, name = str(interaction.channel_id), str(interaction.user.id), interaction.user.display_name
        await self._strike(interaction, "Attack", "⚔️", lambda confirmed: self.bot.engine.player_attack(
            cid, uid, name, weapon, target, advantage, confirmed=confirmed, sneak=sneak, smite=smite, offhand=offhand,
            reaction=reaction))

    async def _strike(self, interaction: discord.Interaction, yes: str, mark: str,
                      act: Callable[[bool], Awaitable[str]]) -> None:
        """An attack or spell, told to the table; one at someone who is no enemy in a fight gets the engine's
        question instead, privately, and happens only when its player says yes (`act(True)`)."""
        await self.bot.ack_if_busy(interaction)
        try:
            text = await act(False)
        except ConfirmAttack as exc:
            asked = exc.message
        else:
            await self.bot.announce(interaction, clip(f"{mark} {discord.utils.escape_markdown(text)}", 2000))
            return

        async def confirm(pressed: discord.Interaction) -> None:
            await pressed.response.edit_message(view=None)  # answered at once: the engine may wait for the channel
            try:
                text = await act(True)
            except GameError as exc:  # the moment passed (another's turn now, the target gone): said privately
                await pressed.edit_original_response(content=exc.message)
                return
            await pressed.edit_original_response(content="Done.")
            assert pressed.channel is not None
            await pressed.channel.send(clip(f"{mark} {discord.utils.escape_markdown(text)}", 2000),
                                       allowed_mentions=NO_PINGS)

        async def cancel(pressed: discord.Interaction) -> None:
            await pressed.response.edit_message(content="Cancelled: nothing happened.", view=None)

        view = Confirm(interaction.user, "strike", confirm, cancel, confirm=yes, cancel="Cancel", danger=True)
        await respond(interaction, discord.utils.escape_markdown(asked), ephemeral=True, allowed_mentions=NO_PINGS,
                      view=view)

    @attack.autocomplete("weapon")
    async def weapon_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """The weapons the one typing carries, with their numbers."""
        try:
            ch = await self.bot.engine.character(str(interaction.channel_id), str(interaction.user.id))
        except GameError:
            return []
        return [app_commands.Choice(name=clip(profile(ch, w).describe(), 100), value=w.name)
                for w in [*carried_weapons(ch), UNARMED] if current.lower() in w.name][:25]

    @attack.autocomplete("target")
    async def attack_targets(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Who can be attacked: the fight's combatants still standing (enemies first), else the NPCs here."""
        if (state := await game_here(self.bot, interaction)) is None:
            return []
        me = state.characters.get(str(interaction.user.id))
        if state.combat.active:
            names = [p.name for p in sorted(state.combat.order, key=lambda p: p.faction != "enemy")
                     if participant_hp(state, p)[0] > 0 and (me is None or p.name != me.name)]
        else:
            names = [n.name for n in state.present_npcs() if n.hp > 0]
        return [app_commands.Choice(name=clip(n, 100), value=n[:100]) for n in names
                if current.lower() in n.lower()][:25]

    @app_commands.command(name="quests")
    @app_commands.guild_only()
    async def quests(self, interaction: discord.Interaction) -> None:
        """The party's quest log."""
        state = await self.bot.engine.state(str(interaction.channel_id))
        await interaction.response.send_message(embed=quests_embed(state))

    @app_commands.command(name="rest")
    @app_commands.guild_only()
    @app_commands.describe(kind="A short rest (an hour, hit dice) or a long rest (a night, full recovery)")
    async def rest(self, interaction: discord.Interaction, kind: Literal["short", "long"]) -> None:
        """Rest your character."""
        await self.bot.ack_if_busy(interaction)
        text = await self.bot.engine.rest(str(interaction.channel_id), str(interaction.user.id),
                                          interaction.user.display_name, kind)
        await self.bot.announce(interaction, text)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot or message.webhook_id is not None or message.guild is None or not message.content.strip():
            return
        if self.bot.user is not None and message.content.startswith((f"<@{self.bot.user.id}>", f"<@!{self.bot.user.id}>")):
            return  # addressed to the bot itself: a text command, not an action
        channel_id = str(message.channel.id)
        try:
            session = await self.bot.engine.session(channel_id)
        except NoGameRunning:
            return
        state, member = session.state, str(message.author.id)
        if member not in state.party.player_ids:  # table talk from people who are not playing: say once how to join
            if (session.id, member) not in self.hinted:
                self.hinted.add((session.id, member))
                hint = HINT_NOT_IN_PARTY if member in state.characters else HINT_NO_CHARACTER
                with contextlib.suppress(discord.HTTPException):
                    await message.reply(hint, allowed_mentions=NO_PINGS, mention_author=False)
            return
        text = message.content
        replied = message.reference.resolved if message.reference else None
        if isinstance(replied, discord.Message) and "@" not in text:
            npc = self.bot.voices.speaker(replied, list(state.npcs.values()))
            if npc is not None:
                text = f"@{npc.name} {text}"  # a reply to an NPC speaks to that NPC
        try:
            await self.bot.engine.check_action(channel_id, member, text)  # refusals come without "typing…"
            await self.bot.play(message.channel, message.author, text, reply_to=message)
        except (RateLimited, BudgetSpent) as exc:
            await self._held_back(message, exc)
        except GameError as exc:
            with contextlib.suppress(Exception):  # a refused post, a bot shutting down: the turn changed nothing
                await message.channel.send(exc.message, allowed_mentions=NO_PINGS, mention_author=False,
                                           reference=message.to_reference(fail_if_not_exists=False))

    async def _held_back(self, message: discord.Message, exc: RateLimited | BudgetSpent) -> None:
        """A message a limit refused gets ⏳; the reason is said once while the limit lasts (to its player for a
        rate limit, to the channel for the budget), not under every message."""
        who = str(message.author.id) if isinstance(exc, RateLimited) else f"channel:{message.channel.id}"
        now = time.monotonic()
        with contextlib.suppress(discord.HTTPException):
            await message.add_reaction("⏳")
            if self.told_limit.get(who, 0.0) <= now:
                self.told_limit[who] = now + exc.retry_after
                await message.reply(exc.message, allowed_mentions=NO_PINGS, mention_author=False)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(PlayCog(bot))
