"""Weapon attacks and levels from the sheet: the to-hit bonus and damage the SRD gives, hits and misses with the
engine's seeded dice, damage applied to the target, refusals that change nothing, and levelling up."""

from __future__ import annotations

import random
import re

import pytest

from engine import BadInput, NoCharacter
from engine.characters import make_character
from engine.rules.attacks import critical, find_weapon, profile, swing
from engine.rules.data import rules
from engine.basics import xp_for
from engine.rules.levels import level_up
from engine.basics import AgentType, Item
from tests.conftest import CHANNEL, call, new_state, turn_of
from tests.test_tools import attack_until, fight, unchanged


def test_to_hit_and_damage_follow_the_ability_the_weapon_uses():
    fighter = make_character("u", "Aria", "fighter")  # STR 16 (+3), DEX 14 (+2), a shield carried
    sword = profile(fighter, find_weapon(fighter, "Longsword"))
    assert (sword.ability, sword.proficient, sword.bonus, sword.damage) == ("strength", True, 5, "1d8+3")
    assert sword.describe() == "longsword +5, 1d8+3 slashing"  # one hand: the shield takes the other
    bow = profile(fighter, find_weapon(fighter, "light crossbow"))
    assert (bow.ability, bow.bonus, bow.damage) == ("dexterity", 4, "1d8+2") and "range 80/320 ft" in bow.describe()
    rogue = make_character("u", "Vex", "rogue")  # DEX 16 beats STR 9 with a finesse weapon
    assert (profile(rogue, find_weapon(rogue, "rapier")).bonus, profile(rogue, find_weapon(rogue, "dagger")).damage) == (5, "1d4+3")
    wizard = make_character("u", "Bram", "wizard")  # STR 9: no shield, so the staff in both hands
    staff = profile(wizard, find_weapon(wizard, "quarterstaff"))
    assert (staff.bonus, staff.damage) == (1, "1d8-1")
    wizard.inventory.append(Item(name="greatsword"))  # a martial weapon: no proficiency bonus
    assert profile(wizard, find_weapon(wizard, "greatsword")).bonus == -1
    monk = make_character("u", "Ko", "monk")  # martial arts: DEX with the shortsword
    assert profile(monk, find_weapon(monk, "shortsword")).ability == "dexterity"
    assert critical("1d8+3") == "2d8+3" and critical("2d6") == "4d6"
    with pytest.raises(BadInput, match="Aria carries no rapier. Weapons carried: longsword, light crossbow."):
        find_weapon(fighter, "rapier")
    with pytest.raises(BadInput, match="'longswrd' is not a weapon Aria carries. Did you mean longsword?"):
        find_weapon(fighter, "longswrd")


def test_a_swing_hits_at_the_ac_and_a_natural_20_doubles_the_dice():
    fighter = make_character("u", "Aria", "fighter")
    sword = profile(fighter, find_weapon(fighter, "longsword"))
    seen = set()
    for seed in range(300):
        rolled = swing(sword, random.Random(seed), ac=15)
        natural, total = rolled.to_hit.natural, rolled.to_hit.total
        assert rolled.hit == (natural == 20 or (natural != 1 and total >= 15))
        assert (rolled.damage is None) == (not rolled.hit)
        if rolled.critical:
            assert rolled.damage.expression == "2d8+3" and 5 <= rolled.damage.total <= 19
        elif rolled.hit:
            assert rolled.damage.expression == "1d8+3" and 4 <= rolled.damage.total <= 11
        seen.add("crit" if rolled.critical else "hit" if rolled.hit else "miss")
    assert seen == {"crit", "hit", "miss"}
    assert swing(sword, random.Random(1), mode="advantage").to_hit.expression == "1d20+5 adv"
    assert swing(sword, random.Random(1)) == swing(sword, random.Random(1))  # the same seed, the same story


