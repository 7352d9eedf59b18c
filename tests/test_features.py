"""Class features as rules (engine/rules/features.py, engine/tools/class_features.py): what is spent and what a rest
gives back, and the features that change numbers (Rage, Sneak Attack, Divine Smite, Improved and Brutal Critical,
Jack of All Trades, Remarkable Athlete, Danger Sense, Aura of Protection, Fast and Unarmored Movement, Disciple of
Life, Evasion), each against the SRD's own numbers."""

from __future__ import annotations

import random
import re

import pytest

from engine.characters import make_character
from engine.errors import BadInput
from engine.rules import check, features, origins
from engine.rules.attacks import profile, swing
from engine.rules.data import weapon
from engine.state import Character, GameState
from engine.tools.attacks import weapon_attack
from engine.tools.class_features import use
from engine.tools.spells import cast
from tests.conftest import CHANNEL, call, ctx_for, new_state, turn_of


def join(state: GameState, owner: str, name: str, cls: str, level: int, **update) -> Character:
    ch = make_character(owner, name, cls, level).model_copy(update=update)
    state.characters[owner] = ch
    state.party.player_ids.append(owner)
    return ch


def fight(state: GameState, *enemies: str) -> None:
    body = ", ".join(enemies)
    assert call(ctx_for(state), f'<start_combat>{{"enemy": [{body}]}}</start_combat>').ok


def foe(state: GameState, name: str):
    return next(p for p in state.combat.order if p.name == name)


def hit(state: GameState, name: str, weapon_name: str, target: str, **kw) -> str:
    """An attack that hits (no critical), the first seed that does on a copy, then played on the game itself (on a
    fresh turn of the attacker's)."""
    turn_of(state, name)
    for seed in range(400):
        trial = GameState.model_validate(state.model_dump())
        told = weapon_attack(ctx_for(trial, "combat", seed=seed), trial.find_character(name), weapon_name, target, **kw)
        if ", hit;" in told:
            return weapon_attack(ctx_for(state, "combat", seed=seed), state.find_character(name), weapon_name, target,
                                 **kw)
    raise AssertionError("never hit")


@pytest.mark.parametrize("cls, level, expected", [
    ("barbarian", 1, "Rage 2/2 (long rest)"), ("barbarian", 6, "Rage 4/4 (long rest)"),
    ("barbarian", 20, "Rage unlimited (long rest)"),
    ("fighter", 1, "Second Wind 1/1 (short rest)"), ("fighter", 17, "Second Wind 1/1 (short rest), Action Surge 2/2 (short rest)"),
    ("paladin", 3, "Lay on Hands 15/15 hit points (long rest), Channel Divinity 1/1 (short rest)"),
    ("cleric", 6, "Channel Divinity 2/2 (short rest)"), ("cleric", 1, ""),
    ("monk", 5, "Ki 5/5 ki points (short rest)"), ("sorcerer", 4, "Sorcery Points 4/4 sorcery points (long rest)"),
    ("druid", 2, "Wild Shape 2/2 (short rest)"), ("wizard", 1, "Arcane Recovery 1/1 (long rest)"),
    ("rogue", 5, ""), ("ranger", 5, ""), ("warlock", 5, ""),
])
def test_each_class_has_its_srd_uses_at_its_level(cls, level, expected):
    ch = make_character("u", "X", cls, level)
    assert features.lines(ch) == ([expected] if expected else [])


def test_bardic_inspiration_uses_are_the_charisma_modifier_and_come_back_on_a_short_rest_from_5th():
    bard = make_character("u", "Lark", "bard", 1)
    cha = max(1, bard.abilities.mod("charisma"))
    assert features.lines(bard) == [f"Bardic Inspiration {cha}/{cha} (long rest)"]
    assert features.lines(make_character("u", "Lark", "bard", 5)) == [f"Bardic Inspiration {cha}/{cha} (short rest)"]
    assert [features.inspiration_die(n) for n in (1, 5, 10, 15)] == ["1d6", "1d8", "1d10", "1d12"]


