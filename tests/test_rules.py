"""Checks and saving throws from the sheet: the modifier and proficiency the SRD gives, for players' commands and
for the agents' tools alike."""

from __future__ import annotations

import random
import re

import pytest

from engine import BadInput, NoCharacter
from engine.characters import make_character
from engine.rules import CLASS_SAVES, CLASS_SKILLS, check, proficiencies, proficiency_bonus
from engine.basics import AgentType
from engine.tools import tools_for
from tests.conftest import CHANNEL, call, ctx_for


def test_the_proficiency_bonus_grows_every_four_levels():
    assert [proficiency_bonus(level) for level in (1, 4, 5, 8, 9, 13, 17, 20)] == [2, 2, 3, 3, 4, 5, 6, 6]


def test_a_check_adds_the_ability_and_the_proficiency_the_sheet_gives():
    rogue = make_character("u", "Vex", "rogue")  # a human: DEX 16 (+3), STR 9 (-1); stealth, dexterity saves proficient
    rng = random.Random(4)
    stealth, athletics = check(rogue, "Stealth", rng), check(rogue, "athletics", rng)
    assert (stealth.label, stealth.modifier, stealth.proficient) == ("Stealth check", 5, True)
    assert (athletics.label, athletics.modifier, athletics.proficient) == ("Athletics check", -1, False)
    assert stealth.roll.expression == "1d20+5" and athletics.roll.expression == "1d20-1"
    dex_save, wis_save = check(rogue, "dex", rng, save=True), check(rogue, "Wisdom", rng, save=True)
    assert (dex_save.label, dex_save.modifier) == ("Dexterity saving throw", 5)
    assert (wis_save.label, wis_save.modifier, wis_save.roll.expression) == ("Wisdom saving throw", 0, "1d20")
    assert check(rogue, "strength", rng).label == "Strength check"  # a plain ability check: no proficiency
    assert "2d20kh1" in check(rogue, "stealth", rng, "advantage").roll.detail
    assert "2d20kl1" in check(rogue, "stealth", rng, "disadvantage").roll.detail


def test_a_dc_decides_success_and_mistakes_are_named():
    rogue = make_character("u", "Vex", "rogue")
    result = check(rogue, "stealth", random.Random(1))
    assert result.outcome(result.roll.total).endswith("success") and result.outcome(result.roll.total + 1).endswith("failure")
    with pytest.raises(BadInput, match="'stelth' is neither a skill nor an ability. Did you mean stealth?"):
        check(rogue, "stelth", random.Random(1))
    with pytest.raises(BadInput, match="'stealth' is not an ability: a saving throw is strength"):
        check(rogue, "stealth", random.Random(1), save=True)


def test_characters_saved_before_proficiencies_use_their_class():
    old = make_character("u", "Old", "wizard").model_copy(update={"saves": [], "skills": []})
    assert check(old, "arcana", random.Random(1)).proficient and check(old, "int", random.Random(1), save=True).proficient
    assert proficiencies(old) == "Proficiency +2 · saves: Intelligence, Wisdom · skills: Arcana, Investigation"
    assert all(set(CLASS_SKILLS[c]) and len(CLASS_SAVES[c]) == 2 for c in CLASS_SAVES)


def test_the_agents_tools_roll_from_the_sheet_against_their_dc(state):
    ctx = ctx_for(state)
    done = call(ctx, '<ability_check character="Aria" skill="athletics" dc="12"/>')
    assert done.ok and done.observation.startswith("Aria's Athletics check 1d20+5 → ")
    assert re.search(r" vs DC 12: (success|failure)$", done.observation)
    assert done.meta["public"] == done.observation  # players read the same line
    saved = call(ctx, '<saving_throw character="Bram" ability="wis" dc="14" advantage="advantage"/>')
    assert saved.ok and saved.observation.startswith("Bram's Wisdom saving throw 1d20+3 adv →")
    undecided = call(ctx, '<ability_check character="Aria" skill="perception"/>')
    assert undecided.observation.endswith("(no DC given: judge the total yourself)")
    assert "there is no player character called 'Zed'" in call(ctx, '<ability_check character="Zed" skill="stealth"/>').observation
    refused = call(ctx, '<saving_throw character="Aria" ability="luck"/>').observation
    assert "'luck' is not an ability" in refused and ".." not in refused
    names = {t.name for t in tools_for(AgentType.NPC)}
    assert "ability_check" not in names and "saving_throw" not in names  # an NPC does not roll for the players
    assert {"ability_check", "saving_throw"} <= {t.name for t in tools_for(AgentType.COMBAT)}


async def test_a_players_own_check_enters_the_story(table):
    name, result = await table.engine.player_check(CHANNEL, "u1", "bob", "perception", "advantage")
    assert name == "Aria" and result.label == "Perception check" and result.proficient
    session = await table.engine.session(CHANNEL)
    [line] = [m for m in await table.store.messages(session.id) if m.author_id == "u1"]
    assert line.text.startswith("Aria rolls 1d20+3 adv →") and line.text.endswith("for a Perception check.")
    with pytest.raises(NoCharacter):
        await table.engine.player_check(CHANNEL, "stranger", "x", "stealth")
