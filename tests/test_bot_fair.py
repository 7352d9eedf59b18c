"""A fair game through the real bot against the loopback fake Discord: /game status names the ways out players know
of; an attack on someone who is no enemy asks its player privately first; in a fight a player acts only on their
character's turn; model-free commands share a per-user limit; a refused turn never replaces the public "thinking…"."""

from __future__ import annotations

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