def test_rage_adds_damage_resists_weapons_and_gives_strength_advantage_then_ends_at_0_hp():
    state = new_state()
    korg = join(state, "u3", "Korg", "barbarian", 1)
    said = use(ctx_for(state, actor="u3"), korg, "rage")
    assert said.startswith("Korg rages: Rage (") and "+2 Strength melee damage" in said and "(1 left)" in said
    assert korg.used == {"Rage": 1}
    with pytest.raises(BadInput, match="already raging"):
        use(ctx_for(state, actor="u3"), korg, "rage")
    assert "advantage: Rage" in check(korg, "athletics", random.Random(1)).label
    assert check(korg, "strength", random.Random(1), save=True).roll.expression.endswith(" adv")
    fight(state, '{"name": "Ogre", "hp": 200, "ac": 5}')
    swung = hit(state, "Korg", "greataxe", "Ogre")
    assert re.search(r"damage 1d12\+3\+2 → \d+ slashing", swung), swung  # STR +3, then rage +2
    struck = call(ctx_for(state, "combat"), '<attack attacker="Ogre" target="Korg" weapon="club" bonus="30" '
                                            'damage="2d6+4" damage_type="bludgeoning"/>').observation
    assert "resists bludgeoning" in struck and "halved" in struck
    assert "Rage ends: Korg has dropped." in call(ctx_for(state), '<update_hp target="Korg" amount="200"/>').observation
    assert not state.find_character("Korg").effects


def test_rage_is_refused_in_heavy_armour_and_a_raging_barbarian_casts_nothing():
    state = new_state()
    korg = join(state, "u3", "Korg", "barbarian", 3)
    korg.inventory.append(korg.inventory[0].model_copy(update={"name": "plate armor", "quantity": 1}))
    with pytest.raises(BadInput, match="heavy armour"):
        use(ctx_for(state, actor="u3"), korg, "rage")
    assert korg.used == {}


def test_second_wind_heals_and_a_short_rest_gives_it_back_a_long_rest_gives_everything():
    state = new_state()
    aria = state.characters["u1"]
    aria.hp = 1
    said = use(ctx_for(state), aria, "second wind")
    assert re.match(r"Aria uses Second Wind: 1d10\+1 → (\d+)\. Aria regains \1 HP", said) and aria.used == {"Second Wind": 1}
    with pytest.raises(BadInput, match="has 0 uses of Second Wind left"):
        use(ctx_for(state), aria, "second wind")
    rested = call(ctx_for(state), '<short_rest character="Aria"/>').observation
    assert "Second Wind back." in rested and not state.characters["u1"].used
    korg = join(state, "u3", "Korg", "barbarian", 1, used={"Rage": 2})
    assert "Rage back" not in call(ctx_for(state), '<short_rest character="Korg"/>').observation
    assert state.find_character("Korg").used == {"Rage": 2}
    assert "Rage back" in call(ctx_for(state), '<long_rest character="Korg"/>').observation
    assert korg is not None and not state.find_character("Korg").used


def test_lay_on_hands_heals_from_its_pool_and_cures_a_poison():
    state = new_state()
    sera = join(state, "u3", "Sera", "paladin", 2)
    aria = state.characters["u1"]
    aria.hp = aria.max_hp - 4
    said = use(ctx_for(state, actor="u3"), sera, "lay on hands", "Aria")
    assert said.startswith("Sera lays hands on Aria (4 from the pool, 6 left).") and aria.hp == aria.max_hp
    aria.conditions.append("poisoned")
    assert "cure the poison (1 left)" in use(ctx_for(state, actor="u3"), sera, "lay on hands", "Aria", option="cure")
    with pytest.raises(BadInput, match="has 1 hit point of Lay on Hands left"):
        use(ctx_for(state, actor="u3"), sera, "lay on hands", "Aria", amount=3)


def test_turn_undead_frightens_undead_who_fail_and_refuses_the_living():
    state = new_state()
    iri = join(state, "u3", "Iri", "cleric", 2)
    fight(state, '{"monster": "zombie", "count": 2}', '{"name": "Bandit", "hp": 11, "ac": 12}')
    turn_of(state, "Iri")
    with pytest.raises(BadInput, match="undead only; Bandit is not"):
        use(ctx_for(state, actor="u3"), iri, "channel divinity", "Zombie 1, Bandit", option="turn undead")
    turn_of(state, "Iri")  # (a refused command's changes are dropped whole by the engine; here, called bare, anew)
    said = use(ctx_for(state, actor="u3"), iri, "channel divinity", "Zombie 1, Zombie 2", option="turn undead")
    assert said.startswith("Iri presents a holy symbol: Turn Undead, Wisdom save DC 13.")
    turned = [z for z in ("Zombie 1", "Zombie 2") if f"{z}: " in said and "turned" in said.split(f"{z}: ")[1].split(".")[0]]
    for z in turned:
        assert "frightened" in foe(state, z).conditions
    assert iri.used == {"Channel Divinity": 1}


