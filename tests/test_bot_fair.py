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
