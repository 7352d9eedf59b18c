"""Life and death by the SRD: temporary hit points soak damage first and never stack; at 0 HP a character is
dying and rolls death saves (three successes stabilise, three failures kill, a 1 is two failures, a 20 brings
them back); damage at 0 is a failure (a critical two); massive damage kills outright; stabilising by Medicine or
Spare the Dying; the state shown on the sheet and the tracker."""

from __future__ import annotations

import random

import pytest

from engine import BadInput
from engine.basics import AgentType
from engine.characters import make_character
from engine.rules import life
from tests.conftest import CHANNEL, call, ctx_for


def fighter(hp: int = 12):
    ch = make_character("u", "Aria", "fighter")
    ch.hp = hp
    return ch


def test_temporary_hit_points_soak_first_and_never_stack():
    ch = fighter()
    assert life.gain_temporary(ch, 5) == "Aria has 5 temporary hit points."
    assert "keeps their 5" in life.gain_temporary(ch, 3) and ch.temp_hp == 5
    assert life.gain_temporary(ch, 8) and ch.temp_hp == 8
    note = life.damage(ch, 10)
    assert ch.temp_hp == 0 and ch.hp == 10 and "Temporary hit points take 8" in note
    assert life.hp_line(ch) == "10/12"


def test_at_zero_a_character_is_dying_and_damage_then_is_a_failure():
    ch = fighter(5)
    assert "falls unconscious and is dying" in life.damage(ch, 9) and "unconscious" in ch.conditions
    assert life.state_line(ch) == "dying: 0 successes, 0 failures"
    assert "a death save failure" in life.damage(ch, 3) and ch.death_failures == 1
    assert "two death save failures (a critical)" in life.damage(ch, 3, critical=True) and ch.dead
    assert life.hp_line(ch) == "0/12 (dead)" and "dead" in ch.conditions
    with pytest.raises(BadInput, match="Aria is dead"):
        life.death_save(ch, random.Random(1))


def test_massive_damage_kills_outright():
    ch = fighter(5)
    assert "dies (massive damage: 12 beyond 0 HP" in life.damage(ch, 17) and ch.dead
    down = fighter(0)
    life.damage(fighter(1), 1)
    assert "dies" in life.damage(down, 12) and down.dead


def test_death_saves_stabilise_kill_or_bring_back():
    outcomes = set()
    for seed in range(200):
        ch = fighter(0)
        life._down(ch)
        rng = random.Random(seed)
        for _ in range(6):
            if ch.dead or ch.stable or ch.hp > 0:
                break
            life.death_save(ch, rng)
        outcomes.add("dead" if ch.dead else "stable" if ch.stable else "back" if ch.hp == 1 else "dying")
        assert ch.death_failures <= 3 and ch.death_successes <= 3
        if ch.hp == 1:
            assert "unconscious" not in ch.conditions and ch.death_failures == ch.death_successes == 0
    assert {"dead", "stable", "back"} <= outcomes
    stable = fighter(0)
    life._down(stable)
    assert life.stabilize(stable).startswith("Aria is stable")
    with pytest.raises(BadInput, match="is stable: no more death saves"):
        life.death_save(stable, random.Random(1))
    life.damage(stable, 2)
    assert not stable.stable and stable.death_failures == 1  # hurt again: dying again


def test_the_agents_roll_saves_stabilise_and_heal(state):
    ctx = ctx_for(state, agent=AgentType.COMBAT)
    assert call(ctx, '<update_hp target="Aria" amount="15"/>').ok and state.characters["u1"].hp == 0
    saved = call(ctx, '<death_save character="Aria"/>')
    aria = state.characters["u1"]
    assert saved.ok and saved.observation.startswith("Aria makes a death saving throw: 1d20")
    expected = {"natural 20": (1, 0, 0), "two failures": (0, 0, 2), ", success (": (0, 1, 0), ", failure (": (0, 0, 1)}
    said = next(k for k in expected if k in saved.observation)
    assert (aria.hp, aria.death_successes, aria.death_failures) == expected[said]
    aria.hp = 0  # whatever the die said, dying again for what follows
    tended = call(ctx, '<stabilize character="Aria"/>')
    assert tended.ok and state.characters["u1"].stable and state.characters["u1"].death_failures == 0
    healed = call(ctx, '<update_hp target="Aria" amount="4" kind="healing"/>')
    aria = state.characters["u1"]
    assert healed.ok and "regains consciousness" in healed.observation and aria.hp == 4 and not aria.stable
    assert "unconscious" not in aria.conditions
    refused = call(ctx, '<death_save character="Bram"/>')
    assert not refused.ok and "Bram is not dying" in refused.observation
    assert call(ctx, '<update_hp target="Aria" amount="40"/>').ok and state.characters["u1"].dead  # massive
    gone = call(ctx, '<update_hp target="Aria" amount="4" kind="healing"/>')
    assert not gone.ok and "Aria is dead" in gone.observation


