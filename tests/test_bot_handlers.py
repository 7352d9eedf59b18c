"""The cogs' handlers with stub interactions, on the real engine and scripted model (no Discord connection)."""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from types import SimpleNamespace

import discord
import pytest
from discord import app_commands

from bot.client import LorekeeperBot
from bot.cogs.admin import AdminCog
from bot.cogs.character import CharacterCog
from bot.cogs.game import GameCog
from bot.cogs.party import PartyCog
from bot.cogs.play import DiceTransformer, PlayCog
from bot.settings import load_settings
from bot.tree import GENERIC, NOT_PERMITTED, GameTree, InputError, user_message
from engine import BadInput, TurnFailed
from tests.conftest import CHANNEL


class Sent(list):
    def texts(self) -> list[str]:
        return [content for content, _ in self]


class StubResponse:
    def __init__(self) -> None:
        self.sent, self.deferred, self._done = Sent(), None, False

    def is_done(self) -> bool:
        return self._done

    async def defer(self, **kwargs) -> None:
        self.deferred, self._done = kwargs, True

    async def send_message(self, content=None, **kwargs) -> None:
        self.sent.append((content, kwargs))
        self._done = True


class StubFollowup:
    def __init__(self) -> None:
        self.sent = Sent()

    async def send(self, content=None, **kwargs) -> None:
        self.sent.append((content, kwargs))


class StubChannel:
    def __init__(self, channel_id: str = CHANNEL) -> None:
        self.id = channel_id
        self.sent = Sent()
        self.typing_entered = 0

    @asynccontextmanager
    async def _typing(self):
        self.typing_entered += 1
        yield

    def typing(self):
        return self._typing()

    async def send(self, content=None, **kwargs):
        self.sent.append((content, kwargs))
        return SimpleNamespace(id=len(self.sent))


def user(uid: str = "u1", name: str = "bob"):
    return SimpleNamespace(id=uid, name=name, display_name=name, bot=False)


def interaction(bot, uid="u1", name="bob", channel=None):
    channel = channel or StubChannel()
    return SimpleNamespace(user=user(uid, name), channel=channel, channel_id=channel.id, guild_id="g1", guild=None,
                           response=StubResponse(), followup=StubFollowup(), client=bot, command=None)


@pytest.fixture
async def bot(table):
    # Entered, as main() does: an AutoShardedBot never entered nor started cannot close (discord.py 2.7).
    async with LorekeeperBot(table.engine, load_settings()) as b:
        b.table = table
        yield b


async def test_act_is_deferred_then_followed_up_with_the_reply_and_dice(bot):
    bot.table.model.add("You climb. <roll>1d20+2</roll>", " You make it.")
    i = interaction(bot)
    await PlayCog(bot).act.callback(PlayCog(bot), i, "I climb the wall.")
    assert i.response.deferred == {"thinking": True}
    text, kwargs = i.followup.sent[0]
    assert text.startswith("You climb. You make it.\n-# 🎲 Aria: 1d20+2 →")
    assert kwargs["allowed_mentions"].everyone is False and kwargs["allowed_mentions"].roles is False
    assert i.channel.typing_entered == 1


async def test_act_to_an_npc_quotes_the_action_and_the_npc_speaks(bot):
    bot.table.model.add('"Three weeks dark," she says.')
    i = interaction(bot)
    await PlayCog(bot).act.callback(PlayCog(bot), i, "@Ysolde what happened?")
    assert i.followup.sent.texts() == ["**bob** → Ysolde Marrick: @Ysolde what happened?"]
    # outside a real text channel there is no webhook: the bot speaks for the NPC
    assert i.channel.sent.texts() == ['**Ysolde Marrick:** "Three weeks dark," she says.']


async def test_a_long_reply_is_split_below_discords_limit(bot):
    bot.table.model.add(("The fog thickens. " * 60 + "\n\n") * 4)
    i = interaction(bot)
    await PlayCog(bot).act.callback(PlayCog(bot), i, "I wait.")
    pieces = i.followup.sent.texts() + i.channel.sent.texts()
    assert len(pieces) >= 3 and all(len(p) <= 2000 for p in pieces)


async def test_model_text_cannot_ping(bot):
    bot.table.model.add("Hear me @everyone and @here, <@&5>!")
    i = interaction(bot)
    await PlayCog(bot).act.callback(PlayCog(bot), i, "I shout.")
    text, kwargs = i.followup.sent[0]
    assert "@everyone" not in text and "@here" not in text and "<@&" not in text
    assert kwargs["allowed_mentions"].users is False


