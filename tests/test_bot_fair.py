"""A fair game through the real bot against the loopback fake Discord: /game status names the ways out players know
of; an attack on someone who is no enemy asks its player privately first; in a fight a player acts only on their
character's turn; model-free commands share a per-user limit; a refused turn never replaces the public "thinking…"."""

from __future__ import annotations

import re

from tests.test_bot_e2e import bot, fake, game_with_players, model  # noqa: F401  (fixtures)


async def status_fields(fake) -> dict[str, str]:
    status = (await (await fake.interaction("game status", user="alice")).wait_response())["data"]["embeds"][0]
    return {f["name"]: f["value"] for f in status["fields"]}


async def test_status_lists_the_ways_out_players_know_of(fake, bot):
    cid = await game_with_players(bot, fake)
    assert (await status_fields(fake))["Ways out"] == ("The Brine Cup, Harrow's Chandlery, The Keeper's Cottage, "
                                                       "Gannet Rock Lighthouse (closed)")
    session = await bot.engine.session(cid)
    session.state.current_location = "brine-cup-tavern"
    await bot.engine.deps.store.save_state(session.id, session.state, [], version=session.version)
    assert (await status_fields(fake))["Ways out"] == "Saltmere Quay"  # the tunnel is behind the cask door's secret
    session = await bot.engine.session(cid)
    session.state.location().secret("cask-door").discovered = True
    await bot.engine.deps.store.save_state(session.id, session.state, [], version=session.version)
    assert (await status_fields(fake))["Ways out"] == "Saltmere Quay, The Tide Tunnel"


async def test_a_refused_move_shows_players_what_did_not_happen_under_the_reply(fake, bot, model):
    await game_with_players(bot, fake)
    model.add('<change_location location="gannet-rock-lighthouse"/>', " The causeway is under the sea.")
    i = await fake.interaction("act", {"action": "I walk out to the lighthouse."}, user="alice")
    [reply] = await i.wait_followups(1)
    assert reply["content"] == ("The causeway is under the sea.\n"
                                "-# ✗ Aria could not go to Gannet Rock Lighthouse: the way is closed.")


async def fight_at_the_quay(bot, cid: str, alice: str, turn: str) -> None:
    """Aria and a wolf in a fight; `turn` names whose turn it is."""
    from engine.state import Combat, Participant

    session = await bot.engine.session(cid)
    order = [Participant(id=alice, name="Aria", faction="player", initiative=15, ac=16),
             Participant(id="wolf", name="Wolf", faction="enemy", initiative=12, ac=13, hp=11, max_hp=11)]
    session.state.combat = Combat(active=True, round=1, order=order, turn_index=[p.name for p in order].index(turn))
    await bot.engine.deps.store.save_state(session.id, session.state, [], version=session.version)


