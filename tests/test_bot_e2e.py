"""The real Lorekeeper bot (real discord.py client, real engine, scripted model) against the loopback fake Discord."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time

import discord
import pytest

from bot.client import LorekeeperBot
from bot.settings import load_settings
from engine import Deps, Engine, ModelError, ScriptedModel, Store, load_config
from engine.basics import AgentType, Currency
from engine.entities import Shop, ShopItem
from tests.conftest import CORPUS
from tests.fake_discord import DISCORD_EPOCH, CommandNotAvailable, FakeDiscord

MANAGE_GUILD = discord.Permissions(manage_guild=True).value


@contextlib.asynccontextmanager
async def lorekeeper(tmp_path, fake: FakeDiscord, model: ScriptedModel, *, dev_guild: bool = True, **overrides):
    async with Store.open(tmp_path / "bot.db") as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(3)))
        settings = load_settings(dev_guild=fake.guild_id if dev_guild else None, **overrides)
        bot = FakeDiscord.fast_ready(LorekeeperBot(engine, settings))
        errors: list[str] = []
        bot.on_error = lambda event, *a, **k: errors.append(event)  # type: ignore[method-assign]
        await bot.login(fake.token)
        task = asyncio.create_task(bot.connect())
        try:
            await asyncio.wait_for(bot.wait_until_ready(), 5)
            yield bot
        finally:
            await bot.close()
            await asyncio.wait_for(task, 5)
            await engine.drain()
        assert errors == []


@pytest.fixture
async def fake():
    async with FakeDiscord() as fake:
        yield fake
        assert fake.internal_errors == []


@pytest.fixture
def model():
    return ScriptedModel(chunk_size=9)


@pytest.fixture
async def bot(tmp_path, fake, model):
    async with lorekeeper(tmp_path, fake, model) as bot:
        yield bot
    assert fake.unknown_routes == []


async def game_with_players(bot: LorekeeperBot, fake: FakeDiscord, channel: str = "general") -> str:
    cid = str(fake.channel(channel).id)
    await bot.engine.start_game(cid)
    await bot.engine.create_character(cid, str(fake.user("alice").id), "Aria", "fighter")
    await bot.engine.create_character(cid, str(fake.user("bob").id), "Bram", "wizard")
    return cid


def walk(commands: list[dict]):
    """Every command and (nested) option in a synced payload."""
    stack = list(commands)
    while stack:
        item = stack.pop()
        yield item
        stack.extend(item.get("options", []))


async def test_synced_commands_obey_discords_limits(fake, bot):
    [put] = fake.calls("PUT", rf"/applications/{fake.application_id}/guilds/{fake.guild_id}/commands")
    names = {c["name"] for c in put.json}
    assert {"game", "char", "party", "act", "talk", "use", "retry", "roll", "quests", "rest", "help", "gm-admin"} <= names
    from bot.cogs.play import HELP

    assert len(HELP) <= 2000  # one Discord message
    unnamed = sorted(n for n in names if f"`/{n}" not in HELP)  # /help names every command a member can use
    assert unnamed == [], unnamed
    admin_subs = {o["name"] for c in put.json if c["name"] == "gm-admin" for o in c["options"]}
    assert sorted(n for n in admin_subs if f"`{n}`" not in HELP) == []
    for item in walk(put.json):
        assert item["name"] == item["name"].lower() and 1 <= len(item["name"]) <= 32, item["name"]
        assert 1 <= len(item.get("description", "x")) <= 100, item
        assert len(item.get("options", [])) <= 25 and len(item.get("choices", [])) <= 25
    admin = next(c for c in put.json if c["name"] == "gm-admin")
    assert int(admin["default_member_permissions"]) == MANAGE_GUILD and admin.get("contexts") in (None, [0])
    sub = {o["name"] for o in admin["options"]}
    assert sub == {"award", "world", "note", "config", "debug", "feedback", "sources", "state", "prompt", "suggestions", "telemetry", "undo", "reset", "reload-corpus", "sync"}


async def test_a_slash_command_is_deferred_then_followed_up(fake, bot, model):
    await game_with_players(bot, fake)
    model.add("You climb. <roll>1d20+2</roll>", " You reach the top.")
    i = await fake.interaction("act", {"action": "I climb the harbour wall."}, user="alice")
    assert (await i.wait_response())["type"] == 5  # deferred, "thinking"
    [reply] = await i.wait_followups(1)
    assert reply["content"].startswith("You climb. You reach the top.\n-# 🎲 Aria: 1d20+2 →")
    assert fake.calls("POST", r"/channels/\d+/typing")  # typing shown while the model worked


async def test_an_npc_mention_posts_through_the_webhook_under_the_npcs_name(fake, bot, model):
    await game_with_players(bot, fake)
    model.add('"Three weeks dark, and two boats on the Teeth," she says.')
    await fake.message("@Ysolde what happened to the lighthouse?", author="alice")
    [post] = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+")
    assert post.json["username"] == "Ysolde Marrick" and post.json["content"].startswith('"Three weeks dark')
    assert post.json["allowed_mentions"] == {"parse": []}
    assert len(fake.calls("POST", r"/channels/\d+/webhooks")) == 1  # one webhook for the channel
    # replying to the NPC's message speaks to her again, through the same webhook
    model.add('"Ask Odile at the Brine Cup."')
    await fake.message("Who would know more?", author="bob", message_reference=post.response["id"])
    posts = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+", count=2)
    assert posts[1].json["username"] == "Ysolde Marrick" and len(fake.calls("POST", r"/channels/\d+/webhooks")) == 1


async def test_a_long_reply_is_split(fake, bot, model):
    await game_with_players(bot, fake)
    model.add(("The fog thickens around the quay. " * 50 + "\n\n") * 3)
    i = await fake.interaction("act", {"action": "I wait for the fog to lift."}, user="alice")
    await i.wait_followups(1)
    channel_posts = await fake.wait_for("POST", r"/channels/\d+/messages", count=2)
    pieces = [i.followups[0]["content"]] + [c.json["content"] for c in channel_posts]
    assert len(pieces) >= 3 and all(len(p) <= 2000 for p in pieces)


async def test_model_text_cannot_ping(fake, bot, model):
    await game_with_players(bot, fake)
    model.add(f"Wake up @everyone and @here, <@&{fake.everyone.id}> and <@{fake.user('bob').id}>!")
    await fake.message("I ring the harbour bell.", author="alice")
    [reply] = await fake.wait_for("POST", r"/channels/\d+/messages")
    assert "@everyone" not in reply.json["content"] and "@here" not in reply.json["content"]
    assert reply.json["allowed_mentions"]["parse"] == [] and not reply.json["allowed_mentions"].get("replied_user")


async def test_gm_admin_is_hidden_from_members_and_refused_at_run_time(fake, bot):
    with pytest.raises(CommandNotAvailable):
        await fake.interaction("gm-admin state", user="alice")  # the Discord client would not offer it
    # a server can override default permissions; the run-time check still refuses
    i = await fake.interaction("gm-admin state", user="alice", strict=False)
    response = await i.wait_response()
    assert response["type"] == 4 and response["data"]["content"] == "You are not permitted to use this command."
    assert response["data"]["flags"] & 64  # ephemeral
    fake.add_user("gm", permissions="manage_guild")
    await game_with_players(bot, fake)
    ok = await fake.interaction("gm-admin telemetry", user="gm")
    response = (await ok.wait_response())["data"]
    assert response["flags"] & 64 and response["embeds"][0]["description"] == "```\nNo turns recorded.\n```"


async def test_two_messages_at_once_in_one_channel_are_answered_in_order(fake, bot, model):
    model.latency = 0.01
    await game_with_players(bot, fake)
    model.add(lambda r: f"Answer to {r.messages[-1].content.split(']: ')[-1]}",
              lambda r: f"Answer to {r.messages[-1].content.split(']: ')[-1]}")
    await asyncio.gather(fake.message("first", author="alice"), fake.message("second", author="bob"))
    replies = await fake.wait_for("POST", r"/channels/\d+/messages", count=2)
    assert [c.json["content"] for c in replies] == ["Answer to first", "Answer to second"]


async def test_table_talk_is_no_action_and_a_newcomer_is_told_once_how_to_join(fake, bot, model):
    await game_with_players(bot, fake)
    fake.add_user("carol")
    await fake.message("Is this the D&D channel?", author="carol")  # no character: not playing
    [hint] = await fake.wait_for("POST", r"/channels/\d+/messages")
    assert "/char create" in hint.json["content"] and "/party join" in hint.json["content"]
    assert hint.json["allowed_mentions"]["parse"] == [] and not hint.json["allowed_mentions"].get("replied_user")
    await fake.message("Hello?", author="carol")  # once is enough
    await fake.message("nothing here", author="alice", channel="ooc")  # no game in that channel
    await asyncio.sleep(0.2)
    assert model.requests == [] and len(fake.calls("POST", r"/channels/\d+/messages")) == 1
    help = await fake.interaction("help", user="carol")
    response = (await help.wait_response())["data"]
    assert response["flags"] & 64 and "`@Name …` speaks to someone" in response["content"]


async def test_game_errors_reach_the_user_briefly(fake, bot):
    i = await fake.interaction("quests", user="alice")
    response = await i.wait_response()
    assert response["data"]["content"].startswith("No game is running here") and response["data"]["flags"] & 64
    i = await fake.interaction("roll", {"dice": "lots of dice"}, user="alice")
    assert "not a dice expression" in (await i.wait_response())["data"]["content"]


async def test_game_start_in_a_thread_and_character_creation(fake, bot):
    i = await fake.interaction("game start", {"thread": True}, user="alice")
    [note] = await i.wait_followups(1)
    [thread_call] = fake.calls("POST", r"/channels/\d+/threads")
    thread_id = thread_call.response["id"]
    assert f"<#{thread_id}>" in note["content"]
    intro = await fake.wait_for("POST", rf"/channels/{thread_id}/messages")
    assert intro[0].json["content"].startswith("## The Drowned Lantern of Saltmere")
    made = await fake.interaction("char create", {"name": "Aria", "class": "fighter"}, user="alice", channel=int(thread_id))
    response = await made.wait_response()
    assert response["data"]["content"] == "**Aria** the human fighter joins the party."
    assert response["data"]["embeds"][0]["title"] == "Aria"


async def test_game_start_refusals_are_private_and_leave_no_thread(fake, bot):
    i = await fake.interaction("game start", {"thread": True, "adventure": "no-such-place"}, user="alice")
    response = await i.wait_response()
    assert response["type"] == 4 and response["data"]["flags"] & 64  # answered privately, never deferred publicly
    assert "no-such-place" in response["data"]["content"]
    assert not fake.calls("POST", r"/channels/\d+/threads")  # and no empty thread left behind
    first = await fake.interaction("game start", user="alice")
    assert (await first.wait_response())["type"] == 5
    await first.wait_followups(1)
    again = await fake.interaction("game start", user="bob")
    response = await again.wait_response()
    assert response["type"] == 4 and response["data"]["flags"] & 64
    assert "already" in response["data"]["content"]


async def test_a_turn_in_progress_survives_a_reconnect(fake, bot, model):
    await game_with_players(bot, fake)
    model.latency = 0.02
    model.add("The tide turns while you watch, slowly, slowly.")
    await fake.message("I watch the tide.", author="alice")
    await fake.wait_for("POST", r"/channels/\d+/typing")
    assert await fake.drop_connection() == "resume"
    [reply] = await fake.wait_for("POST", r"/channels/\d+/messages", timeout=10)
    assert reply.json["content"] == "The tide turns while you watch, slowly, slowly."
    model.latency = 0
    model.add("Still here.")
    i = await fake.interaction("act", {"action": "Are you still there?"}, user="alice")
    assert (await i.wait_followups(1))[0]["content"] == "Still here."


async def test_combat_turns_show_the_tracker_embed(fake, bot, model):
    await game_with_players(bot, fake)
    model.add('Steel flashes! <start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>', " Fight!")
    i = await fake.interaction("act", {"action": "I kick the giant crab."}, user="alice")
    [reply] = await i.wait_followups(1)
    [embed] = reply["embeds"]
    assert embed["title"] == "Combat, round 1" and "**Crab** (enemy)" in embed["description"] and "Aria" in embed["description"]


@pytest.fixture
async def bot_without_dev_guild(tmp_path, fake, model):
    async with lorekeeper(tmp_path, fake, model, dev_guild=False) as bot:
        yield bot


async def test_commands_are_never_synced_at_start_only_by_the_owner(fake, bot_without_dev_guild):
    assert fake.calls("PUT", r"/applications/\d+(/guilds/\d+)?/commands") == []
    me = bot_without_dev_guild.user.id
    await fake.message(f"<@{me}> sync", author="alice")
    [refusal] = await fake.wait_for("POST", r"/channels/\d+/messages")
    assert refusal.json["content"] == "Only the bot's owner can do that."
    assert fake.calls("PUT", r"/applications/\d+(/guilds/\d+)?/commands") == []
    await fake.message(f"<@{me}> sync", author="owner")
    [put] = await fake.wait_for("PUT", rf"/applications/{fake.application_id}/guilds/{fake.guild_id}/commands")
    assert {"game", "act", "gm-admin"} <= {c["name"] for c in put.json}
    done = await fake.wait_for("POST", r"/channels/\d+/messages", count=2)
    assert done[1].json["content"].startswith("Synced ") and done[1].json["content"].endswith("(guild).")


async def test_a_refused_token_is_a_clear_message(tmp_path, fake, monkeypatch):
    from bot.main import run_bot
    from engine import ConfigError
    from tests.fake_llm_server import FakeLLMServer, agents_config

    async with FakeLLMServer(api_key="k", models=("gpt-test",)) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("LOREKEEPER_CONFIG", str(agents_config(tmp_path)))
        monkeypatch.setenv("DISCORD_TOKEN", "not-the-token")
        with pytest.raises(ConfigError) as err:
            await run_bot(load_settings(db=tmp_path / "t.db"))
    assert "refused the token" in err.value.message and ".env.example" in err.value.message and "lorekeeper play" in err.value.message


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_a_failed_gateway_lookup_is_one_sentence(tmp_path, fake, monkeypatch, status):
    from bot.main import run_bot
    from engine import ConfigError
    from tests.fake_llm_server import FakeLLMServer, agents_config

    fake.fail("GET", "/gateway/bot", status=status, times=5)
    async with FakeLLMServer(api_key="k", models=("gpt-test",)) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("LOREKEEPER_CONFIG", str(agents_config(tmp_path)))
        monkeypatch.setenv("DISCORD_TOKEN", fake.token)
        with pytest.raises(ConfigError) as err:
            await asyncio.wait_for(run_bot(load_settings(db=tmp_path / "t.db")), 20)
    message = err.value.message
    assert message.startswith("Discord would not say where to connect") and "\n" not in message
    assert f"HTTP {status}" in message and "lorekeeper play" in message


async def test_a_missing_token_is_a_clear_message(tmp_path):
    from bot.main import run_bot
    from engine import ConfigError

    with pytest.raises(ConfigError) as err:
        await run_bot(load_settings(db=tmp_path / "t.db"))
    assert "DISCORD_TOKEN" in err.value.message and ".env.example" in err.value.message and "lorekeeper play" in err.value.message


async def test_act_refusals_are_ephemeral_and_cost_no_model_call(fake, bot, model):
    await game_with_players(bot, fake)
    i = await fake.interaction("act", {"action": "@Odile a drink, please"}, user="alice")
    response = await i.wait_response()
    assert response["type"] == 4 and response["data"]["content"] == "Odile Farrow is not here."
    assert response["data"]["flags"] & 64 and model.requests == []
    fake.add_user("dave")
    i = await fake.interaction("act", {"action": "I look around."}, user="dave")
    assert (await i.wait_response())["data"]["content"].startswith("You have no character in this game yet.")


async def test_a_deleted_webhook_is_made_again_and_no_line_is_lost(fake, bot, model):
    await game_with_players(bot, fake)
    model.add('"Fog again."')
    await fake.message("@Ysolde Morning!", author="alice")
    await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+")
    fake.webhooks.clear()  # an admin deleted it
    model.add('"Still fog."')
    await fake.message("@Ysolde Any news?", author="alice")
    posts = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+", count=3)
    assert [p.status for p in posts] == [200, 404, 200] and posts[2].json["content"] == '"Still fog."'
    assert len(fake.calls("POST", r"/channels/\d+/webhooks")) == 2


async def test_npc_names_discord_forbids_are_adjusted_not_refused(fake, bot):
    from engine.entities import NPC

    channel = bot.get_channel(fake.channel("general").id)
    await bot.voices.say(channel, NPC(id="clyde", name="Clyde of Discordia", persona="A sailor."), ["Ahoy."])
    [post] = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+")
    assert post.status == 200 and post.json["username"] == "Clyd\u200be of Discor\u200bdia"


# --- found in review ------------------------------------------------------------------------------------------------

async def busy_channel(bot: LorekeeperBot, fake: FakeDiscord, model: ScriptedModel) -> None:
    """A game whose channel is held by a slow turn (about 4 s of model time) when this returns."""
    await game_with_players(bot, fake)
    model.latency = 0.05
    model.add("The tide creeps in, grain by grain, as you wait for it to reveal its secrets.")
    await fake.message("I wait for the tide.", author="alice")
    await fake.wait_for("POST", r"/channels/\d+/typing")


async def test_commands_do_not_time_out_behind_a_running_turn(tmp_path, model):
    async with FakeDiscord(interaction_timeout=0.4) as fake, lorekeeper(tmp_path, fake, model) as bot:
        await busy_channel(bot, fake, model)
        fake.add_user("cora")
        made = await fake.interaction("char create", {"name": "Cora", "class": "bard"}, user="cora")
        deferred = await made.wait_response()
        assert deferred["type"] == 5 and deferred["data"]["flags"] & 64  # busy: deferred at once, privately
        [followup] = await made.wait_followups(1, timeout=10)
        assert followup["content"] == "Done."
        [announced] = await fake.wait_for("POST", r"/channels/\d+/messages",
                                          where=lambda c: "Cora" in (c.json or {}).get("content", ""))
        assert announced.json["content"] == "**Cora** the human bard joins the party." and announced.json["embeds"]
        assert not [c for c in fake.calls() if c.status == 404 and "interactions" in c.path]


async def test_a_reply_to_a_deleted_message_still_posts(fake, bot, model):
    await game_with_players(bot, fake)
    model.latency = 0.02
    model.add("The gulls settle.")
    msg = await fake.message("I sit on a crate.", author="alice")
    await fake.wait_for("POST", r"/channels/\d+/typing")
    del fake.messages[int(msg["id"])]  # the player deleted it while the GM was thinking
    [reply] = await fake.wait_for("POST", r"/channels/\d+/messages", where=lambda c: c.status == 200)
    assert reply.json["content"] == "The gulls settle."


async def test_without_manage_webhooks_the_bot_speaks_for_npcs_within_the_limit(fake, bot, model):
    fake.set_overwrite("general", fake.bot_role, deny="manage_webhooks")
    await game_with_players(bot, fake)
    paragraph = ("tides " * 332).strip()  # 1,991 characters: fits alone, but not behind a name prefix
    model.add(f"{paragraph}\n\n{paragraph}")
    await fake.message("@Ysolde Tell me everything.", author="alice")
    posts = await fake.wait_for("POST", r"/channels/\d+/messages", count=3, where=lambda c: c.status == 200)
    assert all(p.json["content"].startswith("**Ysolde Marrick:** ") and len(p.json["content"]) <= 2000 for p in posts)
    assert not fake.calls("POST", r"/webhooks/\d+/[\w-]+")


async def test_many_quests_still_fit_one_embed(fake, bot, model):
    cid = await game_with_players(bot, fake)
    session = await bot.engine.session(cid)
    from engine.entities import Objective, Quest

    for n in range(12):
        session.state.quests[f"q{n}"] = Quest(id=f"q{n}", title=f"Errand number {n} " + "x" * 40, status="active",
                                              objectives=[Objective(id=str(k), text="o" * 140) for k in range(8)])
    await bot.engine.deps.store.save_state(session.id, session.state)
    i = await fake.interaction("quests", user="alice")
    response = await i.wait_response()
    assert response["type"] == 4 and sum(len(f["value"]) + len(f["name"]) for f in response["data"]["embeds"][0]["fields"]) < 6000
    assert response["data"]["embeds"][0]["fields"][-1]["name"] == "…"


async def test_game_commands_are_guild_only(fake, bot):
    [put] = fake.calls("PUT", rf"/applications/{fake.application_id}/guilds/{fake.guild_id}/commands")
    for name in ("game", "char", "party", "gm-admin", "act", "talk", "use", "retry", "quests", "rest"):
        command = next(c for c in put.json if c["name"] == name)
        assert command.get("contexts") == [0] or command.get("dm_permission") is False, command


async def test_only_the_starter_or_an_admin_ends_a_game_after_confirming(fake, bot):
    start = await fake.interaction("game start", user="alice")
    await start.wait_followups(1)
    cid = str(fake.channel("general").id)
    await bot.engine.create_character(cid, str(fake.user("bob").id), "Bram", "wizard")
    for who in ("bob", "mallory"):  # a player who did not start it, and a stranger
        if who == "mallory":
            fake.add_user("mallory")
        i = await fake.interaction("game end", user=who)
        assert (await i.wait_response())["data"]["content"] == "You are not permitted to use this command."
    ask = await fake.interaction("game end", user="alice")
    question = await ask.wait_original()
    assert question["flags"] & 64 and "cannot be resumed" in question["content"]
    # Someone else's press is answered privately, and changes nothing.
    stranger = await (await fake.component(question, "game-end-confirm", user="bob")).wait_response()
    assert stranger["data"]["flags"] & 64 and "alice's to answer" in stranger["data"]["content"]
    assert (await bot.engine.state(cid)).title
    keep = await fake.component(question, "game-end-cancel", user="alice")
    assert (await keep.wait_response())["data"]["content"] == "The game goes on."
    assert (await bot.engine.state(cid)).title  # still running
    ask = await fake.interaction("game end", user="alice")
    click = await fake.component(await ask.wait_original(), "game-end-confirm", user="alice")
    assert (await click.wait_response())["data"]["content"] == "Done."
    [said] = await fake.wait_for("POST", r"/channels/\d+/messages")
    assert "ended by" in said.json["content"] and said.json["allowed_mentions"]["parse"] == []
    fake.add_user("gm", permissions="manage_guild")
    await bot.engine.start_game(cid, started_by=str(fake.user("alice").id))
    admin = await fake.interaction("game end", user="gm")
    assert "cannot be resumed" in (await admin.wait_original())["content"]  # an admin may too


async def test_an_old_end_question_never_ends_a_later_game(fake, bot):
    start = await fake.interaction("game start", user="alice")
    await start.wait_followups(1)
    cid = str(fake.channel("general").id)
    first = await fake.interaction("game end", user="alice")
    stale = await first.wait_original()
    again = await fake.interaction("game end", user="alice")  # asked twice; the second is confirmed
    click = await fake.component(await again.wait_original(), "game-end-confirm", user="alice")
    assert (await click.wait_response())["data"]["content"] == "Done."
    await bot.engine.start_game(cid, started_by=str(fake.user("alice").id))
    later = (await bot.engine.session(cid)).id
    old = await (await fake.component(stale, "game-end-confirm", user="alice")).wait_response()
    assert "already ended" in old["data"]["content"]
    assert (await bot.engine.session(cid)).id == later  # the new game plays on


async def test_replies_to_an_npc_still_reach_it_after_a_restart(fake, bot, model):
    await game_with_players(bot, fake)
    model.add('"Fog."')
    await fake.message("@Ysolde Weather?", author="alice")
    [post] = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+")
    bot.voices = type(bot.voices)()  # a restarted bot remembers no webhooks
    model.add('"More fog."')
    await fake.message("And tomorrow?", author="alice", message_reference=post.response["id"])
    await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+", count=2)
    assert model.requests[-1].agent is AgentType.NPC


async def test_a_failing_npc_webhook_falls_back_and_never_says_try_again(fake, bot, model):
    await game_with_players(bot, fake)
    model.add('"Take this pass." <modify_inventory item="harbour pass" quantity="1"/>', ' "Go on."')
    await fake.message("@Ysolde May I pass?", author="alice")  # creates the webhook
    [first] = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+")
    fake.fail("POST", re.escape(first.path), status=403, code=50013, times=5)  # the NPC webhook only, not follow-ups
    model.add('"Safe travels."')
    i = await fake.interaction("act", {"action": "@Ysolde Thank you!"}, user="alice")
    await i.wait_followups(1)
    [spoken] = await fake.wait_for("POST", r"/channels/\d+/messages", where=lambda c: "Safe travels" in (c.json or {}).get("content", ""))
    assert spoken.json["content"] == '**Ysolde Marrick:** "Safe travels."'
    assert all("try again" not in (f.get("content") or "") for f in i.followups)


async def test_an_error_reply_to_a_deleted_message_still_reaches_the_channel(fake, bot, model):
    await game_with_players(bot, fake)
    model.latency = 0.02
    model.add("Slow answer.", ModelError("boom"))
    await fake.message("First.", author="alice")
    second = await fake.message("Second.", author="bob")
    del fake.messages[int(second["id"])]
    await fake.wait_for("POST", r"/channels/\d+/messages", count=2,
                        where=lambda c: c.status == 200 and "Nothing happened" in (c.json or {}).get("content", "")
                        or (c.json or {}).get("content") == "Slow answer.")


async def test_refusals_stay_private_when_the_channel_is_busy(tmp_path, model):
    async with FakeDiscord(interaction_timeout=0.4) as fake, lorekeeper(tmp_path, fake, model) as bot:
        await busy_channel(bot, fake, model)
        again = await fake.interaction("char create", {"name": "Other", "class": "bard"}, user="bob")
        [refusal] = await again.wait_followups(1, timeout=10)
        assert refusal["content"].startswith("You already play Bram") and refusal["flags"] & 64


async def test_messages_a_crashed_bot_never_answered_are_reported_once_at_start_up(tmp_path, fake, model):
    from engine.state import Message

    cid = str(fake.channel("general").id)
    async with Store.open(tmp_path / "bot.db") as store:  # the previous run: it took the message, then died
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(3)))
        await engine.start_game(cid)
        await engine.create_character(cid, str(fake.user("alice").id), "Aria", "fighter")
        session = await engine.session(cid)
        store.instance = "a-process-that-is-gone"
        await store.begin_turn(session.id, Message(channel_id=cid, author_id=str(fake.user("alice").id),
                                                   author_name="alice", agent=AgentType.PLAYER,
                                                   text="I pull the lever. @everyone look!"))
        await store.begin_turn(session.id, Message(channel_id="terminal:terminal", author_id="local", author_name="me",
                                                   agent=AgentType.PLAYER, text="Not Discord's to report."))
    async with lorekeeper(tmp_path, fake, model) as bot:
        [note] = await fake.wait_for("POST", rf"/channels/{cid}/messages")
        assert "interrupted" in note.json["content"] and "“I pull the lever. @everyone look!”" in note.json["content"]
        assert note.json["allowed_mentions"] == {"parse": []}
        assert len(fake.calls("POST", r"/channels/\d+/messages")) == 1  # the terminal's message is left alone
        session = await bot.engine.session(cid)
        [kept] = [m for m in await bot.engine.deps.store.messages(session.id, include_failed=True)
                  if m.text.startswith("I pull")]
        assert kept.status == "interrupted"
    async with lorekeeper(tmp_path, fake, model):
        await asyncio.sleep(0.2)
        assert len(fake.calls("POST", rf"/channels/{cid}/messages")) == 1  # reported once, not at every start


async def test_messages_waiting_behind_a_turn_are_stored_as_they_arrive(fake, bot, model):
    """The bot queues a channel's turns itself: each message is in the database before it waits, so a crash while
    it waits cannot lose it; they are played in the order they came."""
    cid = await game_with_players(bot, fake)
    model.latency = 0.05  # the first reply takes a while
    model.add("The sea door groans open onto the dark.", "You raise it high.", "Bram follows.")
    await fake.message("I open the sea door.", author="alice")
    await asyncio.sleep(0.2)
    await fake.message("I raise the lantern.", author="alice")
    await fake.message("I follow her in.", author="bob")
    session = await bot.engine.session(cid)
    for _ in range(50):
        waiting = [(m.text, m.status) for m in await bot.engine.deps.store.messages(session.id, include_failed=True)
                   if m.agent is AgentType.PLAYER]
        if len(waiting) == 3:
            break
        await asyncio.sleep(0.02)
    assert waiting == [("I open the sea door.", "pending"), ("I raise the lantern.", "queued"),
                       ("I follow her in.", "queued")]
    for _ in range(200):
        played = [m.text for m in await bot.engine.deps.store.messages(session.id)]
        if len(played) >= 7:
            break
        await asyncio.sleep(0.05)
    assert played[1:] == ["I open the sea door.", "The sea door groans open onto the dark.", "I raise the lantern.",
                          "You raise it high.", "I follow her in.", "Bram follows."]  # in the order they came


async def test_retry_and_undo_over_discord(fake, bot, model):
    cid = await game_with_players(bot, fake)
    model.add("You climb. <roll>1d20+2</roll>", " You reach the top.")
    i = await fake.interaction("act", {"action": "I climb the harbour wall."}, user="alice")
    [first] = await i.wait_followups(1)
    refused = await fake.interaction("retry", user="bob")  # not bob's turn: refused privately, before any defer
    response = await refused.wait_response()
    assert response["type"] == 4 and response["data"]["flags"] & 64 and "Only" in response["data"]["content"]
    model.add("You climb again. <roll>1d20+2</roll>", " This time you slip back down.")
    again = await fake.interaction("retry", user="alice")
    assert (await again.wait_response())["type"] == 5
    [reply] = await again.wait_followups(1)
    assert reply["content"].startswith("You climb again. This time you slip back down.")
    assert first["content"].split("→")[1][:4] == reply["content"].split("→")[1][:4]  # the same dice
    state = await bot.engine.state(cid)
    fake.add_user("gm", permissions="manage_guild")
    undo = await fake.interaction("gm-admin undo", {"turns": 1}, user="gm")
    response = await undo.wait_response()
    assert response["type"] == 4 and "1 turn undone by" in response["data"]["content"]
    assert (await bot.engine.state(cid)).turn == state.turn - 1
    again = await fake.interaction("gm-admin undo", {"turns": 1}, user="gm")
    assert "no turn to undo" in (await again.wait_response())["data"]["content"]


async def test_an_admin_undo_lists_what_players_did_themselves_and_asks_first(fake, bot, model):
    cid = await game_with_players(bot, fake)
    model.add("The tide turns.")
    await (await fake.interaction("act", {"action": "I wait for the tide."}, user="alice")).wait_followups(1)
    await (await fake.interaction("rest", {"kind": "short"}, user="alice")).wait_response()
    rested = (await bot.engine.state(cid)).model_dump_json()
    fake.add_user("gm", permissions="manage_guild")
    undo = await fake.interaction("gm-admin undo", {"turns": 1}, user="gm")
    question = await undo.wait_original()
    assert question["flags"] & 64 and "Aria takes a short rest." in question["content"]
    assert (await bot.engine.state(cid)).model_dump_json() == rested  # nothing undone while it asks
    nosy = await (await fake.component(question, "undo-confirm", user="alice")).wait_response()
    assert nosy["data"]["flags"] & 64 and "gm's to answer" in nosy["data"]["content"]  # not alice's to press
    keep = await (await fake.component(question, "undo-cancel", user="gm")).wait_response()
    assert keep["data"]["content"] == "Nothing was undone."
    assert (await bot.engine.state(cid)).model_dump_json() == rested
    undo = await fake.interaction("gm-admin undo", {"turns": 1}, user="gm")
    click = await fake.component(await undo.wait_original(), "undo-confirm", user="gm")
    assert (await click.wait_response())["data"]["content"] == "Done."
    [said] = await fake.wait_for("POST", rf"/channels/{cid}/messages")
    assert "1 turn undone by" in said.json["content"]
    assert (await bot.engine.state(cid)).turn == 0


async def test_a_reply_streams_into_its_message_edited_as_it_grows(tmp_path, fake, model, monkeypatch):
    monkeypatch.setenv("LOREKEEPER_STREAM_INTERVAL", "0.05")
    async with lorekeeper(tmp_path, fake, model) as bot:
        await game_with_players(bot, fake)
        model.latency = 0.02
        text = "The tide creeps in, grain by grain, " * 8 + "and the bell tolls. <roll>1d20</roll>"
        model.add(text, " Nothing else stirs.")
        i = await fake.interaction("act", {"action": "I wait for the tide."}, user="alice")
        [posted] = await i.wait_followups(1, timeout=10)
        assert posted["content"].endswith("▌") and len(posted["content"]) < len(text)  # early, and still growing
        result_content = lambda: posted["content"]  # noqa: E731  (edited in place)
        await fake.wait_until(lambda: "-# 🎲 Aria: 1d20" in result_content(), 10, "the final edit")
        edits = fake.calls("PATCH", r"/webhooks/\d+/[\w-]+/messages/\w+")
        assert len(edits) >= 2 and not any("<roll>" in (c.json or {}).get("content", "") for c in edits)
        [first] = fake.calls("POST", r"/webhooks/\d+/[\w-]+")
        streamed = [first.at, *(c.at for c in edits)]  # the final edit too: one post or edit per interval, at most
        assert all(b - a >= 0.045 for a, b in zip(streamed, streamed[1:])), [b - a for a, b in zip(streamed, streamed[1:])]
        assert result_content().startswith("The tide creeps in") and "▌" not in result_content()
        assert "and the bell tolls. Nothing else stirs.\n-# 🎲 Aria: 1d20 →" in result_content()
        assert all(c.json.get("allowed_mentions", {}).get("parse") == [] for c in edits if c.json)


async def test_a_long_streamed_reply_rolls_over_and_a_failed_one_is_taken_back(tmp_path, fake, model, monkeypatch):
    from engine.errors import ModelError

    monkeypatch.setenv("LOREKEEPER_STREAM_INTERVAL", "0.05")
    async with lorekeeper(tmp_path, fake, model) as bot:
        await game_with_players(bot, fake)
        model.latency = 0.005
        long = ("The fog thickens around the quay and the lamps gutter. " * 12 + "\n\n") * 4  # ~2,700 characters
        model.add([long[k:k + 40] for k in range(0, len(long), 40)])
        await fake.message("I wait for the fog to lift.", author="alice")
        def texts() -> list[str]:
            return [fake.messages[int(p.response["id"])]["content"] for p in fake.calls("POST", r"/channels/\d+/messages")]

        await fake.wait_until(lambda: " ".join(" ".join(texts()).split()) == " ".join(long.split()), 10, "the whole reply")
        texts = texts()
        assert len(texts) == 2 and all(len(t) <= 2000 for t in texts) and "▌" not in "".join(texts)
        assert " ".join(" ".join(texts).split()) == " ".join(long.split())  # the whole reply, split at 2,000
        before = len(fake.calls("POST", r"/channels/\d+/messages"))
        model.add(["The door creaks ", "open and ", ModelError("down", retryable=False)])
        model.latency = 0.1
        await fake.message("I open the door.", author="alice")
        await fake.wait_until(lambda: fake.calls("DELETE", r"/channels/\d+/messages/\d+"), 10, "the half reply taken back")
        apology = (await fake.wait_for("POST", r"/channels/\d+/messages", count=before + 2))[-1]
        deleted = fake.calls("DELETE", r"/channels/\d+/messages/\d+")
        assert len(deleted) == 1  # the half-told reply was taken back; the apology stands alone
        assert "The door creaks" not in apology.json["content"]


async def test_an_npc_reply_streams_through_her_webhook_and_is_edited_to_the_committed_words(tmp_path, fake, model,
                                                                                             monkeypatch):
    monkeypatch.setenv("LOREKEEPER_STREAM_INTERVAL", "0.05")
    async with lorekeeper(tmp_path, fake, model) as bot:
        await game_with_players(bot, fake)
        model.latency = 0.02
        words = '"Three weeks dark," she says, turning the lamp wick, "and two boats lost on the Teeth since." ' * 3
        model.add(words + '<modify_inventory item="harbour pass" quantity="1"/>', ' "Keep it dry."')
        i = await fake.interaction("act", {"action": "@Ysolde what happened to the lighthouse?"}, user="alice")
        [note] = await i.wait_followups(1, timeout=10)
        assert note["content"] == "**alice** → Ysolde Marrick: @Ysolde what happened to the lighthouse?"
        [post] = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+$", timeout=10,
                                     where=lambda c: c.path.split("/")[2] != str(fake.application_id))
        assert post.json["username"] == "Ysolde Marrick" and post.json["content"].endswith("▌")
        assert post.json["allowed_mentions"] == {"parse": []}
        message = fake.messages[int(post.response["id"])]
        # The final edit: the last stream edit may already hold the last words, but still with its cursor.
        await fake.wait_until(lambda: "-# •" in message["content"], 10, "the final edit")
        edits = fake.calls("PATCH", rf"/webhooks/\d+/[\w-]+/messages/{post.response['id']}")
        assert edits and not any("<modify" in (c.json or {}).get("content", "") for c in edits)
        assert message["content"].startswith('"Three weeks dark,"') and "▌" not in message["content"]
        assert message["content"].endswith('since." "Keep it dry."\n-# • Aria gains 1 × harbour pass (now 1).')
        assert len(fake.calls("POST", r"/webhooks/\d+/[\w-]+$")) == 2  # the note and one NPC message: no reposts


async def test_a_streamed_npc_reply_without_webhooks_keeps_her_name_and_a_failed_one_is_taken_back(
        tmp_path, fake, model, monkeypatch):
    monkeypatch.setenv("LOREKEEPER_STREAM_INTERVAL", "0.05")
    fake.set_overwrite("general", fake.bot_role, deny="manage_webhooks")
    async with lorekeeper(tmp_path, fake, model) as bot:
        await game_with_players(bot, fake)
        model.latency = 0.005
        paragraph = ("tides " * 250).strip()
        said = (paragraph + "\n\n") * 3
        model.add([said[k:k + 50] for k in range(0, len(said), 50)])
        await fake.message("@Ysolde Tell me everything.", author="alice")

        def spoken() -> list[str]:
            return [fake.messages[int(p.response["id"])]["content"] for p in fake.calls("POST", r"/channels/\d+/messages")
                    if p.status == 200 and int(p.response["id"]) in fake.messages]
        await fake.wait_until(lambda: len(spoken()) == 3 and "▌" not in "".join(spoken())
                              and "".join(spoken()).count("tides") == 750, 10, "the whole reply")
        assert all(t.startswith("**Ysolde Marrick:** ") and len(t) <= 2000 for t in spoken())
        assert not fake.calls("POST", r"/webhooks/\d+/[\w-]+")
        from engine.errors import ModelError
        model.add(['"Once, long ago, ', 'the lamp ', ModelError("down", retryable=False)])
        model.latency = 0.1
        await fake.message("@Ysolde And then?", author="alice")
        await fake.wait_until(lambda: fake.calls("DELETE", r"/channels/\d+/messages/\d+"), 10, "the half reply taken back")
        await asyncio.sleep(0.2)
        assert not any("Once, long ago" in t for t in spoken())


async def test_an_npc_webhook_deleted_while_she_speaks_still_gets_her_whole_reply_posted(tmp_path, fake, model,
                                                                                        monkeypatch):
    monkeypatch.setenv("LOREKEEPER_STREAM_INTERVAL", "0.05")
    async with lorekeeper(tmp_path, fake, model) as bot:
        await game_with_players(bot, fake)
        model.latency = 0.05
        model.add(['"The lamp ', 'went dark ', 'three weeks ', 'ago, ', 'and no one ', 'has climbed ', 'since."'])
        await fake.message("@Ysolde What happened?", author="alice")
        await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+$", timeout=10)
        fake.webhooks.clear()  # an admin deleted it mid-reply: edits now fail
        posts = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+$", count=2, timeout=10,
                                    where=lambda c: c.status == 200)
        assert posts[1].json["content"] == '"The lamp went dark three weeks ago, and no one has climbed since."'
        assert posts[1].json["username"] == "Ysolde Marrick" and len(fake.calls("POST", r"/channels/\d+/webhooks")) == 2


async def test_server_settings_choose_who_starts_games_and_how_much_mechanics_shows(tmp_path, fake, model):
    gm = fake.add_user("gm", permissions="manage_guild")
    storytellers = fake.add_role("Storytellers")
    carol = fake.add_user("carol", roles=[storytellers])
    async with lorekeeper(tmp_path, fake, model) as bot:
        shown = await fake.interaction("gm-admin config", user=gm)
        text = (await shown.wait_response())["data"]["content"]
        assert "Mechanics under replies: full" in text and "Who may start games: anyone" in text
        bad = await fake.interaction("gm-admin config", {"who_starts": "everyone", "role": storytellers}, user=gm)
        assert "only counts with who_starts=role" in (await bad.wait_response())["data"]["content"]
        saved = await fake.interaction("gm-admin config", {"mechanics": "dice", "role": storytellers}, user=gm)
        text = (await saved.wait_response())["data"]["content"]
        assert "Saved by gm" in text and "dice" in text and "members with the role Storytellers" in text

        refused = await fake.interaction("game start", {"thread": True}, user="alice")  # not an admin, not the role
        response = await refused.wait_response()
        assert response["type"] == 4 and response["data"]["flags"] & 64 and "only admins and" in response["data"]["content"]
        assert not fake.calls("POST", r"/channels/\d+/threads")
        started = await fake.interaction("game start", user=carol)  # has the role
        assert (await started.wait_response())["type"] == 5
        await started.wait_followups(1)
        cid = str(fake.channel("general").id)
        await bot.engine.create_character(cid, str(fake.user("alice").id), "Aria", "fighter")
        model.add('You pocket it. <roll>1d20</roll> <modify_inventory item="harbour pass" quantity="1"/>', " Done.")
        i = await fake.interaction("act", {"action": "I pocket the pass."}, user="alice")
        [reply] = await i.wait_followups(1)
        assert "-# 🎲 Aria: 1d20 →" in reply["content"] and "harbour pass (now 1)" not in reply["content"]

    async with lorekeeper(tmp_path, fake, model) as bot:  # a restart keeps them: they are in the database
        again = await fake.interaction("gm-admin config", {"mechanics": "story", "who_starts": "admins"}, user=gm)
        text = (await again.wait_response())["data"]["content"]
        assert "story" in text and "admins only" in text
        model.add("You wait. <roll>1d20</roll>", " Nothing.")
        i = await fake.interaction("act", {"action": "I wait."}, user="alice")
        [reply] = await i.wait_followups(1)
        assert reply["content"] == "You wait. Nothing."
        refused = await fake.interaction("game start", {"thread": True}, user=carol)  # the role no longer counts
        assert "only admins start games" in (await refused.wait_response())["data"]["content"]


async def test_talk_and_use_offer_who_is_here_and_what_you_carry(fake, bot, model):
    await game_with_players(bot, fake)
    offered = await fake.autocomplete("talk", {"npc": "ys", "words": "x"}, focused="npc")
    assert (await offered.wait_response())["data"]["choices"] == [{"name": "Ysolde Marrick", "value": "ysolde-marrick"}]
    everyone = await fake.autocomplete("talk", {"npc": "", "words": "x"}, focused="npc")
    names = [c["name"] for c in (await everyone.wait_response())["data"]["choices"]]
    assert "Ysolde Marrick" in names and "Odile Farrow" not in names  # Odile is at the tavern, not here
    model.add('"The lamp went dark three weeks ago."')
    i = await fake.interaction("talk", {"npc": "ysolde-marrick", "words": "What happened?"}, user="alice")
    [note] = await i.wait_followups(1)
    assert note["content"] == "**alice** → Ysolde Marrick: @Ysolde Marrick What happened?"
    [spoken] = await fake.wait_for("POST", r"/webhooks/\d+/[\w-]+$", where=lambda c: c.path.split("/")[2] != str(fake.application_id))
    assert spoken.json["username"] == "Ysolde Marrick"
    away = await fake.interaction("talk", {"npc": "Odile", "words": "Hello?"}, user="alice")
    response = await away.wait_response()
    assert response["type"] == 4 and response["data"]["flags"] & 64 and "Odile Farrow is not here" in response["data"]["content"]

    pack = await fake.autocomplete("use", {"item": "po"}, focused="item", user="alice")
    assert (await pack.wait_response())["data"]["choices"] == [{"name": "healing potion ×1", "value": "healing potion"}]
    fake.add_user("mallory")
    stranger = await fake.autocomplete("use", {"item": ""}, focused="item", user="mallory")  # no character: nothing
    assert (await stranger.wait_response())["data"]["choices"] == []
    model.add('You drink it. <update_hp target="Aria" amount="4"/>', " Warmth spreads.")
    used = await fake.interaction("use", {"item": "Healing  Potion", "how": "now, before the fight"}, user="alice")
    await used.wait_followups(1)
    [player_line] = [m for m in await bot.engine.deps.store.messages((await bot.engine.session(
        str(fake.channel("general").id))).id) if m.author_name == "alice"][-1:]
    assert player_line.text == "I use my healing potion now, before the fight."
    missing = await fake.interaction("use", {"item": "rope"}, user="alice")
    assert "Aria carries no rope" in (await missing.wait_response())["data"]["content"]


async def test_adventures_are_offered_by_title(fake, bot):
    offered = await fake.autocomplete("game start", {"adventure": "lantern"}, focused="adventure")
    [choice] = (await offered.wait_response())["data"]["choices"]
    assert choice["value"] == "saltmere-lantern" and choice["name"].endswith("(saltmere-lantern)")
    assert choice["name"] != "saltmere-lantern (saltmere-lantern)"  # the title leads


async def test_limits_refuse_politely_and_admins_see_the_days_use(fake, bot, model):
    config = bot.engine.deps.config
    bot.engine.deps.config = config.model_copy(update={"limits": config.limits.model_copy(
        update={"user_turns": 1, "user_window_s": 600, "guild_daily_tokens": 1_000_000})})
    cid = str(fake.channel("general").id)
    await bot.engine.start_game(cid, str(fake.guild_id))
    await bot.engine.create_character(cid, str(fake.user("alice").id), "Aria", "fighter")
    model.add("The gulls wheel.")
    i = await fake.interaction("act", {"action": "I watch the gulls."}, user="alice")
    await i.wait_followups(1)
    refused = await (await fake.interaction("act", {"action": "I watch again."}, user="alice")).wait_response()
    assert refused["type"] == 4 and refused["data"]["flags"] & 64  # private, before any "thinking"
    assert refused["data"]["content"].startswith("Easy there: that is 1 turns in 10 min")
    # Typed in the channel: a ⏳ each time, the reason once (not under every message).
    for text in ("Hello?", "Anyone?"):
        await fake.message(text, author="alice")
    await fake.wait_for("PUT", r"/channels/\d+/messages/\d+/reactions/.+/@me", count=2)
    await asyncio.sleep(0.2)
    said = [c.json["content"] for c in fake.calls("POST", r"/channels/\d+/messages")]
    assert sum("Easy there" in s for s in said) == 1 and len(fake.calls("POST", r"/channels/\d+/typing")) == 1
    fake.add_user("gm", permissions="manage_guild")
    data = (await (await fake.interaction("gm-admin telemetry", user="gm")).wait_response())["data"]
    [today] = [f for f in data["embeds"][0]["fields"] if f["name"] == "This server"]
    assert re.fullmatch(r"Today \(UTC \d{4}-\d\d-\d\d\): [\d,]+ tokens of 1,000,000 \(0%\), 1 turn\.", today["value"])


def guild_on_shard(shard: int, count: int) -> int:
    """A server id, as if created now, whose events Discord sends to `shard` of `count` ((id >> 22) % count)."""
    ms = int(time.time() * 1000) - DISCORD_EPOCH
    return (ms - ms % count + shard) << 22 | 1 << 17


async def interrupted_turn(tmp_path, fake: FakeDiscord, model: ScriptedModel, channel: str = "general") -> str:
    """A game whose process took a player's message and died before answering it."""
    from engine.state import Message

    cid = str(fake.channel(channel).id)
    async with Store.open(tmp_path / "bot.db") as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(3)))
        await engine.start_game(cid, str(fake.guild_id))
        await engine.create_character(cid, str(fake.user("alice").id), "Aria", "fighter")
        store.instance = "a-process-that-is-gone"
        await store.begin_turn((await engine.session(cid)).id, Message(
            channel_id=cid, author_id=str(fake.user("alice").id), author_name="alice", agent=AgentType.PLAYER,
            text="I pull the lever."))
    return cid


