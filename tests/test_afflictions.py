"""Conditions the agents set and lift, with durations a fight counts: some of the holder's turns, or a save it
repeats at the end of each turn; the fight's end lifts what it timed."""

from __future__ import annotations

from engine.basics import AgentType
from tests.conftest import call, ctx_for


def _fight(state):
    ctx = ctx_for(state)
    assert call(ctx, '<start_combat>{"enemy": [{"monster": "goblin", "count": 2}]}</start_combat>').ok
    return ctx_for(state, agent=AgentType.COMBAT)


def _turns_of(state, cctx, name, turns):
    """Pass turns until `name` has ended `turns` turns; the observations of the next_turns that ended them."""
    told = []
    while turns:
        current = state.combat.current()
        result = call(cctx, "<next_turn/>")
        assert result.ok, result.observation
        if current.name == name:
            told.append(result.observation)
            turns -= 1
    return told


def test_a_condition_changes_rolls_and_lasts_its_rounds(state):
    cctx = _fight(state)
    set_ = call(cctx, '<set_condition target="Goblin 1" condition="poisoned" rounds="2"/>')
    assert set_.ok and "Goblin 1 is poisoned (until 2 of its turns)" in set_.observation
    goblin = next(p for p in state.combat.order if p.name == "Goblin 1")
    assert goblin.conditions == ["poisoned"] and len(state.combat.timed) == 1
    swing = call(cctx, '<attack attacker="Goblin 1" target="Aria" weapon="scimitar"/>')
    assert "disadvantage: attacker poisoned" in swing.observation
    first, second = _turns_of(state, cctx, "Goblin 1", 2)
    assert "no longer poisoned" not in first and "Goblin 1 is no longer poisoned (its time is up)" in second
    assert goblin.conditions == [] and state.combat.timed == []


def test_a_repeated_save_ends_it_and_the_fight_lifts_the_rest(state):
    cctx = _fight(state)
    assert call(cctx, '<set_condition target="Goblin 2" condition="frightened" save="wisdom" dc="1"/>').ok
    assert call(cctx, '<set_condition target="Aria" condition="restrained" save="strength" dc="40"/>').ok
    aria = next(c for c in state.characters.values() if c.name.startswith("Aria"))
    assert "restrained" in aria.conditions
    [ended] = _turns_of(state, cctx, "Goblin 2", 1)
    goblin = next(p for p in state.combat.order if p.name == "Goblin 2")
    assert "Goblin 2's wisdom save 1d20-1 →" in ended and "vs DC 1" in ended  # its WIS 8, by its stat block
    # Only a natural 1 (1 - 1 = 0) fails DC 1: what the line says and what the state holds agree either way.
    assert ("no longer frightened" in ended) == ("frightened" not in goblin.conditions)
    [held] = _turns_of(state, cctx, "Aria", 1)
    assert "Aria's strength save" in held and "still restrained" in held
    over = call(cctx, "<end_combat/>")
    assert "Aria is no longer restrained" in over.observation and "restrained" not in aria.conditions


def test_refusals_and_lifting_by_hand(state):
    ctx = ctx_for(state)
    before = state.model_dump()
    for tag, said in (('<set_condition target="Aria" condition="sleepy"/>', "condition"),
                      ('<set_condition target="Aria" condition="poisoned" rounds="3"/>', "counted in a fight"),
                      ('<set_condition target="Aria" condition="poisoned" save="wisdom"/>', "needs both"),
                      ('<set_condition target="Aria" condition="unconscious"/>', "use update_hp"),
                      ('<set_condition target="Aria" condition="prone" remove="true"/>', "Aria is not prone"),
                      ('<set_condition target="Nobody" condition="prone"/>', "no one called 'Nobody'")):
        result = call(ctx, tag)
        assert not result.ok and said in result.observation, (tag, result.observation)
    assert state.model_dump() == before
    assert call(ctx, '<set_condition target="Ysolde Marrick" condition="charmed"/>').ok
    assert state.npcs["ysolde-marrick"].conditions == ["charmed"]
    assert call(ctx, '<set_condition target="Ysolde" condition="charmed" remove="true"/>').ok
    assert state.npcs["ysolde-marrick"].conditions == []