async def test_an_attack_on_someone_who_is_no_enemy_is_confirmed_privately_by_its_player_only(fake, bot):
    from engine.basics import AgentType

    cid = await game_with_players(bot, fake)
    before = (await bot.engine.state(cid)).model_dump()
    ask = await fake.interaction("attack", {"weapon": "longsword", "target": "Ysolde Marrick"}, user="alice")
    question = await ask.wait_original()
    assert question["flags"] & 64 and question["content"] == (
        "Ysolde Marrick is no enemy of yours (neutral), and no fight is going on. Attack Ysolde Marrick anyway? The "
        "Game Master plays out what follows (Ysolde Marrick will turn hostile).")
    buttons = [c for row in question["components"] for c in row["components"]]
    assert [(b["label"], b["custom_id"]) for b in buttons] == [("Attack", "strike-confirm"), ("Cancel", "strike-cancel")]
    # Someone else's press: a private answer, never "This interaction failed", and nothing happens.
    other = await (await fake.component(question, "strike-confirm", user="bob")).wait_response()
    assert other["type"] == 4 and other["data"]["flags"] & 64 and "alice's to answer" in other["data"]["content"]
    cancel = await (await fake.component(question, "strike-cancel", user="alice")).wait_response()
    assert cancel["type"] == 7 and cancel["data"]["content"] == "Cancelled: nothing happened."
    assert (await bot.engine.state(cid)).model_dump() == before
    assert fake.calls("POST", r"/channels/\d+/messages") == []  # nothing said to the table
    ask = await fake.interaction("attack", {"weapon": "longsword", "target": "Ysolde Marrick"}, user="alice")
    pressed = await fake.component(await ask.wait_original(), "strike-confirm", user="alice")
    [posted] = await fake.wait_for("POST", r"/channels/\d+/messages")
    assert posted.json["content"].startswith("⚔️ Aria attacks Ysolde Marrick with longsword")
    await fake.wait_until(lambda: pressed.original is not None and pressed.original["content"] == "Done.")
    state = await bot.engine.state(cid)
    assert state.npcs["ysolde-marrick"].attitude == "hostile"
    session = await bot.engine.session(cid)
    note = (await bot.engine.deps.store.messages(session.id))[-1]
    assert note.agent is AgentType.NARRATIVE and note.text.startswith("(Aria attacked Ysolde Marrick, no enemy")


async def test_in_a_fight_attacks_wait_for_the_characters_turn_even_after_a_yes(fake, bot):
    cid = await game_with_players(bot, fake)
    alice = str(fake.user("alice").id)
    await fight_at_the_quay(bot, cid, alice, "Wolf")
    refused = (await (await fake.interaction("attack", {"weapon": "longsword", "target": "Wolf"}, user="alice"))
               .wait_response())["data"]
    assert refused["flags"] & 64 and refused["content"].startswith("It is Wolf's turn, not Aria's: wait for yours")
    await fight_at_the_quay(bot, cid, alice, "Aria")
    ask = await fake.interaction("attack", {"weapon": "longsword", "target": "Ysolde Marrick"}, user="alice")
    question = await ask.wait_original()
    assert question["content"].startswith("Ysolde Marrick is not in this fight (neutral).")
    await fight_at_the_quay(bot, cid, alice, "Wolf")  # the moment passed before she pressed
    before = (await bot.engine.state(cid)).model_dump()
    pressed = await fake.component(question, "strike-confirm", user="alice")
    await fake.wait_until(lambda: pressed.original is not None and pressed.original["content"].startswith("It is Wolf's"))
    assert pressed.original["flags"] & 64 and fake.calls("POST", r"/channels/\d+/messages") == []
    assert (await bot.engine.state(cid)).model_dump() == before
    await fight_at_the_quay(bot, cid, alice, "Aria")
    said = (await (await fake.interaction("attack", {"weapon": "longsword", "target": "Wolf"}, user="alice"))
            .wait_response())["data"]  # an enemy on her turn: no question
    assert said["content"].startswith("⚔️ Aria attacks Wolf with longsword") and not said.get("flags", 0) & 64


def limited(bot, **limits) -> None:
    config = bot.engine.deps.config
    bot.engine.deps.config = config.model_copy(update={"limits": config.limits.model_copy(update=limits)})