async def statuses(bot: LorekeeperBot, cid: str) -> list[str]:
    session = await bot.engine.session(cid)
    return [m.status for m in await bot.engine.deps.store.messages(session.id, include_failed=True)]


async def test_two_processes_split_by_shards_each_do_only_their_part(tmp_path, model):
    """Shard 0's process syncs the commands; the server's shard's process gets its events, answers its slash
    commands and reports its interrupted turns; the other process touches none of them."""
    async with FakeDiscord(guild_id=guild_on_shard(1, 2)) as fake:
        cid = await interrupted_turn(tmp_path, fake, model)
        async with lorekeeper(tmp_path, fake, model, shard_count=2, shard_ids="0") as first:
            assert [f.d["shard"] for f in fake.gateway_received(2)] == [[0, 2]]
            assert sorted(first.shards) == [0] and not first.guilds  # READY with no servers: none is on shard 0
            assert len(fake.calls("PUT", rf"/applications/\d+/guilds/{fake.guild_id}/commands")) == 1
            await first.report_interrupted()  # as at its start (again, to be sure it has run): not its server
            assert await statuses(first, cid) == ["ok", "pending"]
            async with lorekeeper(tmp_path, fake, model, shard_count=2, shard_ids="1") as second:
                assert [f.d["shard"] for f in fake.gateway_received(2)] == [[0, 2], [1, 2]]
                assert [g.id for g in second.guilds] == [fake.guild_id]
                [note] = await fake.wait_for("POST", rf"/channels/{cid}/messages")
                assert "interrupted" in note.json["content"] and await statuses(second, cid) == ["ok", "interrupted"]
                assert len(fake.calls("PUT", r"/applications/\d+/guilds/\d+/commands")) == 1  # not again
                model.add("The lever groans, and the lantern turns.")
                i = await fake.interaction("act", {"action": "I pull the lever again."}, user="alice")
                assert (await i.wait_response())["type"] == 5
                [reply] = await i.wait_followups(1)
                assert reply["content"].startswith("The lever groans")
        assert not fake.calls("GET", "/gateway/bot")  # the count was given: nothing to ask Discord
        assert fake.unknown_routes == [] and fake.internal_errors == []