async def test_debug_mode_never_posts_its_report_in_the_channel(bot):
    await bot.engine.set_debug(CHANNEL, True)  # on by no one (as the config turns it on): the report stays private
    bot.table.model.add("<roll>1d6</roll>", " Done.")
    i = interaction(bot)
    await PlayCog(bot).act.callback(PlayCog(bot), i, "I roll.")
    assert not any("agent: narrative" in t for t in [*i.channel.sent.texts(), *(c for c, _ in i.followup.sent)])


async def test_roll_transformer_rolls_and_refuses_nonsense_kindly(bot):
    roll = await DiceTransformer().transform(interaction(bot), "2d6+1")
    assert roll.expression == "2d6+1" and 3 <= roll.total <= 13
    with pytest.raises(InputError) as err:
        await DiceTransformer().transform(interaction(bot), "two dice please")
    assert "not a dice expression" in user_message(err.value)
    i = interaction(bot)
    await PlayCog(bot).roll.callback(PlayCog(bot), i, roll, "perception")
    said = i.response.sent.texts()[0]
    assert said.startswith("🎲 Aria (bob) rolls 2d6+1 →") and said.endswith(" for perception")
    # The roll is in the story: the Game Master's next prompt shows it, under the character's name.
    bot.table.model.add("You notice a loose plank.")
    await bot.engine.take_turn(CHANNEL, "u1", "bob", "What do I notice?")
    history = "\n".join(m.content for m in bot.table.model.requests[-1].messages)
    assert f"Aria rolls {roll.describe()} for perception." in history


async def test_tree_turns_errors_into_short_ephemeral_answers(bot, caplog):
    tree: GameTree = bot.tree
    cases = [(app_commands.CommandInvokeError(SimpleNamespace(qualified_name="x", name="x"), BadInput("Odile Farrow is not here.")),
              "Odile Farrow is not here."),
             (app_commands.CheckFailure("no"), NOT_PERMITTED),
             (app_commands.CommandInvokeError(SimpleNamespace(qualified_name="x", name="x"), RuntimeError("bug")), GENERIC)]
    for error, expected in cases:
        i = interaction(bot)
        with caplog.at_level(logging.ERROR):
            await tree.on_error(i, error)
        assert i.response.sent == [(expected, {"ephemeral": True, "allowed_mentions": i.response.sent[0][1]["allowed_mentions"]})]
    deferred = interaction(bot)
    deferred.response._done = True
    await tree.on_error(deferred, app_commands.CommandInvokeError(SimpleNamespace(qualified_name="x", name="x"),
                                                                   TurnFailed("The quill snaps.", reason="x")))
    assert deferred.followup.sent[0][0] == "The quill snaps." and deferred.followup.sent[0][1]["ephemeral"] is True


async def test_character_party_quests_rest_and_status(bot):
    i = interaction(bot, uid="u3", name="cass")
    cog = CharacterCog(bot)
    await cog.create.callback(cog, i, "Cass", "rogue", 1)
    assert "**Cass** the human rogue joins the party." == i.response.sent.texts()[0]
    assert i.response.sent[0][1]["embed"].title == "Cass"
    i = interaction(bot, uid="u3")
    await cog.inventory.callback(cog, i)
    assert i.response.sent[0][1]["embed"].fields[0].value == "10 gp" and i.response.sent[0][1]["ephemeral"]
    i = interaction(bot, uid="u3")
    party = PartyCog(bot)
    await party.leave.callback(party, i)
    assert "leaves the party" in i.response.sent.texts()[0]
    i = interaction(bot)
    await party.list_members.callback(party, i)
    assert "Cass" not in i.response.sent.texts()[0] and "**Aria**" in i.response.sent.texts()[0]
    i = interaction(bot)
    await PlayCog(bot).quests.callback(PlayCog(bot), i)
    assert "No quests yet" in i.response.sent[0][1]["embed"].description
    i = interaction(bot)
    await PlayCog(bot).rest.callback(PlayCog(bot), i, "long")
    assert "After a long rest" in i.response.sent.texts()[0]
    i = interaction(bot)
    await GameCog(bot).status.callback(GameCog(bot), i)
    assert i.response.sent[0][1]["embeds"][0].title == "The Drowned Lantern of Saltmere"