def test_a_healers_medicine_and_spare_the_dying(state):
    ctx = ctx_for(state)
    aria = state.characters["u1"]
    aria.hp = 0
    life._down(aria)
    tended = call(ctx, '<stabilize character="Aria" healer="Bram"/>')
    assert tended.ok and "Bram tends Aria: Medicine check" in tended.observation and "vs DC 10" in tended.observation
    assert state.characters["u1"].stable == ("success" in tended.observation)
    cleric = make_character("u3", "Cass", "cleric")
    state.characters["u3"] = cleric
    state.party.player_ids.append("u3")
    state.characters["u1"].stable = False
    spared = call(ctx_for(state, actor="u3"), '<cast_spell caster="Cass" spell="Spare the Dying" target="Aria"/>')
    assert spared.ok, spared.observation
    assert state.characters["u1"].stable and "Aria is stable" in spared.observation


def test_false_life_gives_temporary_hit_points(state):
    wizard = make_character("u2", "Bram", "wizard")
    wizard.spells = ["False Life"]
    state.characters["u2"] = wizard
    cast = call(ctx_for(state, actor="u2"), '<cast_spell caster="Bram" spell="False Life"/>')
    assert cast.ok and "temporary hit points" in cast.observation
    assert 5 <= state.characters["u2"].temp_hp <= 8


async def test_a_dying_player_rolls_their_own_death_save_and_the_tracker_says_so(table):
    await table.turn("We fight.", '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>',
                     " A crab!")
    session = await table.engine.session(CHANNEL)
    session.state.characters["u1"].hp = 0
    life._down(session.state.characters["u1"])
    session.state.combat.turn_index = [p.id for p in session.state.combat.order].index("u2")
    await table.store.save_state(session.id, session.state, [], version=session.version)
    with pytest.raises(BadInput, match="It is Bram's turn, not Aria's"):
        await table.engine.death_save(CHANNEL, "u1", "bob")
    session = await table.engine.session(CHANNEL)
    session.state.combat.turn_index = [p.id for p in session.state.combat.order].index("u1")
    await table.store.save_state(session.id, session.state, [], version=session.version)
    text = await table.engine.death_save(CHANNEL, "u1", "bob")
    assert text.startswith("Aria makes a death saving throw")
    from engine.tools.combat import tracker

    state = await table.state()
    aria = state.characters["u1"]
    shown = f"HP {aria.hp}/{aria.max_hp}" if aria.hp else life.state_line(aria)  # back on a 20, else how she lies
    assert "Aria [player] init" in tracker(state) and shown in tracker(state)


def test_damage_calls_for_a_concentration_save(state):
    ctx = ctx_for(state)
    held = broken = 0
    for seed in range(60):
        trial = state.model_copy(deep=True)
        bram = trial.characters["u2"]
        bram.concentration = "Hold Person"
        result = call(ctx_for(trial, seed=seed), '<update_hp target="Bram" amount="2"/>')
        assert "Concentration on Hold Person: Constitution saving throw" in result.observation
        assert "vs DC 10" in result.observation  # 2 damage: DC 10 (half of it is less)
        if trial.characters["u2"].concentration is None:
            broken += 1
            assert result.observation.endswith("it ends.")
        else:
            held += 1
            assert result.observation.endswith("it holds.")
    assert held and broken
    state.characters["u2"].hp = 60
    state.characters["u2"].max_hp = 60
    state.characters["u2"].concentration = "Hold Person"
    hard = call(ctx, '<update_hp target="Bram" amount="30"/>')
    assert "vs DC 15" in hard.observation  # half of 30