async def test_with_no_shard_settings_discord_recommends_the_count_and_one_process_runs_them_all(
        tmp_path, model, monkeypatch):
    async def no_wait(self, shard_id, *, initial=False):  # discord.py waits 5 s between IDENTIFYs, as Discord asks
        pass

    monkeypatch.setattr(LorekeeperBot, "before_identify_hook", no_wait)
    async with FakeDiscord(shards=2) as fake:
        cid = await interrupted_turn(tmp_path, fake, model)
        async with lorekeeper(tmp_path, fake, model) as bot:
            assert len(fake.calls("GET", "/gateway/bot")) == 1 and bot.shard_count == 2
            assert sorted(f.d["shard"] for f in fake.gateway_received(2)) == [[0, 2], [1, 2]]
            assert sorted(bot.shards) == [0, 1] and [g.id for g in bot.guilds] == [fake.guild_id]
            assert bot.get_guild(fake.guild_id).shard_id == fake.guild_id >> 22 & 1
            await fake.wait_for("POST", rf"/channels/{cid}/messages")  # every server is this process's
            model.add("You wait.")
            i = await fake.interaction("act", {"action": "I wait."}, user="alice")
            [reply] = await i.wait_followups(1)
            assert reply["content"].startswith("You wait.")
        assert fake.internal_errors == []


