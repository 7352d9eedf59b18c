"""Characters from a JSON file: what is given is kept, what is left out comes from the class, and every problem
is named at once; the documented example imports as it says."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine import BadInput
from engine.characters import CharacterFile, import_character, make_character
from tests.conftest import CHANNEL

DOC = Path(__file__).resolve().parent.parent / "docs" / "character-format.md"


def documented_example() -> dict:
    return json.loads(DOC.read_text(encoding="utf-8").split("```json\n", 1)[1].split("```", 1)[0])


def test_the_documented_example_imports_as_written():
    ch = import_character("u1", documented_example())
    assert (ch.name, ch.char_class, ch.level, ch.hp, ch.max_hp, ch.ac) == ("Aria Vell", "fighter", 3, 21, 28, 18)
    assert ch.abilities.strength == 16 and ch.skills == ["athletics", "intimidation"]
    assert [(i.name, i.quantity) for i in ch.inventory] == [("longsword", 1), ("shield", 1), ("healing potion", 2)]
    assert (ch.currency.gp, ch.currency.sp) == (40, 5)
    assert (ch.species, ch.background) == ("dwarf", "sellsword") and ch.abilities.constitution == 14  # scores as given
    documented = set(re.findall(r"`([a-z_]+)`", DOC.read_text(encoding="utf-8")))
    assert {f.alias or name for name, f in CharacterFile.model_fields.items()} <= documented


def test_what_is_left_out_comes_from_the_class():
    assert import_character("u1", {"name": "Bram", "class": "wizard"}) == make_character("u1", "Bram", "wizard")
    sturdy = import_character("u1", {"name": "Bram", "class": "wizard", "abilities": {"constitution": 18}})
    assert sturdy.max_hp == 6 + 4 and sturdy.hp == sturdy.max_hp  # hit points follow the scores given


def test_without_an_ac_the_imported_pack_sets_it():
    kit = make_character("u1", "Aria", "fighter")  # the class kit: chain mail and a shield
    plate = import_character("u1", {"name": "Aria", "class": "fighter", "abilities": {"dexterity": 14},
                                    "inventory": [{"name": "plate armor"}, {"name": "shield"}]})
    assert plate.ac == 18 + 1 + 2 != kit.ac  # plate (no Dexterity), Defense and a shield, not the kit's chain mail
    leather = import_character("u1", {"name": "Aria", "class": "fighter", "abilities": {"dexterity": 14},
                                      "inventory": [{"name": "leather armor"}]})
    assert leather.ac == 11 + 2 + 1  # leather, DEX, Defense
    monk = import_character("u1", {"name": "Sen", "class": "monk", "abilities": {"dexterity": 16, "wisdom": 14},
                                   "inventory": [{"name": "quarterstaff"}]})
    assert monk.ac == 10 + 3 + 2  # unarmoured defence
    given = import_character("u1", {"name": "Aria", "class": "fighter", "ac": 21, "inventory": [{"name": "leather armor"}]})
    assert given.ac == 21  # a sheet's own AC (a magic item, a fighting style) is kept as written


def test_species_and_background_shape_what_is_left_out():
    ch = import_character("u1", {"name": "Ilva", "class": "wizard", "species": "High Elf", "background": "dockhand"})
    assert ch == make_character("u1", "Ilva", "wizard", species="elf", background="dockhand")
    assert ch.abilities.dexterity == 13 + 2 and {"athletics", "perception"} <= set(ch.skills)
    with pytest.raises(BadInput) as bad:
        import_character("u1", {"name": "Ilva", "class": "wizard", "species": "elfe", "background": "sailor"})
    assert "species: 'elfe' is not a species I know. Did you mean elf?" in bad.value.message
    assert "background: 'sailor' is not a background I know" in bad.value.message


def test_every_problem_is_named_at_once():
    with pytest.raises(BadInput) as bad:
        import_character("u1", {"name": "Zed", "class": "rogue", "lvl": 2, "skills": ["stelth"],
                                "abilities": {"strength": 40}, "inventory": [{"quantity": 2}]})
    assert bad.value.message.splitlines() == [
        "The character file has problems:",
        "- abilities.strength: must be at most 30 (got 40)",
        "- skills: 'stelth' is not a skill: did you mean 'stealth'?",
        "- inventory[#1].name: is required but missing",
        "- lvl: 'lvl' is not a field here: did you mean 'level'?"]
    with pytest.raises(BadInput, match="at most max_hp|more than max_hp"):
        import_character("u1", {"name": "Zed", "class": "rogue", "max_hp": 9, "hp": 12})
    with pytest.raises(BadInput, match="one JSON object"):
        import_character("u1", ["not", "an", "object"])
    with pytest.raises(BadInput, match="Did you mean fighter?"):
        import_character("u1", {"name": "Zed", "class": "fightr"})


async def test_an_imported_character_joins_the_game(table):
    data = documented_example()
    with pytest.raises(BadInput, match="Characters begin at level 1 at most in this game"):
        await table.engine.import_character(CHANNEL, "u3", data)  # a level-3 sheet: the game starts at 1
    session = await table.engine.session(CHANNEL)
    session.state.starting_level = 3  # as /gm-admin config starting_level:3 would
    await table.store.save_state(session.id, session.state, version=session.version)
    ch = await table.engine.import_character(CHANNEL, "u3", data)
    state = await table.state()
    assert state.characters["u3"] == ch and "u3" in state.party.player_ids
    with pytest.raises(BadInput, match="You already play Aria Vell"):
        await table.engine.import_character(CHANNEL, "u3", data)
    with pytest.raises(BadInput, match="Someone called Aria is already"):
        await table.engine.import_character(CHANNEL, "u4", dict(data, name="Aria"))


def test_ability_scores_are_the_standard_array_a_point_buy_or_4d6_drop_lowest():
    import random

    from engine.characters import ability_scores

    assert ability_scores(None, "wizard", random.Random(1)) == (None, "the standard array")
    chosen, made = ability_scores("8, 15 14 13 12 10", "wizard", random.Random(1))
    assert made == "the standard array" and (chosen.strength, chosen.dexterity, chosen.charisma) == (8, 15, 10)
    bought, made = ability_scores("15 15 15 8 8 8", "wizard", random.Random(1))
    assert made == "point buy (27 of 27 points)" and bought.constitution == 15
    rolled, made = ability_scores("roll", "wizard", random.Random(7))
    dice = re.findall(r"(\d)\+(\d)\+(\d) \(dropped (\d)\)", made)
    assert len(dice) == 6 and all(int(low) <= min(int(a), int(b), int(c)) for a, b, c, low in dice)
    totals = sorted((sum(map(int, d[:3])) for d in dice), reverse=True)
    assert rolled.intelligence == totals[0] and rolled.strength == totals[-1]  # the best where the class needs it
    assert ability_scores("roll", "wizard", random.Random(7)) == (rolled, made)  # the engine's seeded dice
    for bad, said in (("15 15 15 15 8 8", "costs 36 points"), ("18 8 8 8 8 8", "each score is 8 to 15"),
                      ("lots", "six numbers in the order STR DEX CON INT WIS CHA")):
        with pytest.raises(BadInput, match=said):
            ability_scores(bad, "wizard", random.Random(1))


async def test_chosen_scores_are_kept_in_the_story(table):
    ch, made = await table.engine.create_character_scored(CHANNEL, "u3", "Cora", "bard", scores="roll")
    assert made.startswith("4d6 dropping the lowest:")
    session = await table.engine.session(CHANNEL)
    assert [m.text for m in await table.store.messages(session.id) if m.author_id == "u3"] == [
        f"Cora's ability scores come from {made}."]