def test_preserve_life_heals_no_one_above_half():
    state = new_state()
    iri = join(state, "u3", "Iri", "cleric", 2)
    aria, bram = state.characters["u1"], state.characters["u2"]
    aria.hp, bram.hp = 1, bram.max_hp // 2
    said = use(ctx_for(state, actor="u3"), iri, "channel divinity", "Aria, Bram", option="preserve life")
    assert aria.hp == aria.max_hp // 2 and bram.hp == bram.max_hp // 2 and "Preserve Life" in said


def test_bardic_inspiration_goes_on_the_next_roll_and_is_spent_by_it():
    state = new_state()
    lark = join(state, "u3", "Lark", "bard", 1)
    aria = state.characters["u1"]
    said = use(ctx_for(state, actor="u3"), lark, "bardic inspiration", "Aria")
    assert said.startswith("Lark inspires Aria: 1d6 on their next attack roll, save or check")
    first = check(aria, "athletics", random.Random(1))
    assert first.roll.expression.endswith("+1d6") and "Bardic Inspiration +1d6" in first.label
    assert not aria.effects and "+1d6" not in check(aria, "athletics", random.Random(1)).roll.expression
    with pytest.raises(BadInput, match="someone else"):
        use(ctx_for(state, actor="u3"), lark, "bardic inspiration", "Lark")


def test_ki_pays_for_its_moves_and_stunning_strike_stuns_on_a_failed_save():
    state = new_state()
    monk = join(state, "u3", "Jun", "monk", 5)
    assert "Flurry Of Blows" in use(ctx_for(state, actor="u3"), monk, "ki", option="flurry of blows")
    fight(state, '{"name": "Bandit", "hp": 11, "ac": 12}')
    turn_of(state, "Jun")
    for seed in range(50):
        trial = GameState.model_validate(state.model_dump())
        said = use(ctx_for(trial, actor="u3", seed=seed), trial.find_character("Jun"), "ki", "Bandit",
                   option="stunning strike")
        if "stunned" in said:
            break
    assert re.search(r"Bandit's Constitution save 1d20 → \d+ vs DC 13: stunned", said)  # 8 + proficiency 3 + WIS +2
    assert "stunned" in foe(trial, "Bandit").conditions and trial.find_character("Jun").used == {"Ki": 2}
    with pytest.raises(BadInput, match="Ki is spent on"):
        use(ctx_for(state, actor="u3"), monk, "ki", option="fly")


def test_sorcery_points_make_a_slot_and_arcane_recovery_brings_back_half_the_level():
    state = new_state()
    sorc = join(state, "u3", "Vex", "sorcerer", 3, slots_spent={1: 2, 2: 1})
    assert "turns 3 sorcery points into a level-2 slot" in use(ctx_for(state, actor="u3"), sorc, "sorcery points", slot=2)
    assert sorc.slots_spent == {1: 2, 2: 0} and sorc.used == {"Sorcery Points": 3}
    with pytest.raises(BadInput, match="has 0 sorcery points of Sorcery Points left"):
        use(ctx_for(state, actor="u3"), sorc, "sorcery points", slot=1)
    wiz = join(state, "u4", "Ilse", "wizard", 5, slots_spent={1: 2, 2: 1, 3: 1})
    said = use(ctx_for(state, actor="u4"), wiz, "arcane recovery")
    assert said == "Ilse uses Arcane Recovery: a level-3 slot back." and wiz.slots_spent == {1: 2, 2: 1}
    with pytest.raises(BadInput, match="0 uses of Arcane Recovery"):
        use(ctx_for(state, actor="u4"), wiz, "arcane recovery")


def test_wild_shape_follows_the_srd_limits():
    state = new_state()
    druid = join(state, "u3", "Oak", "druid", 2)
    assert "takes the shape of a Wolf" in use(ctx_for(state, actor="u3"), druid, "wild shape", option="wolf")
    with pytest.raises(BadInput, match="cannot take the shape of a Brown Bear"):
        use(ctx_for(state, actor="u3"), druid, "wild shape", option="brown bear")
    with pytest.raises(BadInput, match="no beast"):
        use(ctx_for(state, actor="u3"), druid, "wild shape", option="goblin")