async def test_check_and_save_roll_from_the_sheet_and_the_gm_sees_them(fake, bot, model):
    cid = await game_with_players(bot, fake)
    offered = await fake.autocomplete("check", {"skill": "sl"}, focused="skill", user="alice")
    assert (await offered.wait_response())["data"]["choices"] == [{"name": "Sleight of Hand", "value": "sleight of hand"}]
    said = (await (await fake.interaction("check", {"skill": "athletics", "advantage": "advantage"},
                                          user="alice")).wait_response())["data"]
    assert re.fullmatch(r"🎲 Aria: Athletics check \(proficient\) 1d20\+5 adv → \d+ \(2d20kh1 .*", said["content"])
    said = (await (await fake.interaction("save", {"ability": "wisdom"}, user="bob")).wait_response())["data"]
    assert re.fullmatch(r"🎲 Bram: Wisdom saving throw \(proficient\) 1d20\+3 → \d+ .*", said["content"])
    refused = (await (await fake.interaction("check", {"skill": "stelth"}, user="alice")).wait_response())["data"]
    assert refused["flags"] & 64 and "Did you mean stealth?" in refused["content"]
    session = await bot.engine.session(cid)
    lines = [m.text for m in await bot.engine.deps.store.messages(session.id) if m.agent is AgentType.PLAYER]
    assert lines[-2].startswith("Aria rolls 1d20+5 adv →") and lines[-2].endswith("for an Athletics check.")
    assert lines[-1].startswith("Bram rolls 1d20+3 →") and lines[-1].endswith("for a Wisdom saving throw.")


