"""The Discord bot: loads the cogs, and turns engine results into messages in the right order."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict

import discord
import structlog
from discord.ext import commands

from engine import Engine
from engine.lore.retrieval import sources_line
from engine.turn import TurnResult, interrupted_notice

from .live import LiveReply
from .render import NO_PINGS, combat_embed
from .settings import Settings
from .shards import runs_guild, runs_shard_zero
from .text import split_message
from .tree import GameTree
from .voices import NpcVoices, Voice

log = structlog.get_logger(__name__)

EXTENSIONS = ("bot.cogs.game", "bot.cogs.character", "bot.cogs.features", "bot.cogs.party", "bot.cogs.play", "bot.cogs.trade", "bot.cogs.world", "bot.cogs.admin")


class LorekeeperBot(commands.AutoShardedBot):
    def __init__(self, engine: Engine, settings: Settings) -> None:
        intents = discord.Intents.default()
        intents.message_content = True  # plain messages in a game channel are actions
        # Shards: the settings' ids of their count, or (neither set) every shard of the count Discord recommends.
        super().__init__(command_prefix=commands.when_mentioned, intents=intents, tree_cls=GameTree,
                         allowed_mentions=NO_PINGS, help_command=None, shard_count=settings.shard_count,
                         shard_ids=settings.shard_ids)
        self.engine = engine
        self.settings = settings
        self.voices = NpcVoices()
        self._order: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._recovered = False

    async def setup_hook(self) -> None:
        for extension in EXTENSIONS:
            try:
                await self.load_extension(extension)
            except Exception:
                log.exception("extension_failed", extension=extension)
        # Several processes share the bot by shards: one syncing is enough, and each sync counts against a rate limit.
        if self.settings.dev_guild is not None and runs_shard_zero(self.shard_ids):
            guild = discord.Object(self.settings.dev_guild)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("commands_synced", guild=self.settings.dev_guild, count=len(synced))

    async def on_ready(self) -> None:
        log.info("bot_ready", user=str(self.user), guilds=len(self.guilds), shard_ids=sorted(self.shards),
                 shard_count=self.shard_count)
        if not self._recovered:  # on_ready comes again after each reconnect; this is once per start
            self._recovered = True
            await self.report_interrupted()

    async def report_interrupted(self) -> None:
        """Tell each channel about player messages a stopped or crashed bot never answered (they are kept, unplayed)."""
        for lost in await self.engine.recover_interrupted(self.runs_channel):
            try:
                channel = self.get_channel(int(lost.channel_id)) or await self.fetch_channel(int(lost.channel_id))
                if isinstance(channel, discord.abc.Messageable):
                    await channel.send(interrupted_notice(lost), allowed_mentions=NO_PINGS)
            except discord.HTTPException as exc:
                log.warning("interrupted_notice_failed", channel_id=lost.channel_id, error=str(exc))

    def runs_channel(self, channel_id: str, guild_id: str | None = None) -> bool:
        """Whether a channel's interrupted turns are this process's to report: a Discord channel (a terminal game in
        the same database is the terminal's) in a server that one of this process's shards receives. The game's
        stored server decides, so a channel the cache lacks (an archived thread, a server unavailable at start-up)
        is still claimed by its own process and by no other."""
        if not (channel_id.isascii() and channel_id.isdigit()):
            return False
        if self.shard_ids is None:
            return True  # every shard runs here, so every server does: even a channel the cache lacks
        if guild_id is not None and guild_id.isascii() and guild_id.isdigit():
            return runs_guild(int(guild_id), self.shard_ids, self.shard_count)
        channel = self.get_channel(int(channel_id))
        if channel is None:
            # A game stored without its server (older ones) in a channel the cache lacks: another process's, or one
            # of ours that is gone. Only a server's own process may claim its turns, so leave it.
            return False
        guild = getattr(channel, "guild", None)
        return runs_guild(guild.id if guild is not None else None, self.shard_ids, self.shard_count)

    async def ack_if_busy(self, interaction: discord.Interaction) -> None:
        """Defer, privately, when work holds or awaits this channel, so Discord's 3-second limit is kept.

        When nothing holds or awaits the channel's lock, the engine takes it without yielding, so the command
        answers well within the limit. A private defer keeps refusals private; `announce` posts successes.
        """
        if self.engine.busy(str(interaction.channel_id)):
            await interaction.response.defer(ephemeral=True, thinking=True)

    async def announce(self, interaction: discord.Interaction, content: str, **kwargs) -> None:
        """A command's public result, whether it answered directly or deferred privately."""
        if interaction.response.is_done():
            await interaction.followup.send("Done.", ephemeral=True)
            assert interaction.channel is not None
            await interaction.channel.send(content, allowed_mentions=NO_PINGS, **kwargs)
        else:
            await interaction.response.send_message(content, allowed_mentions=NO_PINGS, **kwargs)

    async def play(self, channel: discord.abc.Messageable, user: discord.abc.User, text: str, *,
                   followup: discord.Webhook | None = None, reply_to: discord.Message | None = None,
                   debug: bool | None = None) -> TurnResult:
        """One turn: ordered per channel (engine and delivery together), with typing shown while the model works.
        The message is stored as it arrives, before it waits for the turns ahead of it: a crash loses none."""
        playing = await self.engine.accept_turn(str(channel.id), str(user.id), getattr(user, "display_name", user.name),
                                                text, debug=debug)
        async with self._order[channel.id]:  # queued at once after accepting: arrival order is kept
            live = None
            try:
                live = self._live(channel, followup, reply_to, user, text)
                async with channel.typing():
                    result = await self.engine.play_turn(playing, show=live.show if live else None)
            except BaseException as exc:
                if live is not None:
                    await live.abandon()
                # Failed before its turn could record it: kept, marked failed. Cancelled (shutting down): it stays
                # pending, and the next start reports it as not played.
                if not isinstance(exc, asyncio.CancelledError):
                    await self.engine.abandon(playing)
                raise
            await self.deliver(channel, result, followup=followup, reply_to=reply_to, action=text, user=user, live=live,
                               asked=bool(debug))
            return result

    def _live(self, channel: discord.abc.Messageable, followup: discord.Webhook | None,
              reply_to: discord.Message | None, user: discord.abc.User, action: str | None) -> LiveReply | None:
        """Where this turn's reply streams to (None: streaming is off, and replies are posted whole)."""
        interval = self.settings.stream_interval
        if interval <= 0:
            return None

        async def npc_voice(name: str) -> Voice | None:
            npc = next((n for n in (await self.engine.state(str(channel.id))).npcs.values() if n.name == name), None)
            if npc is None:
                return None
            voice = await self.voices.voice(channel, npc)
            if followup is not None:  # the command's own answer says who spoke to whom, before the NPC answers
                voice.opened.append(await followup.send(addressed(user, npc.name, action), wait=True,
                                                        allowed_mentions=NO_PINGS))
            return voice
        return LiveReply(channel, followup, reply_to, interval, npc_voice)

    async def retry(self, channel: discord.abc.Messageable, user: discord.abc.User, *, admin: bool,
                    followup: discord.Webhook | None = None) -> TurnResult:
        """The channel's last turn, taken back and asked again (for its player, or an admin), then posted."""
        async with self._order[channel.id]:
            live = self._live(channel, followup, None, user, None)
            try:
                async with channel.typing():
                    result = await self.engine.retry(str(channel.id), str(user.id), admin=admin,
                                                     show=live.show if live else None)
            except BaseException:
                if live is not None:
                    await live.abandon()
                raise
            await self.deliver(channel, result, followup=followup, reply_to=None, action=result.text, user=user,
                               live=live)
            return result

    async def deliver(self, channel: discord.abc.Messageable, result: TurnResult, *, followup: discord.Webhook | None,
                      reply_to: discord.Message | None, action: str, user: discord.abc.User,
                      live: LiveReply | None = None, asked: bool = False) -> None:
        """Post a committed turn. It cannot be taken back, so a failure here is logged and noted, never re-raised.
        `asked`: the player (an admin) asked for this turn's debug report with the action."""
        try:
            await self._deliver(channel, result, followup=followup, reply_to=reply_to, action=action, user=user,
                                live=live)
        except Exception:
            log.exception("delivery_failed", channel_id=channel.id, turn_id=result.turn_id)
            with contextlib.suppress(Exception):  # the bot may be shutting down: never re-raised, as promised
                note = "-# The Game Master's reply could not be posted in full; the turn itself was saved (/game recap)."
                if followup is not None:
                    await followup.send(note, allowed_mentions=NO_PINGS)
                else:
                    await channel.send(note, allowed_mentions=NO_PINGS)
        if result.debug:
            try:
                await self.send_debug(channel, result, followup if asked else None)
            except Exception:  # the turn stands; only its report is lost
                log.exception("debug_report_failed", channel_id=channel.id, turn_id=result.turn_id)

    async def _deliver(self, channel: discord.abc.Messageable, result: TurnResult, *, followup: discord.Webhook | None,
                       reply_to: discord.Message | None, action: str, user: discord.abc.User,
                       live: LiveReply | None = None) -> None:
        pieces = split_message(result.reply)
        guild = getattr(channel, "guild", None)
        guild_id = str(guild.id) if guild is not None else None
        verbosity = (await self.engine.server_settings(guild_id)).verbosity if guild_id else "full"
        mechanics = result.mechanics(verbosity)
        if result.sources and await self.engine.show_sources(str(channel.id), guild_id):
            mechanics.append(f"📜 {sources_line(result.sources)}")
        if mechanics:
            footer = "\n".join(f"-# {line}" for line in mechanics)
            if len(pieces[-1]) + len(footer) + 1 <= 2000:
                pieces[-1] += "\n" + footer
            else:
                pieces += split_message(footer)
        tracker = combat_embed(result.state) if result.state.combat.active else None
        if live is not None:
            if live.speaks_for(result.npc.name if result.npc else "GM"):
                try:  # the streamed messages become the committed reply
                    await live.finish(pieces, tracker if result.npc is None else None)
                except discord.HTTPException:  # an NPC's webhook deleted meanwhile, a message gone: post it anew
                    log.warning("stream_finish_failed", channel_id=channel.id, exc_info=True)
                else:
                    return
            await live.abandon()  # nothing streamed, or (a replayed turn answered by someone else) not this reply
        if result.npc is not None:
            if followup is not None:
                await followup.send(addressed(user, result.npc.name, action), allowed_mentions=NO_PINGS)
            await self.voices.say(channel, result.npc, pieces)
        else:
            first, rest = pieces[0], pieces[1:]
            # The combat tracker rides on the last piece, so it sits under the newest state of the fight.
            embed = {"embed": tracker} if tracker is not None and not rest else {}
            try:
                if followup is not None:
                    await followup.send(first, allowed_mentions=NO_PINGS, **embed)
                else:
                    # A reply to a message deleted meanwhile still posts, just without the reference.
                    reference = reply_to.to_reference(fail_if_not_exists=False) if reply_to is not None else None
                    await channel.send(first, allowed_mentions=NO_PINGS, reference=reference, mention_author=False, **embed)
            except discord.HTTPException:
                log.warning("reply_failed_resending_plainly", channel_id=channel.id, exc_info=True)
                await channel.send(first, allowed_mentions=NO_PINGS, **embed)
            for n, piece in enumerate(rest, 1):
                last = {"embed": tracker} if tracker is not None and n == len(rest) else {}
                await channel.send(piece, allowed_mentions=NO_PINGS, **last)

    async def send_debug(self, channel: discord.abc.Messageable, result: TurnResult,
                         followup: discord.Webhook | None) -> None:
        """The debug report names tool calls, secrets not yet found and GM-only lore: never the channel's. To the
        admin who asked with their action (privately, under it), or else by direct message to the admin who turned
        debug on here; with neither (debug on by the config), `/gm-admin feedback` and the logs have it."""
        report = debug_report(result)
        if followup is not None:
            await followup.send(report, ephemeral=True, allowed_mentions=NO_PINGS)
            return
        reader = await self.engine.debug_reader(str(channel.id))
        if reader is None:
            log.info("debug_report_kept_private", channel_id=channel.id, turn_id=result.turn_id)
            return
        try:
            admin = self.get_user(int(reader)) or await self.fetch_user(int(reader))
            where = getattr(channel, "mention", f"channel {channel.id}")
            await admin.send(f"Debug report for {where}:\n{report}", allowed_mentions=NO_PINGS)
        except (discord.HTTPException, ValueError):  # their DMs closed, the account gone: still not the channel's
            log.warning("debug_report_undelivered", channel_id=channel.id, reader=reader, exc_info=True)

    async def on_command_error(self, ctx: commands.Context, error: commands.CommandError) -> None:
        """Text commands are the owner's (sync); anyone else mentioning the bot gets a short answer."""
        if isinstance(error, commands.CommandNotFound):
            return
        if isinstance(error, commands.CheckFailure):
            await ctx.reply("Only the bot's owner can do that.", mention_author=False)
            return
        log.error("text_command_failed", command=ctx.command.qualified_name if ctx.command else "?", exc_info=error)

    async def on_message(self, message: discord.Message) -> None:
        # No prefix commands for players; the owner's text commands (sync) answer to a mention only.
        if message.author.bot or message.webhook_id is not None:
            return
        await self.process_commands(message)


def addressed(user: discord.abc.User, npc: str, action: str | None) -> str:
    """What a command that spoke to an NPC answers with, above the NPC's own words (no action: a retry)."""
    name = discord.utils.escape_markdown(getattr(user, "display_name", user.name))
    return (f"**{name}** → {npc}: {action}" if action is not None else f"**{name}** → {npc}, once more")[:2000]


def debug_report(result: TurnResult) -> str:
    lines = [f"agent: {result.agent.value}" + (f" ({result.npc.id})" if result.npc else "")]
    for call in result.calls:
        args = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
        lines.append(f"{'ok ' if call.ok else 'ERR'} {call.name}({args}) → {call.observation}")
    for m in result.model_calls:
        lines.append(f"model {m.provider}/{m.model}: {m.input_tokens} in, {m.output_tokens} out"
                     f"{', ' + str(m.cache_read_tokens) + ' cached' if m.cache_read_tokens else ''}, {m.latency_ms:.0f} ms")
    return "```\n" + "\n".join(lines)[:1990 - 8] + "\n```"


__all__ = ["LorekeeperBot", "EXTENSIONS", "debug_report"]