def test_sneak_attack_needs_a_rogue_a_finesse_or_ranged_weapon_and_comes_once_a_turn():
    state = new_state()
    join(state, "u3", "Pip", "rogue", 3)
    fight(state, '{"name": "Ogre", "hp": 300, "ac": 5}')
    with pytest.raises(Exception, match="no rogue"):
        weapon_attack(ctx_for(state, "combat"), state.characters["u1"], "longsword", "Ogre", sneak=True)
    pip = state.find_character("Pip")
    blade = next(w for w in ("shortsword", "rapier", "dagger") if pip.item(w))
    sneaky = hit(state, "Pip", blade, "Ogre", sneak=True)
    assert re.search(r"plus 2d6 → \d+ piercing \(Sneak Attack\)", sneaky), sneaky  # rogue 3: 2d6
    with pytest.raises(Exception, match="once a turn"):
        weapon_attack(ctx_for(state, "combat"), state.find_character("Pip"), blade, "Ogre", sneak=True)


def test_divine_smite_spends_a_slot_on_a_melee_hit_more_against_undead():
    state = new_state()
    join(state, "u3", "Sera", "paladin", 5)
    fight(state, '{"monster": "zombie"}', '{"name": "Ogre", "hp": 300, "ac": 5}')
    blade = next(w for w in ("longsword", "warhammer") if state.find_character("Sera").item(w))
    smote = hit(state, "Sera", blade, "Ogre", smite=2)
    assert re.search(r"plus 3d8 → \d+ radiant \(Divine Smite, level-2 slot\)", smote), smote
    assert state.find_character("Sera").slots_spent == {2: 1}
    undead = hit(state, "Sera", blade, "Zombie", smite=1)
    assert re.search(r"plus 3d8 → \d+ radiant \(Divine Smite, level-1 slot, undead\)", undead), undead
    with pytest.raises(Exception, match="no level-2 slot left"):
        for _ in range(3):
            weapon_attack(ctx_for(state, "combat"), state.find_character("Sera"), blade, "Ogre", smite=2)


def test_a_champion_crits_on_19_and_a_barbarians_brutal_critical_adds_a_die():
    fighter = make_character("u", "F", "fighter", 3)
    assert features.crit_range(fighter) == 19 and features.crit_range(make_character("u", "F", "fighter", 15)) == 18
    longsword = profile(fighter, weapon("longsword"))
    for seed in range(500):
        s = swing(longsword, random.Random(seed), 30, crit_at=19)
        if s.to_hit.natural == 19:
            assert s.critical and s.hit and s.damage is not None and s.damage.expression.startswith("2d")
            break
    barb = make_character("u", "B", "barbarian", 9)
    assert features.brutal_dice(barb) == 1 and features.brutal_dice(make_character("u", "B", "barbarian", 17)) == 3
    axe = profile(barb, weapon("greataxe"))
    for seed in range(500):
        s = swing(axe, random.Random(seed), 5, brutal=1)
        if s.critical:
            assert s.damage is not None and s.damage.expression.startswith("2d12") and "+1d12" in s.damage.expression
            break


def test_jack_of_all_trades_remarkable_athlete_danger_sense_and_aura_of_protection():
    bard = make_character("u", "L", "bard", 2)
    plain = [s for s in ("athletics", "arcana", "survival", "medicine") if s not in bard.skills]
    label = check(bard, plain[0], random.Random(1)).label
    assert "Jack of All Trades +1" in label
    champ = make_character("u", "C", "fighter", 7)  # proficiency +3: half rounded up is +2
    assert "Remarkable Athlete +2" in check(champ, "dexterity", random.Random(1)).label
    assert "Remarkable Athlete" not in check(champ, "wisdom", random.Random(1)).label
    barb = make_character("u", "B", "barbarian", 2)
    assert check(barb, "dexterity", random.Random(1), save=True).roll.expression.endswith(" adv")
    paladin = make_character("u", "P", "paladin", 6)
    cha = max(1, paladin.abilities.mod("charisma"))
    assert f"Aura of Protection {cha:+d}" in check(paladin, "wisdom", random.Random(1), save=True).label


def test_fast_and_unarmored_movement():
    barb = make_character("u", "B", "barbarian", 5)
    assert origins.speed(barb) == 40
    monk = make_character("u", "M", "monk", 6)
    assert origins.speed(monk) == 45 and origins.speed(make_character("u", "M", "monk", 18)) == 60