async def test_a_character_is_imported_from_an_attached_file(fake, bot, model):
    cid = str(fake.channel("general").id)
    await bot.engine.start_game(cid, str(fake.guild_id))
    await bot.engine.configure_server(str(fake.guild_id), cid, starting_level=5)
    good = b'{"name": "Vex", "class": "rogue", "level": 5, "skills": ["stealth", "acrobatics"]}'
    said = await (await fake.interaction("char import", {"file": ("vex.json", good)}, user="alice")).wait_response()
    embed = said["data"]["embeds"][0]
    assert said["data"]["content"] == "**Vex** the human rogue joins the party." and embed["title"] == "Vex"
    assert any(f["name"] == "Proficiencies" and "skills: Stealth (expertise), Acrobatics (expertise)" in f["value"] for f in embed["fields"])
    bad = await (await fake.interaction("char import", {"file": ("zed.json", b'{"name": "Zed", "class": "rogue", '
                                                                              b'"lvl": 2}')}, user="bob")).wait_response()
    assert bad["data"]["flags"] & 64 and "'lvl' is not a field here: did you mean 'level'?" in bad["data"]["content"]
    junk = await (await fake.interaction("char import", {"file": ("x.json", b"{oops")}, user="bob")).wait_response()
    assert junk["data"]["flags"] & 64 and junk["data"]["content"].startswith("x.json cannot be used: it is not JSON")
    assert "Vex" in [c.name for c in (await bot.engine.state(cid)).characters.values()]


