"""The numbers change only through the game: in a fight, a player's own attack or spell waits for their
character's turn; an attack or harmful spell at someone who is no enemy in a fight needs its player's yes, and then
the GM is told and the person attacked turns on them."""

from __future__ import annotations

import pytest

from engine.errors import BadInput
from engine.state import Combat, Participant
from tests.conftest import CHANNEL

pytestmark = pytest.mark.usefixtures("backend")


async def fight(table, turn: str, *, with_bram: bool = True) -> None:
    """A fight at the quay: Aria, Bram (unless left out) and a wolf, whose turn it is named by `turn`."""
    session = await table.engine.session(CHANNEL)
    order = [Participant(id="u1", name="Aria", faction="player", initiative=15, ac=16),
             Participant(id="wolf", name="Wolf", faction="enemy", initiative=12, ac=13, hp=11, max_hp=11)]
    if with_bram:
        order.append(Participant(id="u2", name="Bram", faction="player", initiative=8, ac=12))
    session.state.combat = Combat(active=True, round=1, order=order,
                                  turn_index=[p.name for p in order].index(turn))
    await table.store.save_state(session.id, session.state, [], version=session.version)


async def test_in_a_fight_attacks_and_spells_wait_for_the_characters_turn(table):
    await fight(table, "Wolf")
    before = await table.state()
    for attempt in (table.engine.player_attack(CHANNEL, "u1", "ann", "longsword", "Wolf"),
                    table.engine.cast(CHANNEL, "u2", "bo", "fire bolt", "Wolf"),
                    table.engine.cast(CHANNEL, "u2", "bo", "magic missile", "Wolf")):
        with pytest.raises(BadInput, match=r"^It is Wolf's turn, not (Aria|Bram)'s: wait for yours"):
            await attempt
    assert (await table.state()).model_dump() == before.model_dump()  # nothing spent, nothing rolled
    # A check or a saving throw is no action: it is rolled whenever the story asks for it.
    name, _ = await table.engine.player_check(CHANNEL, "u2", "bo", "dexterity", save=True)
    assert name == "Bram"
    await fight(table, "Aria")
    said = await table.engine.player_attack(CHANNEL, "u1", "ann", "longsword", "Wolf")
    assert said.startswith("Aria attacks Wolf with longsword")
    with pytest.raises(BadInput, match=r"^It is Aria's turn, not Bram's"):
        await table.engine.cast(CHANNEL, "u2", "bo", "fire bolt", "Wolf")


async def test_a_character_left_out_of_the_fight_cannot_strike_in_it(table):
    await fight(table, "Aria", with_bram=False)
    with pytest.raises(BadInput, match=r"^Bram is not in this fight; it is Aria's turn\."):
        await table.engine.cast(CHANNEL, "u2", "bo", "fire bolt", "Wolf")