def test_disciple_of_life_and_evasion():
    state = new_state()
    iri = join(state, "u3", "Iri", "cleric", 3, spells=["Cure Wounds"])
    state.characters["u1"].hp = 1
    told = cast(ctx_for(state, actor="u3"), iri, "cure wounds", "Aria", 2, None)
    assert re.search(r"Healing 2d8\+3\+4 → \d+ \(Disciple of Life\)\.", told), told  # 2 + the slot's level
    rogue = join(state, "u4", "Pip", "rogue", 7)
    wiz = join(state, "u5", "Ilse", "wizard", 5, spells=["Fireball"])
    for seed in range(100):
        trial = GameState.model_validate(state.model_dump())
        said = cast(ctx_for(trial, actor="u5", seed=seed), trial.find_character("Ilse"), "fireball", "Pip", None, None,
                    confirmed=True)
        if "Evasion: no damage" in said:
            assert trial.find_character("Pip").hp == rogue.hp
            break
    else:
        raise AssertionError("no save succeeded")
    assert wiz.name == "Ilse"


async def test_the_feature_command_spends_and_saves_and_a_refusal_changes_nothing(table):
    engine = table.engine  # the table's players: Aria the fighter (u1), Bram the wizard (u2)
    said = await engine.use_feature(CHANNEL, "u1", "al", "second wind")
    assert said.startswith("Aria uses Second Wind: 1d10+1 → ")
    assert (await table.state()).characters["u1"].used == {"Second Wind": 1}
    with pytest.raises(BadInput, match="0 uses of Second Wind left"):
        await engine.use_feature(CHANNEL, "u1", "al", "second wind")
    with pytest.raises(BadInput, match="has no feature called 'rage'"):
        await engine.use_feature(CHANNEL, "u1", "al", "rage")
    assert (await table.state()).characters["u1"].used == {"Second Wind": 1}
    assert "Second Wind back." in await engine.rest(CHANNEL, "u1", "al", "short")
    assert (await table.state()).characters["u1"].used == {}


def test_the_terminal_reads_feature_and_attack_words():
    from bot.terminal.commands import parse_feature

    assert parse_feature("lay on hands on Aria amount 5") == ("Lay on Hands", None, "Aria", 5, None)
    assert parse_feature("ki stunning strike at Goblin 1") == ("Ki", "stunning strike", "Goblin 1", None, None)
    assert parse_feature("channel divinity turn undead at Zombie 1, Zombie 2") == \
        ("Channel Divinity", "turn undead", "Zombie 1, Zombie 2", None, None)
    assert parse_feature("sorcery points slot 2") == ("Sorcery Points", None, None, None, 2)
    assert parse_feature("rage") == ("Rage", None, None, None, None) and parse_feature("fly away") is None


def test_a_dragonborns_breath_weapon_saves_for_half_and_comes_back_on_a_short_rest():
    state = new_state()
    drake = join(state, "u3", "Vyr", "fighter", 6, species="dragonborn")
    fight(state, '{"name": "Bandit 1", "hp": 40, "ac": 12}', '{"name": "Bandit 2", "hp": 40, "ac": 12}')
    turn_of(state, "Vyr")
    said = use(ctx_for(state, actor="u3"), drake, "breath weapon", "Bandit 1, Bandit 2")
    dc = 8 + drake.abilities.mod("constitution") + 3
    assert re.match(rf"Vyr breathes fire: 3d6 → (\d+); Dexterity save DC {dc}\. Bandit 1: 1d20 → \d+, (success, half|"
                    r"failure, full) damage\. Bandit 1 takes \d+ damage", said), said
    assert "Breath Weapon 0/1 (short rest)" in features.lines(drake)[0]
    with pytest.raises(BadInput, match="0 uses of Breath Weapon left"):
        turn_of(state, "Vyr")
        use(ctx_for(state, actor="u3"), drake, "breath weapon", "Bandit 1")
    assert [features.breath_dice(n) for n in (1, 6, 11, 16)] == ["2d6", "3d6", "4d6", "5d6"]


async def test_a_players_breath_at_someone_who_is_no_enemy_is_refused(table):
    state = await table.state()
    assert state.present_npcs()
    await table.engine.create_character(CHANNEL, "u3", "Vyr", "fighter", species="dragonborn")
    npc = state.present_npcs()[0].name
    with pytest.raises(BadInput, match="no enemy: breathe on them in the story"):
        await table.engine.use_feature(CHANNEL, "u3", "v", "breath weapon", npc)
    assert (await table.state()).find_character("Vyr").used == {}