async def test_char_create_takes_rolled_or_bought_scores_and_refuses_others_privately(fake, bot, model):
    cid = str(fake.channel("general").id)
    await bot.engine.start_game(cid, str(fake.guild_id))
    rolled = await (await fake.interaction("char create", {"name": "Cora", "class": "bard", "scores": "roll"},
                                           user="alice")).wait_response()
    content = rolled["data"].get("content") or ""
    if not content:  # deferred, then announced
        content = (await fake.wait_for("POST", r"/channels/\d+/messages"))[0].json["content"]
    assert re.search(r"joins the party\. Ability scores: 4d6 dropping the lowest: (\d\+\d\+\d \(dropped \d\)(; )?){6}\.",
                     content)
    refused = await (await fake.interaction("char create", {"name": "Bo", "class": "rogue", "scores": "18 8 8 8 8 8"},
                                            user="bob")).wait_response()
    assert refused["data"]["flags"] & 64 and "each score is 8 to 15" in refused["data"]["content"]


async def test_cast_offers_your_spells_and_who_is_here_and_the_gm_sees_it(fake, bot, model):
    cid = await game_with_players(bot, fake)
    offered = await fake.autocomplete("cast", {"spell": "m"}, focused="spell", user="bob")
    choices = (await offered.wait_response())["data"]["choices"]
    assert choices == [{"name": "Mage Hand (cantrip)", "value": "Mage Hand"},
                       {"name": "Magic Missile (1st level)", "value": "Magic Missile"},
                       {"name": "Mage Armor (1st level)", "value": "Mage Armor"}]
    fighter = await fake.autocomplete("cast", {"spell": ""}, focused="spell", user="alice")
    assert (await fighter.wait_response())["data"]["choices"] == []  # a fighter casts nothing
    whom = await fake.autocomplete("cast", {"spell": "Magic Missile", "target": "ys"}, focused="target", user="bob")
    assert (await whom.wait_response())["data"]["choices"] == [{"name": "Ysolde Marrick", "value": "Ysolde Marrick"}]
    more = await fake.autocomplete("cast", {"spell": "Magic Missile", "target": "Ysolde Marrick, "}, focused="target",
                                   user="bob")
    names = [c["value"] for c in (await more.wait_response())["data"]["choices"]]
    assert "Ysolde Marrick, Aria" in names and "Ysolde Marrick, Ysolde Marrick" not in names
    ask = await fake.interaction("cast", {"spell": "Magic Missile", "target": "Ysolde Marrick"}, user="bob")
    question = await ask.wait_original()  # she is no enemy: asked privately first (tests/test_bot_fair.py)
    assert question["flags"] & 64 and "Cast Magic Missile at Ysolde Marrick anyway?" in question["content"]
    await (await fake.component(question, "strike-confirm", user="bob")).wait_response()
    [posted] = await fake.wait_for("POST", r"/channels/\d+/messages")
    said = {"data": posted.json}
    assert said["data"]["content"].startswith("✨ Bram casts Magic Missile (1st-level slot) at Ysolde Marrick. Dart 1")
    assert said["data"]["content"].endswith("Slots left: 1st 1/2.")
    refused = (await (await fake.interaction("cast", {"spell": "fireball", "target": "Ysolde Marrick"},
                                             user="bob")).wait_response())["data"]
    assert refused["flags"] & 64 and refused["content"].startswith("Bram has not prepared Fireball.")
    again = (await (await fake.interaction("cast", {"spell": "Fire Bolt", "target": "Ysolde Marrick", "level": 2},
                                           user="bob")).wait_response())["data"]
    assert again["flags"] & 64 and "Fire Bolt is a cantrip and uses no spell slot" in again["content"]
    session = await bot.engine.session(cid)
    [line] = [m for m in await bot.engine.deps.store.messages(session.id) if m.agent is AgentType.PLAYER]
    assert line.text == said["data"]["content"].removeprefix("✨ ")  # the GM reads what the table read
    sheet = (await (await fake.interaction("char sheet", user="bob")).wait_response())["data"]["embeds"][0]
    [casting] = [f["value"] for f in sheet["fields"] if f["name"] == "Spellcasting"]
    assert casting.startswith("Intelligence · spell attack +5 · save DC 13 · slots 1st 1/2\nCantrips: Fire Bolt")


async def test_char_create_offers_species_and_backgrounds_and_the_sheet_shows_them(fake, bot, model):
    cid = str(fake.channel("general").id)
    await bot.engine.start_game(cid, str(fake.guild_id))
    offered = await fake.autocomplete("char create", {"name": "Tor", "class": "cleric", "species": "dw"},
                                      focused="species", user="alice")
    assert (await offered.wait_response())["data"]["choices"] == [{"name": "hill dwarf", "value": "dwarf"}]
    offered = await fake.autocomplete("char create", {"name": "Tor", "class": "cleric", "background": "ac"},
                                      focused="background", user="alice")
    assert (await offered.wait_response())["data"]["choices"] == [{"name": "acolyte (insight, religion)",
                                                                   "value": "acolyte"}]
    made = await (await fake.interaction("char create", {"name": "Tor", "class": "cleric", "species": "dwarf",
                                                         "background": "dockhand"}, user="alice")).wait_response()
    assert made["data"]["content"] == "**Tor** the hill dwarf cleric joins the party."
    embed = made["data"]["embeds"][0]
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert embed["description"] == "Level 1 hill dwarf cleric · dockhand"
    assert fields["Armour class"] == "16 (scale mail, shield)" and fields["Speed"] == "25 ft"
    assert fields["Weapons (to hit, damage)"].splitlines() == ["mace +3, 1d6+1 bludgeoning",
                                                                "light crossbow +2, 1d8 piercing, range 80/320 ft"]
    assert "Disciple of Life" in fields["Features and traits"] and "Darkvision" in fields["Features and traits"]
    assert "Wharf Friends" in fields["Features and traits"] and fields["Languages"].startswith("Common, Dwarvish")
    assert sum(len(f["name"]) + len(f["value"]) for f in embed["fields"]) + len(embed["description"]) < 6000
    refused = await (await fake.interaction("char create", {"name": "Bo", "class": "rogue", "species": "orc"},
                                            user="bob")).wait_response()
    assert refused["data"]["flags"] & 64 and "'orc' is not a species I know" in refused["data"]["content"]
    assert len((await bot.engine.state(cid)).characters) == 1