def test_the_agents_attack_tool_reads_a_player_characters_weapon_from_the_sheet():
    tag = '<attack attacker="Aria" target="Rat" weapon="longsword" bonus="1" damage="1d4"/>'
    state, rat, hit = attack_until(new_state, 12, tag, lambda o: ", hit;" in o)
    dealt = int(re.search(r"damage 1d8\+3 → (\d+) slashing", hit.observation).group(1))
    assert "Aria attacks Rat with longsword: 1d20+5 →" in hit.observation and rat.hp == 30 - dealt
    assert "from Aria's sheet" in hit.observation and "sheet" not in hit.meta["public"]
    state, rat, crit = attack_until(new_state, 30, '<attack target="Rat" weapon="longsword"/>', lambda o: "critical" in o)
    assert "critical hit (damage dice doubled); damage 2d8+3 →" in crit.observation and rat.hp < 30
    state, rat, shot = attack_until(new_state, 1, '<attack attacker="Aria" target="Rat" weapon="light crossbow"/>',
                                    lambda o: ", hit;" in o)
    assert "19 crossbow bolts left." in shot.observation and state.characters["u1"].item("crossbow bolts").quantity == 19


def test_refused_attacks_change_nothing(state):
    cctx, rat = fight(state, ac=10)
    aria = state.characters["u1"]
    aria.inventory = [i for i in aria.inventory if i.name != "crossbow bolts"]
    before = state.model_copy(deep=True)
    for tag, said in (('<attack target="Rat" weapon="light crossbow"/>', "has no crossbow bolts left"),
                      ('<attack target="Nobdy" weapon="longsword"/>', "no one called 'Nobdy'"),
                      ('<attack target="Aria" weapon="longsword"/>', "cannot attack themselves"),
                      ('<attack target="Rat" weapon="rapier"/>', "Aria carries no rapier")):
        done = call(cctx, tag)
        assert not done.ok and said in done.observation, done.observation
    assert unchanged(state, before)
    aria = cctx.state.characters["u1"]  # a failed call leaves the context a fresh copy of the state
    aria.inventory.append(Item(name="Crossbow Bolt"))  # one, named as a player might
    turn_of(cctx.state, "Aria")
    shot = call(cctx, '<attack target="Rat" weapon="light crossbow"/>')
    assert shot.ok and "0 crossbow bolts left." in shot.observation
    assert cctx.state.characters["u1"].item("crossbow bolt") is None


async def test_a_players_attack_deals_damage_and_enters_the_story(table):
    session = await table.engine.session(CHANNEL)
    npc = session.state.present_npcs()[0]
    hits = misses = 0
    for _ in range(12):  # the engine's dice decide; every outcome must read as the numbers say
        before = (await table.state()).npcs[npc.id].hp
        text = await table.engine.player_attack(CHANNEL, "u1", "bob", "longsword", npc.name.split()[0], "advantage",
                                                confirmed=True)  # no enemy: her player said yes
        after = (await table.state()).npcs[npc.id].hp
        total = int(re.search(rf"Aria attacks {npc.name} with longsword: 1d20\+5 adv → (-?\d+) vs AC {npc.ac}", text).group(1))
        if ", miss" in text:
            misses += 1
            assert after == before and (total < npc.ac or "natural 1" in text)
        else:
            hits += 1
            dealt = int(re.search(r"damage \dd8\+3 → (\d+) slashing", text).group(1))
            assert after == max(0, before - dealt) and (total >= npc.ac or "natural 20" in text)
        if after == 0:
            break
    assert hits
    lines = [m for m in await table.store.messages(session.id) if m.author_id == "u1"]
    assert len(lines) == hits + misses and lines[-1].agent is AgentType.PLAYER and lines[-1].text.startswith("Aria attacks")
    free = await table.engine.player_attack(CHANNEL, "u2", "al", "quarterstaff")  # no target: just the rolls
    assert re.fullmatch(r"Bram attacks with quarterstaff: 1d20\+1 → -?\d+ to hit.*; damage \dd8-1 → -?\d+ bludgeoning "
                        r"if it hits\.", free)


