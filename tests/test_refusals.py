"""A tool call the game refused is visible: the agent reads plainly that it did not happen and must say so, and
players read a line saying what did not happen, in words that name nothing they do not know."""

from __future__ import annotations

import pytest

from tests.conftest import CHANNEL

pytestmark = pytest.mark.usefixtures("backend")


async def move_party(table, where: str) -> None:
    session = await table.engine.session(CHANNEL)
    session.state.current_location = where
    await table.store.save_state(session.id, session.state, [], version=session.version)


async def test_a_refused_move_is_told_to_the_agent_as_not_done_and_shown_to_players(table):
    await move_party(table, "harrow-chandlery")
    result = await table.turn("I head for the lighthouse.",
                              '<change_location location="gannet-rock-lighthouse"/>', " You cannot get there from here.")
    [refused] = result.calls
    assert not refused.ok
    # The agent's continuation carries the observation: not done, and say so.
    seen = table.model.requests[-1].prefill
    assert "this did not happen" in seen and "tell the players plainly that it failed" in seen
    assert "never narrate it as done" in seen
    assert result.mechanics("full") == [
        "✗ Aria could not go to Gannet Rock Lighthouse: no way leads there from Harrow's Chandlery."]
    assert result.mechanics("dice") == [] and result.mechanics("story") == []
    assert (await table.state()).current_location == "harrow-chandlery"


async def test_a_refusal_never_names_a_place_or_secret_the_party_has_not_found(table):
    await move_party(table, "brine-cup-tavern")
    result = await table.turn("I look for another way out.",
                              '<change_location location="tide-tunnel"/>',  # behind the cask door, still a secret
                              '<change_location location="wreckers-grotto"/>',  # nowhere near, and unheard of
                              '<discover_secret secret="smugglers-cache"/>',  # a secret of another place
                              " Nothing but barrels.")
    assert [c.ok for c in result.calls] == [False, False, False]
    assert "The Tide Tunnel" in result.calls[0].observation  # the agent may read what it tried
    lines = result.mechanics("full")
    assert lines == ["✗ Aria could not go that way: no way leads there from The Brine Cup."] * 2
    shown = " ".join(lines).lower()
    for secret in ("tide", "tunnel", "grotto", "wrecker", "cask", "smuggler", "cache"):
        assert secret not in shown


async def test_an_item_not_carried_and_a_purse_too_light_are_shown_as_not_done(table):
    result = await table.turn("I hand Ysolde my rope and ten gold.",
                              '<modify_inventory item="rope" quantity="-1"/>',
                              '<modify_inventory currency="gp" quantity="-500"/>',
                              '<modify_inventory item="torch" quantity="1"/>', " She shrugs.")
    assert [c.ok for c in result.calls] == [False, False, True]
    assert result.mechanics("full") == [
        "✗ Aria could not give up rope: Aria carries none.",
        "✗ Aria could not pay 500 gp: the purse holds only 10 gp.",
        "• Aria gains 1 × torch (now 1)."]


async def test_a_slip_the_agent_mends_shows_nothing_to_players(table):
    result = await table.turn("I go to the tavern.", '<change_location location="the-tavern"/>',
                              '<change_location location="brine-cup-tavern"/>', " Warm light.")
    assert [c.ok for c in result.calls] == [False, True]
    assert [line[:1] for line in result.mechanics("full")] == ["•"]  # a wrong name is the agent's to fix