async def test_attack_offers_your_weapons_and_targets_and_deals_damage(fake, bot, model):
    cid = await game_with_players(bot, fake)
    offered = await fake.autocomplete("attack", {"weapon": "l"}, focused="weapon", user="alice")
    assert (await offered.wait_response())["data"]["choices"] == [
        {"name": "longsword +5, 1d8+3 slashing", "value": "longsword"},
        {"name": "light crossbow +4, 1d8+2 piercing, range 80/320 ft", "value": "light crossbow"}]
    targets = await fake.autocomplete("attack", {"weapon": "longsword", "target": "ys"}, focused="target", user="alice")
    assert (await targets.wait_response())["data"]["choices"] == [{"name": "Ysolde Marrick", "value": "Ysolde Marrick"}]
    before = (await bot.engine.state(cid)).npcs["ysolde-marrick"].hp
    ask = await fake.interaction("attack", {"weapon": "longsword", "target": "Ysolde Marrick", "advantage": "advantage"},
                                 user="alice")
    question = await ask.wait_original()  # she is no enemy: asked privately first (tests/test_bot_fair.py)
    await (await fake.component(question, "strike-confirm", user="alice")).wait_response()
    [posted] = await fake.wait_for("POST", r"/channels/\d+/messages")
    text = posted.json["content"]
    assert text.startswith("⚔️ Aria attacks Ysolde Marrick with longsword: 1d20+5 adv → ")
    after = (await bot.engine.state(cid)).npcs["ysolde-marrick"].hp
    assert (after == before) == (", miss" in text)
    session = await bot.engine.session(cid)
    lines = [m.text for m in await bot.engine.deps.store.messages(session.id) if m.agent is AgentType.PLAYER]
    assert lines[-1] == text.removeprefix("⚔️ ").replace("\\", "")
    refused = await (await fake.interaction("attack", {"weapon": "rapier"}, user="alice")).wait_response()
    assert refused["data"]["flags"] & 64 and "Aria carries no rapier" in refused["data"]["content"]


async def test_char_levelup_raises_the_level_and_tells_the_table(fake, bot, model):
    cid = await game_with_players(bot, fake)
    gm = fake.add_user("gm", permissions="manage_guild")
    early = await (await fake.interaction("char levelup", {}, user="bob")).wait_response()
    assert early["data"]["flags"] & 64 and "Bram has 0 XP; level 2 needs 300 (300 more)." in early["data"]["content"]
    denied = await (await fake.interaction("gm-admin award", {"xp": 300, "to": "Bram"}, user="bob",
                                                strict=False)).wait_response()
    assert denied["data"]["flags"] & 64 and (await bot.engine.state(cid)).characters[str(fake.user("bob").id)].xp == 0
    both = await (await fake.interaction("gm-admin award", {"xp": 30, "milestone": True}, user=gm)).wait_response()
    assert both["data"]["flags"] & 64 and "either xp" in both["data"]["content"]
    awarded = await (await fake.interaction("gm-admin award", {"xp": 300, "to": "Bram", "reason": "the wreckers"},
                                            user=gm)).wait_response()
    assert awarded["data"]["content"] == ("🏅 Bram gains 300 XP for the wreckers. Bram has earned a level: the player "
                                          "may take it with /levelup.")
    session = await bot.engine.session(cid)
    told = (await bot.engine.deps.store.messages(session.id))[-1]
    assert told.text.endswith("(Awarded by gm.)") and told.author_name == "Narrator"
    said = await (await fake.interaction("char levelup", {"hp": "roll"}, user="bob")).wait_response()
    assert re.fullmatch(r"⬆️ Bram reaches level 2: \+\d HP \(rolled 1d6 → \d, CON \+2\), max HP \d+\. New: Evocation "
                        r"Savant .*", said["data"]["content"])
    assert (await bot.engine.state(cid)).characters[str(fake.user("bob").id)].level == 2
    assert said["data"]["embeds"][0]["description"].startswith("Level 2 human wizard")

    milestone = await (await fake.interaction("gm-admin config", {"leveling": "milestone"}, user=gm)).wait_response()
    assert "Levels are earned by milestone" in milestone["data"]["content"]
    assert (await bot.engine.state(cid)).leveling == "milestone"  # the game here too, not only new ones
    refused = await (await fake.interaction("gm-admin award", {"xp": 900}, user=gm)).wait_response()
    assert refused["data"]["flags"] & 64 and "levels by milestone, not XP" in refused["data"]["content"]
    granted = await (await fake.interaction("gm-admin award", {"milestone": True, "to": "Aria"}, user=gm)).wait_response()
    assert granted["data"]["content"] == "🏅 A milestone: Aria may take a level (/levelup)."
    none = await (await fake.interaction("char levelup", {}, user="bob")).wait_response()
    assert none["data"]["flags"] & 64 and "Bram has no level to take" in none["data"]["content"]
    taken = await (await fake.interaction("char levelup", {}, user="alice")).wait_response()
    assert taken["data"]["content"].startswith("⬆️ Aria reaches level 2")
    again = await (await fake.interaction("char levelup", {}, user="alice")).wait_response()
    assert again["data"]["flags"] & 64 and "Aria has no level to take" in again["data"]["content"]


async def test_shop_buy_and_sell_deal_at_the_listed_prices_and_refuse_privately(fake, bot, model):
    cid = await game_with_players(bot, fake)
    alice = str(fake.user("alice").id)
    nothing = (await (await fake.interaction("shop", {}, user="alice")).wait_response())["data"]
    assert nothing["flags"] & 64 and nothing["embeds"][0]["title"] == "No shop here"
    session = await bot.engine.session(cid)
    session.state.current_location = "harrow-chandlery"
    session.state.characters[alice].currency = Currency(gp=60)
    await bot.engine.deps.store.save_state(session.id, session.state, [], version=session.version)
    shown = (await (await fake.interaction("shop", {}, user="alice")).wait_response())["data"]
    [field] = shown["embeds"][0]["fields"]
    assert field["name"] == "Harrow's Chandlery, kept by Pell Harrow (buys items back at 50% of their price)"
    assert "haggling" not in field["value"] and "potion-of-healing" not in field["value"]  # the GM's notes stay its own
    assert "• healing potion: 50 gp each, 3 left: A potion of healing, red" in field["value"] and "`/sell item`" in field["value"]
    offered = await fake.autocomplete("buy", {"item": "pot"}, focused="item", user="alice")
    assert (await offered.wait_response())["data"]["choices"] == [{"name": "healing potion (50 gp)",
                                                                   "value": "healing potion"}]
    bought = (await (await fake.interaction("buy", {"item": "healing potion"}, user="alice")).wait_response())["data"]
    assert bought["content"].startswith("🪙 Aria buys 1 × healing potion from Harrow's Chandlery for 50 gp")
    assert not bought.get("flags", 0) & 64
    poor = (await (await fake.interaction("buy", {"item": "healing potion", "quantity": 2}, user="alice")).wait_response())["data"]
    assert poor["flags"] & 64 and poor["content"].startswith("Aria cannot pay 100 gp")
    sold = (await (await fake.interaction("sell", {"item": "healing potion"}, user="alice")).wait_response())["data"]
    assert sold["content"].startswith("🪙 Aria sells 1 × healing potion to Harrow's Chandlery for 25 gp")
    state = await bot.engine.state(cid)
    assert state.characters[alice].item("healing potion").quantity == 1  # the one a fighter starts with
    lines = [m.text for m in await bot.engine.deps.store.messages(session.id) if m.agent is AgentType.PLAYER]
    assert lines[-2].startswith("Aria buys") and lines[-1].startswith("Aria sells")  # the GM sees both in the story


async def test_buy_and_sell_name_the_shop_where_several_trade(fake, bot, model):
    cid = await game_with_players(bot, fake)
    alice = str(fake.user("alice").id)
    session = await bot.engine.session(cid)
    session.state.current_location = "harrow-chandlery"
    session.state.characters[alice].currency = Currency(gp=1)
    session.state.shops["tarry-fence"] = Shop(id="tarry-fence", name="The Tarry Fence", location="harrow-chandlery",
                                              buys=True, stock=[ShopItem(item="torch")])
    await bot.engine.deps.store.save_state(session.id, session.state, [], version=session.version)
    offered = await fake.autocomplete("sell", {"item": "torch", "shop": "ta"}, focused="shop", user="alice")
    assert (await offered.wait_response())["data"]["choices"] == [{"name": "The Tarry Fence", "value": "tarry-fence"}]
    asked = (await (await fake.interaction("buy", {"item": "torch"}, user="alice")).wait_response())["data"]
    assert asked["flags"] & 64 and asked["content"].startswith("Several shops here sell 'torch': name one")
    bought = (await (await fake.interaction("buy", {"item": "torch", "shop": "tarry-fence"}, user="alice"))
              .wait_response())["data"]
    assert bought["content"].startswith("🪙 Aria buys 1 × torch from The Tarry Fence for 1 cp")