async def test_a_refused_players_attack_changes_nothing(table):
    session = await table.engine.session(CHANNEL)
    before = (await table.state()).model_dump()
    count = len(await table.store.messages(session.id))
    with pytest.raises(BadInput, match="Aria cannot attack: 'longswrd' is not a weapon Aria carries. Did you mean longsword"):
        await table.engine.player_attack(CHANNEL, "u1", "bob", "longswrd", "Ysolde")
    with pytest.raises(BadInput, match="no one called 'Nobody' has hit points here"):
        await table.engine.player_attack(CHANNEL, "u1", "bob", "light crossbow", "Nobody")  # no bolt is spent
    with pytest.raises(NoCharacter):
        await table.engine.player_attack(CHANNEL, "stranger", "x", "longsword")
    assert (await table.state()).model_dump() == before and len(await table.store.messages(session.id)) == count


def earned(ch):
    """The game gives the next level (the GM or an admin awards its XP): what /levelup needs."""
    ch.xp = xp_for(ch.level + 1)
    return ch


def test_a_level_up_raises_hit_points_hit_dice_and_brings_the_levels_features():
    fighter = make_character("u", "Aria", "fighter")  # CON 15 (+2)
    gained = level_up(earned(fighter), random.Random(1))
    assert (fighter.level, fighter.max_hp, fighter.hp, fighter.hit_dice) == (2, 12 + 8, 12 + 8, 2)
    assert gained.describe() == ("Aria reaches level 2: +8 HP (average 6, CON +2), max HP 20. New: Action Surge "
                                 "(Once per short rest, take one more action on your turn).")
    level_up(earned(fighter), random.Random(1))
    with pytest.raises(BadInput, match="Level 4 brings Aria an Ability Score Improvement: choose it"):
        level_up(earned(fighter), random.Random(1))
    assert fighter.level == 3  # asked, nothing changed
    with pytest.raises(BadInput, match="Strength would rise above 20"):
        level_up(earned(fighter.model_copy(update={"abilities": fighter.abilities.model_copy(update={"strength": 19})})),
                 random.Random(1), improve="str")
    four = level_up(earned(fighter), random.Random(1), improve="strength, con")  # CON 15 → 16: +1 HP a level
    assert four.describe().endswith("Ability Score Improvement: Strength +1 to 17, Constitution +1 to 16.")
    assert (fighter.abilities.strength, fighter.abilities.constitution, fighter.max_hp) == (17, 16, 12 + 3 * 8 + 4)
    with pytest.raises(BadInput, match="Level 5 brings Aria no Ability Score Improvement"):
        level_up(earned(fighter.model_copy(deep=True)), random.Random(1), improve="str")
    gained = level_up(earned(fighter), random.Random(1))
    assert fighter.level == 5 and gained.proficiency_rose and "proficiency bonus +3" in gained.describe()
    assert [f.name for f in gained.features] == ["Extra Attack"] == [f.name for f in rules().classes["fighter"].features_at(5)]
    wizard = make_character("u", "Bram", "wizard")
    wizard.hp = 3
    for seed in range(30):
        rolled = level_up(earned(wizard.model_copy(deep=True)), random.Random(seed), rolled=True)
        die = int(re.search(r"rolled 1d6 → (\d)", rolled.how).group(1))
        assert rolled.gained == max(1, die + 2) and 1 <= die <= 6
    top = make_character("u", "Old", "wizard", level=20)
    with pytest.raises(BadInput, match="Old is already level 20"):
        level_up(top, random.Random(1))