async def test_adventure_and_class_autocomplete_offer_at_most_25_choices(bot):
    choices = await GameCog(bot).adventure_choices(interaction(bot), "salt")
    assert [c.value for c in choices] == ["saltmere-lantern"]
    classes = await CharacterCog(bot).class_choices(interaction(bot), "w")
    assert {c.value for c in classes} == {"warlock", "wizard"}


async def test_admin_check_and_commands(bot):
    admin_cog = AdminCog(bot)
    member = SimpleNamespace(guild_permissions=discord.Permissions.none(), roles=[SimpleNamespace(name="Player")])
    i = interaction(bot)
    i.user = member
    with pytest.raises(app_commands.CheckFailure):
        await admin_cog.interaction_check(i)
    bot.settings.admin_role = "Game Master"
    member.roles.append(SimpleNamespace(name="Game Master"))
    assert await admin_cog.interaction_check(i)
    member.roles.pop()
    member.guild_permissions = discord.Permissions(manage_guild=True)
    assert await admin_cog.interaction_check(i)
    i.user = user()  # a direct message: no server, no permissions
    with pytest.raises(app_commands.CheckFailure):
        await admin_cog.interaction_check(i)
    i = interaction(bot)
    await admin_cog.debug.callback(admin_cog, i, "on")
    assert await bot.engine.debug(CHANNEL) and i.response.sent[0][1]["ephemeral"]
    i = interaction(bot)
    await admin_cog.state.callback(admin_cog, i)
    assert i.response.sent[0][1]["file"].filename == "state.json"  # long: sent as a file
    i = interaction(bot)
    await admin_cog.suggestions.callback(admin_cog, i)
    assert "No turn has been played" in i.response.sent.texts()[0]
    bot.table.model.add("Gulp.")
    await bot.engine.take_turn(CHANNEL, "u1", "bob", "I drink my healing potion.")
    i = interaction(bot)
    await admin_cog.suggestions.callback(admin_cog, i)
    assert "update_hp (highly recommended)" in i.response.sent.texts()[0]
    i = interaction(bot)
    await admin_cog.prompt.callback(admin_cog, i)
    assert i.response.sent[0][1]["file"].filename == "prompt.md"
    i = interaction(bot)
    await admin_cog.telemetry.callback(admin_cog, i)
    [(_, sent)] = i.response.sent
    assert sent["ephemeral"] and "1 turns (0 failed)" in sent["embed"].description and "update_hp" in sent["embed"].description
    assert sent["file"].filename == "telemetry.json"
    i = interaction(bot)
    await admin_cog.reload_corpus.callback(admin_cog, i)
    assert i.response.deferred is not None  # re-indexing lore may take longer than Discord waits
    assert i.followup.sent.texts()[0] == ("✅ ashen-thane: The Barrow of the Ashen Thane\n"
                                          "✅ saltmere-lantern: The Drowned Lantern of Saltmere")
    i = interaction(bot)
    assert await bot.engine.show_sources(CHANNEL)  # the config's default
    await admin_cog.sources.callback(admin_cog, i, "off")
    assert not await bot.engine.show_sources(CHANNEL) and i.response.sent.texts() == ["The Sources line is off in this channel."]
    i = interaction(bot)
    await admin_cog.reset.callback(admin_cog, i)
    with pytest.raises(Exception, match="No game is running"):
        await bot.engine.state(CHANNEL)


async def test_turns_in_one_channel_are_delivered_in_arrival_order(bot):
    bot.table.model.latency = 0.003
    bot.table.model.add("First.", "Second.")
    channel = StubChannel()
    first = asyncio.create_task(bot.play(channel, user("u1"), "one"))
    await asyncio.sleep(0)
    second = asyncio.create_task(bot.play(channel, user("u2", "amy"), "two"))
    await asyncio.gather(first, second)
    assert channel.sent.texts() == ["First.", "Second."]


def test_status_and_tracker_fit_one_message_in_a_huge_fight(state):
    from bot.render import EMBED_BUDGET, combat_embed, status_embed
    from engine.state import Participant

    state.combat.active = True
    state.combat.order = [Participant(id=f"e{n}", name=f"Enemy with a very long and winding name number {n}", faction="enemy",
                                      initiative=n, ac=12, hp=5, max_hp=5) for n in range(30)]
    status = status_embed(state)
    tracker = combat_embed(state, budget=EMBED_BUDGET - len(status) - 50)
    assert len(status) + len(tracker) <= 6000