async def test_debug_reports_go_to_the_admin_privately_never_to_the_channel(fake, bot, model):
    cid = await game_with_players(bot, fake)
    gm = fake.add_user("gm", permissions="manage_guild")
    on = await (await fake.interaction("gm-admin debug", {"mode": "on"}, user=gm)).wait_response()
    assert on["data"]["flags"] & 64 and "by direct message" in on["data"]["content"]
    model.add('She knows. <discover_secret secret="green-glimmer"/>', " \"I saw a light.\"")
    i = await fake.interaction("act", {"action": "I ask about the cliff."}, user="alice")
    [reply] = await i.wait_followups(1)
    dm = fake.dm_channel(gm)
    [report] = await fake.wait_for("POST", rf"/channels/{dm.id}/messages")
    assert report.json["content"].startswith(f"Debug report for <#{cid}>:\n```\nagent: narrative")
    assert "discover_secret(secret='green-glimmer')" in report.json["content"]
    public = [c.json.get("content") or "" for c in fake.calls("POST", rf"/channels/{cid}/messages")]
    assert not any("green-glimmer" in text or "agent: narrative" in text for text in [*public, reply["content"]])
    await bot.engine.create_character(cid, str(gm.id), "Gwen", "cleric")
    model.add("Gulls.")  # an admin's own /act with debug: the report comes under it, privately
    asked = await fake.interaction("act", {"action": "I look around.", "debug": True}, user=gm)
    followups = await asked.wait_followups(2)
    assert followups[-1]["content"].startswith("```\nagent: narrative") and followups[-1]["flags"] & 64
    assert len(fake.calls("POST", rf"/channels/{dm.id}/messages")) == 1


async def test_admins_see_edit_remove_and_export_what_play_made(fake, bot, model):
    cid = await game_with_players(bot, fake)
    gm = fake.add_user("gm", permissions="manage_guild")
    model.add('<create_npc name="Gil Marsh" role="fishmonger" description="A stooped man."/>', " A man waves.")
    [reply] = await (await fake.interaction("act", {"action": "Who sells fish?"}, user="alice")).wait_followups(1)
    assert "New in the world: Gil Marsh, fishmonger, at Saltmere Quay." in reply["content"]
    listed = await (await fake.interaction("gm-admin world list", user=gm)).wait_response()
    assert listed["data"]["flags"] & 64 and "npc gil-marsh: Gil Marsh (fishmonger" in listed["data"]["content"]
    edited = await (await fake.interaction("gm-admin world edit", {"kind": "npc", "ref": "Gil Marsh", "field": "role",
                                                                   "value": "net mender"}, user=gm)).wait_response()
    assert edited["data"]["content"] == "The npc Gil Marsh (gil-marsh) now has role: net mender."
    refused = await (await fake.interaction("gm-admin world remove", {"kind": "npc", "ref": "ysolde-marrick"},
                                            user=gm)).wait_response()
    assert refused["data"]["flags"] & 64 and "written in the adventure" in refused["data"]["content"]
    denied = await (await fake.interaction("gm-admin world remove", {"kind": "npc", "ref": "gil-marsh"}, user="alice",
                                           strict=False)).wait_response()
    assert denied["data"]["flags"] & 64 and "gil-marsh" in (await bot.engine.state(cid)).npcs
    exported = await fake.interaction("gm-admin world export", {"adventure_id": "saltmere-campaign"}, user=gm)
    await exported.wait_response()
    [call] = fake.calls("POST", r"/interactions/\d+/[\w-]+/callback", where=lambda c: bool(c.files))
    text = call.files[0].data.decode()
    assert text.startswith("id: saltmere-campaign\n") and "net mender" in text
    removed = await (await fake.interaction("gm-admin world remove", {"kind": "npc", "ref": "gil-marsh"},
                                            user=gm)).wait_response()
    assert removed["data"]["content"] == "Removed the npc Gil Marsh (gil-marsh)."
    assert "gil-marsh" not in (await bot.engine.state(cid)).npcs


async def test_the_journal_and_canon_notes_on_discord(fake, bot, model):
    cid = await game_with_players(bot, fake)
    gm = fake.add_user("gm", permissions="manage_guild")
    added = await (await fake.interaction("gm-admin note add", {"text": "The bell was cast in 1022."},
                                          user=gm)).wait_response()
    assert added["data"]["flags"] & 64 and added["data"]["content"] == "Note n1 added: The bell was cast in 1022."
    secret = await (await fake.interaction("gm-admin note add", {"text": "Odile waters the ale.", "gm_only": True,
                                                                 "about": "Odile"}, user=gm)).wait_response()
    assert "(GM only)" in secret["data"]["content"]
    listed = await (await fake.interaction("gm-admin note list", user=gm)).wait_response()
    assert "n2: Odile waters the ale. [GM only]" in listed["data"]["content"]
    read = await (await fake.interaction("journal", user="alice")).wait_response()
    text = read["data"]["content"]
    assert read["data"]["flags"] & 64 and "**People met**\n- Ysolde Marrick" in text
    assert "The bell was cast in 1022." in text and "waters the ale" not in text
    places = await (await fake.interaction("journal", {"section": "places"}, user="alice")).wait_response()
    assert places["data"]["content"].startswith("**Places seen**\n- Saltmere Quay:")
    model.add("The bell tolls.")
    await (await fake.interaction("act", {"action": "When was the bell cast?"}, user="alice")).wait_followups(1)
    assert "The bell was cast in 1022." in model.requests[-1].context
    removed = await (await fake.interaction("gm-admin note remove", {"note_id": "n1"}, user=gm)).wait_response()
    assert removed["data"]["content"] == "Note n1 removed." and len((await bot.engine.state(cid)).notes) == 1


async def test_map_posts_a_picture_of_the_places_the_party_knows(fake, bot, model):
    cid = await game_with_players(bot, fake)
    i = await fake.interaction("map", user="alice")
    assert (await i.wait_response())["type"] == 5  # deferred: drawing takes a moment
    [posted] = await i.wait_followups(1)
    assert posted["content"] == "🗺️ The party's map: at Saltmere Quay."
    [call] = fake.calls("POST", r"/webhooks/\d+/[\w-]+", where=lambda c: bool(c.files))
    assert call.files[0].filename == "map.png" and call.files[0].data.startswith(b"\x89PNG")
    assert cid


async def test_lookup_answers_privately_and_offers_names_as_you_type(fake, bot, model):
    await game_with_players(bot, fake)
    offered = await fake.autocomplete("lookup", {"kind": "spell", "name": "fire"}, focused="name")
    choices = [c["name"] for c in (await offered.wait_response())["data"]["choices"]]
    assert "Fire Bolt" in choices and "Fireball" in choices
    monsters = await fake.autocomplete("lookup", {"kind": "monster", "name": ""}, focused="name")
    assert "Gray Oar Smuggler" in [c["name"] for c in (await monsters.wait_response())["data"]["choices"]]
    said = await (await fake.interaction("lookup", {"kind": "spell", "name": "Fire Bolt"}, user="alice")).wait_response()
    assert said["data"]["flags"] & 64 and said["data"]["content"].startswith("**Fire Bolt** — cantrip evocation")
    missing = await (await fake.interaction("lookup", {"kind": "condition", "name": "sleepy"}, user="alice")).wait_response()
    assert missing["data"]["flags"] & 64 and "No condition called 'sleepy'" in missing["data"]["content"]


async def test_game_start_from_a_premise_makes_and_plays_a_new_world(fake, bot, model, tmp_path):
    import json
    import shutil

    from tests.test_worldgen import CAST, OUTLINE

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    bot.engine.deps.corpus_dir = corpus  # the world is saved here, not in the repository's corpus
    both = await fake.interaction("game start", {"premise": "a mine", "adventure": "ashen-thane"}, user="alice")
    assert "not both" in (await both.wait_response())["data"]["content"]
    model.add(json.dumps(OUTLINE), json.dumps(CAST))
    i = await fake.interaction("game start", {"premise": "a haunted mining town in the mountains"}, user="alice")
    assert (await i.wait_response())["type"] == 5  # deferred: the world-builder takes a while
    [opening] = await i.wait_followups(1)
    assert opening["content"].startswith("## The Hollow Crown Mine\nSnow hisses")
    assert "saved as `the-hollow-crown-mine` (4 places, 4 people)" in opening["content"]
    assert (corpus / "adventures" / "the-hollow-crown-mine" / "adventure.yaml").is_file()
    assert [r.agent for r in model.requests[-2:]] == [AgentType.WORLDBUILDER, AgentType.WORLDBUILDER]


async def test_a_player_adds_a_note_when_the_server_allows(fake, bot):
    cid = await game_with_players(bot, fake)
    refused = await fake.interaction("note", {"text": "The ferryman owes us a favour"}, user="alice")
    response = (await refused.wait_response())["data"]
    assert response["flags"] & 64 and "only admins add canon notes" in response["content"]
    await bot.engine.configure_server(str(fake.guild_id), cid, player_notes=True)  # /gm-admin config player_notes:on
    added = await fake.interaction("note", {"text": "The ferryman owes us a favour @everyone"}, user="alice")
    response = (await added.wait_response())["data"]
    assert response["content"].startswith("Note n1 added to the journal by Aria: The ferryman owes us a favour")
    assert response["allowed_mentions"]["parse"] == []  # a player's words ping no one


async def test_feature_offers_what_is_left_spends_it_and_the_sheet_counts_it(fake, bot, model):
    cid = await game_with_players(bot, fake)
    offered = await fake.autocomplete("feature", {"name": ""}, focused="name", user="alice")
    assert (await offered.wait_response())["data"]["choices"] == [
        {"name": "Second Wind (1 left, short rest)", "value": "Second Wind"}]
    used = (await (await fake.interaction("feature", {"name": "Second Wind"}, user="alice")).wait_response())["data"]
    assert used["content"].startswith("🌀 Aria uses Second Wind: 1d10+1 → ") and not used.get("flags")
    assert (await bot.engine.state(cid)).characters[str(fake.user("alice").id)].used == {"Second Wind": 1}
    again = (await (await fake.interaction("feature", {"name": "Second Wind"}, user="alice")).wait_response())["data"]
    assert again["flags"] & 64 and "0 uses of Second Wind left" in again["content"]
    sheet = (await (await fake.interaction("char sheet", user="alice")).wait_response())["data"]["embeds"][0]
    assert [f["value"] for f in sheet["fields"] if f["name"] == "Features left"] == ["Second Wind 0/1 (short rest)"]
