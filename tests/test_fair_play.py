"""The numbers change only through the game: in a fight, a player's own attack or spell waits for their
character's turn; an attack or harmful spell at someone who is no enemy in a fight needs its player's yes, and then
the GM is told and the person attacked turns on them."""

from __future__ import annotations

import pytest

from engine.basics import AgentType
from engine.errors import BadInput
from engine.hostility import ConfirmAttack
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


async def asked(attempt) -> str:
    """The question a player's attack or spell asks before it strikes (nothing happens until they say yes)."""
    with pytest.raises(ConfirmAttack) as question:
        await attempt
    return question.value.message


async def test_an_attack_on_someone_who_is_no_enemy_asks_first_and_then_tells_the_gm(table):
    engine = table.engine
    before = (await table.state()).model_dump()
    assert await asked(engine.player_attack(CHANNEL, "u1", "ann", "longsword", "Ysolde")) == (
        "Ysolde Marrick is no enemy of yours (neutral), and no fight is going on. Attack Ysolde Marrick anyway? The "
        "Game Master plays out what follows (Ysolde Marrick will turn hostile).")
    assert await asked(engine.player_attack(CHANNEL, "u1", "ann", "light crossbow", "Bram")) == (
        "Bram is another player's character. Attack Bram anyway? The Game Master plays out what follows.")
    assert await asked(engine.cast(CHANNEL, "u2", "bo", "magic missile", "Ysolde Marrick, Aria")) == (
        "Ysolde Marrick is no enemy of yours (neutral), and no fight is going on; Aria is another player's character. "
        "Cast Magic Missile at Ysolde Marrick and Aria anyway? The Game Master plays out what follows (Ysolde Marrick "
        "will turn hostile).")
    assert (await table.state()).model_dump() == before  # nothing rolled, spent or changed: not a bolt, not a slot
    # What cannot be done at all is refused first, as ever, rather than asked about.
    with pytest.raises(BadInput, match="Fire Bolt is a cantrip and uses no spell slot"):
        await engine.cast(CHANNEL, "u2", "bo", "fire bolt", "Ysolde Marrick", 2)
    text = await engine.player_attack(CHANNEL, "u1", "ann", "longsword", "Ysolde", confirmed=True)
    assert text.startswith("Aria attacks Ysolde Marrick with longsword")
    state = await table.state()
    assert state.npcs["ysolde-marrick"].attitude == "hostile" and not state.combat.active  # the story decides
    session = await engine.session(CHANNEL)
    player, note = (await table.store.messages(session.id))[-2:]
    assert player.text == text and note.agent is AgentType.NARRATIVE
    assert note.text.startswith("(Aria attacked Ysolde Marrick, no enemy in a fight. Hostile now: Ysolde Marrick "
                                "(neutral until now). The Game Master answers it on the next turn")
    # The GM reads it on the next turn, before the player's words.
    await table.turn("I stand over her.", "She scrambles back, shouting for the watch.")
    assert "Hostile now: Ysolde Marrick" in " ".join(m.content for m in table.model.requests[-1].messages)


async def test_kind_spells_and_enemies_in_the_fight_ask_nothing(table):
    engine = table.engine
    assert (await engine.cast(CHANNEL, "u2", "bo", "mage armor", "Aria")).startswith("Bram casts Mage Armor")
    await fight(table, "Bram")
    assert await asked(engine.cast(CHANNEL, "u2", "bo", "fire bolt", "Ysolde Marrick")) == (
        "Ysolde Marrick is not in this fight (neutral). Cast Fire Bolt at Ysolde Marrick anyway? The Game Master "
        "plays out what follows (Ysolde Marrick will turn hostile).")
    said = await engine.cast(CHANNEL, "u2", "bo", "fire bolt", "Wolf")  # an enemy: no question, no note
    session = await engine.session(CHANNEL)
    assert (await table.store.messages(session.id))[-1].text == said
    assert (await table.state()).npcs["ysolde-marrick"].attitude == "neutral"


async def test_an_ally_in_the_fight_is_asked_about_and_the_agents_attack_tool_asks_nothing(table):
    session = await table.engine.session(CHANNEL)
    session.state.party.npc_ids.append("ysolde-marrick")
    await table.store.save_state(session.id, session.state, [], version=session.version)
    await fight(table, "Aria")
    session = await table.engine.session(CHANNEL)
    session.state.combat.order.append(Participant(id="ysolde-marrick", name="Ysolde Marrick", faction="ally",
                                                  initiative=3, ac=11))
    await table.store.save_state(session.id, session.state, [], version=session.version)
    assert await asked(table.engine.player_attack(CHANNEL, "u1", "ann", "longsword", "Ysolde Marrick")) == (
        "Ysolde Marrick fights on your side. Attack Ysolde Marrick anyway? The Game Master plays out what follows "
        "(Ysolde Marrick will turn hostile).")
    # The GM's own attack for a player is the GM's to judge from what the player said: no button, no change of heart.
    result = await table.turn("I turn on Ysolde!", '<attack attacker="Aria" target="Ysolde Marrick" weapon="longsword"/>',
                              " Steel rings.")
    assert result.calls[0].ok and (await table.state()).npcs["ysolde-marrick"].attitude == "neutral"


async def test_the_gm_can_start_the_fight_an_attack_provoked_and_then_she_is_an_enemy(table):
    session = await table.engine.session(CHANNEL)
    session.state.npcs["ysolde-marrick"].hp = session.state.npcs["ysolde-marrick"].max_hp = 60  # one blow won't do
    await table.store.save_state(session.id, session.state, [], version=session.version)
    await table.engine.player_attack(CHANNEL, "u1", "ann", "longsword", "Ysolde", confirmed=True)
    elsewhere = await table.turn("And Odile!", '<start_combat>{"npc": ["odile-farrow"]}</start_combat>', " Not here.")
    assert "Odile Farrow is not here to fight the party" in elsewhere.calls[0].observation  # she is at the tavern
    result = await table.turn("I raise my sword again.", '<start_combat>{"npc": ["ysolde-marrick"]}</start_combat>',
                              " She draws a gutting knife.")
    assert result.calls[0].ok, result.calls[0].observation
    state = await table.state()
    assert [p.faction for p in state.combat.order if p.id == "ysolde-marrick"] == ["enemy"]
    session = await table.engine.session(CHANNEL)
    session.state.combat.turn_index = [p.id for p in state.combat.order].index("u1")
    await table.store.save_state(session.id, session.state, [], version=session.version)
    said = await table.engine.player_attack(CHANNEL, "u1", "ann", "longsword", "Ysolde Marrick")  # a foe now: no question
    assert said.startswith("Aria attacks Ysolde Marrick")