async def test_levelling_up_enters_the_story_and_waits_for_the_fight_to_end(table):
    await table.engine.award(CHANNEL, "gm", xp=300, to=["Bram"])
    ch, gained = await table.engine.level_up(CHANNEL, "u2", "al", roll=True)
    assert ch.level == 2 and (await table.state()).characters["u2"].max_hp == gained.max_hp
    session = await table.engine.session(CHANNEL)
    assert (await table.store.messages(session.id))[-1].text == gained.describe()
    with pytest.raises(NoCharacter):
        await table.engine.level_up(CHANNEL, "stranger", "x")
    await table.turn("I draw my sword.", '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>',
                     " A crab scuttles out.")
    assert (await table.state()).combat.active
    await table.engine.award(CHANNEL, "gm", xp=600, to=["Bram"])
    with pytest.raises(BadInput, match="Bram can level up when the fight is over."):
        await table.engine.level_up(CHANNEL, "u2", "al")
    session = await table.engine.session(CHANNEL)  # Aria's turn, whatever the initiative rolled
    session.state.combat.turn_index = [p.id for p in session.state.combat.order].index("u1")
    await table.store.save_state(session.id, session.state, [], version=session.version)
    text = await table.engine.player_attack(CHANNEL, "u1", "bob", "longsword", "crab")  # an enemy of the fight
    assert text.startswith("Aria attacks Crab with longsword: 1d20+5 → ") and "vs AC 11" in text


def test_armour_that_changes_hands_changes_the_armour_class(state):
    from engine.characters import import_character
    from tests.conftest import ctx_for

    aria = state.characters["u1"]
    assert aria.ac == 19  # chain mail 16, Defense 1, shield 2
    assert call(ctx_for(state), '<modify_inventory item="chain mail" quantity="-1" character="Aria"/>').ok
    assert aria.ac == 10 + 2 + 2  # DEX and the shield
    assert call(ctx_for(state), '<modify_inventory item="plate armor" quantity="1" character="Aria"/>').ok
    assert aria.ac == 19 + 2
    state.characters["u3"] = given = import_character("u3", {"name": "Vex", "class": "rogue", "ac": 17})
    assert call(ctx_for(state), '<modify_inventory item="leather armor" quantity="-1" character="Vex"/>').ok
    assert given.ac == 17  # an AC set by hand stays as it was given
    sheet = call(ctx_for(state), '<get_character name="Vex"/>').observation
    assert "AC 17 (as given)" in sheet and "rapier +5, 1d8+3 piercing" in sheet and "Sneak Attack" in sheet
    seen = call(ctx_for(state, AgentType.NPC, npc="ysolde-marrick"), '<get_character name="Vex"/>').observation
    assert seen.startswith("Vex, a human rogue, looks hale.")  # an NPC sees the species, not the sheet


def test_a_casters_level_up_brings_its_new_slots_and_the_classes_next_spells():
    from engine.rules import spells

    wizard = make_character("u1", "Bram", "wizard")
    wizard.slots_spent = {1: 2}  # both 1st-level slots spent before the level
    gained = level_up(earned(wizard), random.Random(1))
    assert spells.slots_for("wizard", 2) == {1: 3} and spells.slots_left(wizard) == {1: 1}  # the new one, at once
    assert gained.slots == "1st 3" and "Spell slots: 1st 3." in gained.describe()
    level_up(earned(wizard), random.Random(1))
    gained = level_up(earned(wizard), random.Random(1), improve="intelligence")  # 4th: an Ability Score Improvement
    assert wizard.level == 4 and gained.slots == "1st 4, 2nd 3" and wizard.abilities.intelligence == 18  # 16 + 2
    assert len(spells.cantrips_of(wizard)) == spells.cantrips_allowed("wizard", 4) == 4  # a 4th cantrip at 4th level
    assert gained.learned and f"Learns {gained.learned[0]}" in gained.describe()
    fighter = make_character("u2", "Aria", "fighter")
    plain = level_up(earned(fighter), random.Random(1))
    assert plain.learned == [] and plain.slots == "" and "Spell" not in plain.describe()