async def test_reload_corpus_reindexes_the_lore_and_reports_it(bot, tmp_path):
    import shutil

    from engine.lore.index import LoreIndex
    from tests.conftest import CORPUS

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS / "adventures" / "saltmere-lantern", corpus / "adventures" / "saltmere-lantern",
                    ignore=shutil.ignore_patterns("lore"))
    lore = corpus / "adventures" / "saltmere-lantern" / "lore"
    lore.mkdir()
    (lore / "bell.md").write_text("# The Bell\n## Casting\nCast in 1022 at Coldharbour.\n")
    (lore / "empty.md").write_text("")
    bot.settings.corpus = corpus
    bot.engine.deps.lore = LoreIndex(tmp_path / "lore")
    i = interaction(bot)
    await AdminCog(bot).reload_corpus.callback(AdminCog(bot), i)
    [(text, kwargs)] = i.followup.sent
    assert text.startswith("✅ saltmere-lantern: The Drowned Lantern of Saltmere") and kwargs["ephemeral"]
    assert "Lore: 1 file(s): 1 new or changed" in text and "empty.md: is empty" in text
    assert bot.engine.deps.lore.search("when was the bell cast", k=1)[0].chunk.slice == "the-bell.casting"


async def test_act_with_debug_is_for_admins_and_shows_the_workings_for_that_action(bot):
    i = interaction(bot)
    i.user = SimpleNamespace(id="u1", name="bob", display_name="bob", guild_permissions=discord.Permissions.none(), roles=[])
    with pytest.raises(app_commands.CheckFailure):
        await PlayCog(bot).act.callback(PlayCog(bot), i, "I look around.", True)
    assert i.response.deferred is None  # refused before anything public
    admin = interaction(bot)
    admin.user = SimpleNamespace(id="u1", name="bob", display_name="bob",
                                 guild_permissions=discord.Permissions(manage_guild=True), roles=[])
    bot.table.model.add("Gulls wheel overhead.")
    await PlayCog(bot).act.callback(PlayCog(bot), admin, "I look around.", True)
    report, sent = admin.followup.sent[-1]  # the debug report, this action only, to the admin who asked
    assert report.startswith("```\nagent: narrative") and sent["ephemeral"]
    assert not any("agent: narrative" in t for t in admin.channel.sent.texts())
    assert not await bot.engine.debug(CHANNEL)


async def test_a_process_claims_interrupted_turns_by_the_games_stored_server_cached_or_not(table, monkeypatch):
    from tests.test_shards import GUILD  # its shard of 4 is 2

    monkeypatch.setenv("LOREKEEPER_SHARD_COUNT", "4")
    monkeypatch.setenv("LOREKEEPER_SHARD_IDS", "2")
    async with LorekeeperBot(table.engine, load_settings()) as mine:
        assert mine.get_channel(12345) is None  # not in the cache: an archived thread, say
        assert mine.runs_channel("12345", str(GUILD))
        assert not mine.runs_channel("12345", str(GUILD + (1 << 22)))  # a server of shard 3: another process's
        assert not mine.runs_channel("12345", None) and not mine.runs_channel("terminal", None)


async def test_a_streamed_replys_final_edit_keeps_the_interval_too():
    """Discord rate-limits a message's edits: the committed text waits out LOREKEEPER_STREAM_INTERVAL after the
    stream's last edit rather than following it at once."""
    from bot.live import LiveReply

    loop = asyncio.get_running_loop()
    times: list[float] = []

    class Message:
        async def edit(self, content=None, **kwargs) -> None:
            times.append(loop.time())

    class Channel:
        id = 1

        async def send(self, content=None, **kwargs) -> Message:
            times.append(loop.time())
            return Message()

    live = LiveReply(Channel(), None, None, interval=0.2)
    live.show("GM", "The tide")
    await asyncio.sleep(0.25)  # the first post, one interval in
    live.show("GM", "The tide turns.")
    await asyncio.sleep(0.21)  # an edit with the cursor, one interval later
    await live.finish(["The tide turns. Gulls cry."])  # done at once: the final edit waits its turn
    assert len(times) == 3 and all(b - a >= 0.19 for a, b in zip(times, times[1:])), times