async def test_commands_that_call_no_model_share_a_per_user_limit_across_channels(fake, bot, model):
    limited(bot, user_commands=3, user_commands_window_s=600)
    cid = str(fake.channel("general").id)
    await bot.engine.start_game(cid, str(fake.guild_id))
    await bot.engine.create_character(cid, str(fake.user("alice").id), "Aria", "fighter")
    for n in range(3):
        done = await (await fake.interaction("roll", {"dice": "1d20"}, user="alice")).wait_response()
        assert done["data"]["content"].startswith("🎲 Aria (alice) rolls 1d20") and not done["data"].get("flags")
    offered = await fake.autocomplete("attack", {"weapon": "long"}, focused="weapon", user="alice")
    assert (await offered.wait_response())["data"]["choices"]  # typing is not a command: never counted
    fake.add_channel("tavern")
    for command, options, channel in (("roll", {"dice": "1d20"}, "general"), ("char sheet", {}, "tavern"),
                                      ("quests", {}, "general")):
        refused = (await (await fake.interaction(command, options, user="alice", channel=channel))
                   .wait_response())["data"]
        assert refused["flags"] & 64 and re.fullmatch(
            r"Easy there: that is 3 commands in 10 min, as fast as this server allows\. Go on in \d+ (s|min)\.",
            refused["content"]), refused
    assert len((await bot.engine.session(cid)).state.characters) == 1
    bob = (await (await fake.interaction("roll", {"dice": "1d6"}, user="bob")).wait_response())["data"]
    assert bob["content"].startswith("🎲 bob rolls 1d6")  # another player is not held back
    model.add("The gulls wheel.")  # a turn is not a command: the turn limit judges it
    played = await fake.interaction("act", {"action": "I watch the gulls."}, user="alice")
    assert (await played.wait_followups(1))[0]["content"] == "The gulls wheel."


async def test_a_turn_refused_after_its_defer_is_answered_privately_and_the_thinking_message_goes(fake, bot, model):
    limited(bot, user_turns=1, user_window_s=600)
    cid = str(fake.channel("general").id)
    await bot.engine.start_game(cid, str(fake.guild_id))
    await bot.engine.create_character(cid, str(fake.user("alice").id), "Aria", "fighter")
    model.add("The gulls wheel.")
    await (await fake.interaction("act", {"action": "I watch the gulls."}, user="alice")).wait_followups(1)

    async def checked_too_early(*_, **__) -> None:  # as when two /act pass the checks before either turn begins
        return None

    bot.engine.deps.store.enforce_limits = checked_too_early  # the turn's own write still holds her to the limit
    raced = await fake.interaction("act", {"action": "I watch again."}, user="alice")
    deferred = await raced.wait_response()
    assert deferred["type"] == 5 and not (deferred.get("data") or {}).get("flags", 0) & 64  # public "thinking…"
    [private] = await raced.wait_followups(1)
    assert private["flags"] & 64 and private["content"].startswith("Easy there: that is 1 turns in 10 min")
    assert int(raced.original["id"]) not in fake.messages  # the public placeholder is gone, not edited
    assert fake.calls("DELETE", r"/webhooks/\d+/[\w-]+/messages/@original")
    said = [m["content"] for m in fake.messages_in(fake.channel("general"))]
    assert not any("Easy there" in s for s in said) and len(model.requests) == 1


async def test_two_questions_asked_while_the_channel_is_busy_each_answer_their_own_player(tmp_path, model):
    from tests.fake_discord import FakeDiscord
    from tests.test_bot_e2e import busy_channel, lorekeeper

    async with FakeDiscord(interaction_timeout=0.4) as fake, lorekeeper(tmp_path, fake, model) as bot:
        await busy_channel(bot, fake, model)
        asks = [await fake.interaction(command, options, user=who) for command, options, who in (
            ("attack", {"weapon": "longsword", "target": "Ysolde Marrick"}, "alice"),
            ("cast", {"spell": "Fire Bolt", "target": "Ysolde Marrick"}, "bob"))]
        questions = [(await ask.wait_followups(1, timeout=10))[0] for ask in asks]
        assert all(q["flags"] & 64 and q["content"].endswith("(Ysolde Marrick will turn hostile).") for q in questions)
        pressed = await fake.component(questions[0], "strike-confirm", user="alice")
        [posted] = await fake.wait_for("POST", r"/channels/\d+/messages",
                                       where=lambda c: "attacks Ysolde" in (c.json or {}).get("content", ""))
        assert posted.json["content"].startswith("⚔️ Aria attacks Ysolde Marrick")
        assert (await pressed.wait_response())["type"] == 7  # her own question answered her, not bob's