def test_species_advantage_on_saves_against_poison_magic_fear_and_charm():
    dwarf = make_character("u", "Bo", "fighter", 1, species="dwarf")
    assert check(dwarf, "constitution", random.Random(1), save=True, against="poison").roll.expression.endswith(" adv")
    assert not check(dwarf, "constitution", random.Random(1), save=True).roll.expression.endswith(" adv")
    gnome = make_character("u", "Fizz", "wizard", 1, species="gnome")
    assert "advantage: Gnome Cunning" in check(gnome, "wisdom", random.Random(1), save=True, against="magic").label
    assert "Gnome Cunning" not in check(gnome, "dexterity", random.Random(1), save=True, against="magic").label
    halfling = make_character("u", "Pip", "rogue", 1, species="halfling")
    assert "advantage: Brave" in check(halfling, "wisdom", random.Random(1), save=True, against="fear").label
    elf = make_character("u", "Ael", "wizard", 1, species="elf")
    assert "advantage: Fey Ancestry" in check(elf, "wisdom", random.Random(1), save=True, against="charm").label
    state = new_state()
    state.characters["u3"] = dwarf
    told = call(ctx_for(state), '<saving_throw character="Bo" ability="constitution" dc="12" against="poison"/>')
    assert told.ok and "Dwarven Resilience" in told.observation


def test_reckless_attack_gives_advantage_and_exposes_the_barbarian_until_its_next_turn():
    state = new_state()
    join(state, "u3", "Korg", "barbarian", 2)
    with pytest.raises(BadInput, match="a barbarian's, from 2nd level"):
        use(ctx_for(state), state.characters["u1"], "reckless attack")
    fight(state, '{"name": "Ogre", "hp": 300, "ac": 5}')
    turn_of(state, "Korg")
    said = use(ctx_for(state, actor="u3"), state.find_character("Korg"), "reckless attack")
    assert "advantage on its Strength melee attacks" in said and "attacks against it have advantage" in said
    swung = weapon_attack(ctx_for(state, "combat"), state.find_character("Korg"), "greataxe", "Ogre")
    assert "advantage: Reckless Attack" in swung and " adv →" in swung
    hit_back = call(ctx_for(turn_of(state, "Ogre"), "combat"),
                    '<attack attacker="Ogre" target="Korg" weapon="club" bonus="1" damage="1d4"/>').observation
    assert "advantage: target Reckless Attack" in hit_back
    ctx = ctx_for(state, "combat")
    while state.combat.current().name != "Korg":
        call(ctx, "<next_turn/>")
    assert not state.find_character("Korg").effects  # its next turn began: the exposure is over


def test_sorcery_points_from_a_slot_and_back():
    state = new_state()
    sorc = join(state, "u3", "Vex", "sorcerer", 3, used={"Sorcery Points": 3})
    said = use(ctx_for(state, actor="u3"), sorc, "sorcery points", option="from slot", slot=2)
    assert said == "Vex turns a level-2 slot into 2 sorcery points (2 points now)." and sorc.slots_spent == {2: 1}
    with pytest.raises(BadInput, match="more sorcery points than their maximum"):
        use(ctx_for(state, actor="u3"), sorc, "sorcery points", option="from slot", slot=2)


async def test_a_players_own_check_spends_an_inspiration_and_the_game_keeps_that(table):
    await table.engine.create_character(CHANNEL, "u3", "Lark", "bard")
    await table.engine.use_feature(CHANNEL, "u3", "l", "bardic inspiration", "Aria")
    assert [e.spell for e in (await table.state()).characters["u1"].effects] == ["Bardic Inspiration"]
    name, first = await table.engine.player_check(CHANNEL, "u1", "al", "athletics")
    assert name == "Aria" and first.roll.expression.endswith("+1d6") and "Bardic Inspiration +1d6" in first.label
    assert not (await table.state()).characters["u1"].effects  # spent, and written
    session = await table.engine.session(CHANNEL)
    said = (await table.store.messages(session.id))[-1].text
    assert said.startswith("Aria rolls 1d20+") and "for an Athletics check (" in said
    _, second = await table.engine.player_check(CHANNEL, "u1", "al", "athletics")
    assert "+1d6" not in second.roll.expression
