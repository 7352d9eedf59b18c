"""Conditions the agents set and lift, with durations a fight counts: some of the holder's turns, or a save it
repeats at the end of each turn; the fight's end lifts what it timed."""

from __future__ import annotations

import random

from engine.basics import AgentType
from engine.rules import origins
from engine.rules.checks import check
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


def test_exhaustion_has_levels_that_add_up_and_a_long_rest_takes_one(state):
    ctx = ctx_for(state)
    aria = next(c for c in state.characters.values() if c.name.startswith("Aria"))
    told = [call(ctx, '<set_condition target="Aria" condition="exhaustion"/>').observation for _ in range(3)]
    assert told[0].startswith("Aria is at exhaustion level 1. Disadvantage on ability checks")
    assert aria.conditions == ["exhaustion 3"] and origins.speed(aria) == 15  # halved from level 2
    rolled = check(aria, "athletics", random.Random(1))
    assert rolled.label == "Athletics check (disadvantage: exhaustion 3)" and rolled.roll.expression.endswith(" dis")
    saved = check(aria, "wisdom", random.Random(1), save=True)
    assert "disadvantage: exhaustion 3" in saved.label
    swing = call(ctx, '<attack attacker="Aria" target="Ysolde Marrick" weapon="longsword"/>')
    assert "disadvantage: attacker exhaustion 3" in swing.observation
    assert call(ctx, '<set_condition target="Aria" condition="exhaustion"/>').ok  # 4: the maximum halves
    assert aria.hp == aria.max_hp // 2
    assert call(ctx, '<update_hp target="Aria" amount="50" kind="healing"/>').ok and aria.hp == aria.max_hp // 2
    assert call(ctx, "<long_rest/>").ok and aria.conditions == ["exhaustion 3"] and aria.hp == aria.max_hp
    assert call(ctx, '<set_condition target="Aria" condition="exhaustion" remove="true"/>').ok
    assert aria.conditions == ["exhaustion 2"]
    for _ in range(4):
        last = call(ctx, '<set_condition target="Aria" condition="exhaustion"/>')
    assert "Aria dies (exhaustion)" in last.observation and aria.dead and aria.hp == 0
