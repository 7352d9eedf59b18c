"""The SRD's creatures: the data as the SRD 5.1 prints it (checked here against values written from its stat blocks,
not from our file), found by name, and fought, saved and resisted by in play."""

from __future__ import annotations

import json

import pytest
import yaml

from engine import BadInput, ConfigError
from engine import bestiary
from engine.bestiary import bestiary as all_creatures, find, monster, stat_fields
from engine.entities import EnemyTemplate
from engine.rules.srd_import import convert, dump
from engine.basics import AgentType
from tests.conftest import call, ctx_for, turn_of

# name: AC, HP, hit dice, CR, XP, (an attack: name, to hit, damage) — from the SRD 5.1's stat blocks.
SRD = {
    "Goblin": (15, 7, "2d6", "1/4", 50, ("Scimitar", 4, "1d6+2")),
    "Orc": (13, 15, "2d8", "1/2", 100, ("Greataxe", 5, "1d12+3")),
    "Wolf": (13, 11, "2d8", "1/4", 50, ("Bite", 4, "2d4+2")),
    "Kobold": (12, 5, "2d6", "1/8", 25, ("Dagger", 4, "1d4+2")),
    "Skeleton": (13, 13, "2d8", "1/4", 50, ("Shortsword", 4, "1d6+2")),
    "Zombie": (8, 22, "3d8", "1/4", 50, ("Slam", 3, "1d6+1")),
    "Bandit": (12, 11, "2d8", "1/8", 25, ("Scimitar", 3, "1d6+1")),
    "Bandit Captain": (15, 65, "10d8", "2", 450, ("Scimitar", 5, "1d6+3")),
    "Ogre": (11, 59, "7d10", "2", 450, ("Greatclub", 6, "2d8+4")),
    "Troll": (15, 84, "8d10", "5", 1800, ("Bite", 7, "1d6+4")),
    "Owlbear": (13, 59, "7d10", "3", 700, ("Beak", 7, "1d10+5")),
    "Giant Spider": (14, 26, "4d10", "1", 200, ("Bite", 5, "1d8+3")),
    "Hobgoblin": (18, 11, "2d8", "1/2", 100, ("Longsword", 3, "1d8+1")),
    "Bugbear": (16, 27, "5d8", "1", 200, ("Morningstar", 4, "2d8+2")),
    "Gnoll": (15, 22, "5d8", "1/2", 100, ("Spear", 4, "1d6+2")),
    "Ghoul": (12, 22, "5d8", "1", 200, ("Claws", 4, "2d4+2")),
    "Adult Red Dragon": (19, 256, "19d12", "17", 18000, ("Bite", 14, "2d10+8")),
    "Minotaur": (14, 76, "9d10", "3", 700, ("Greataxe", 6, "2d12+4")),
    "Giant Rat": (12, 7, "2d6", "1/8", 25, ("Bite", 4, "1d4+2")),
    "Cultist": (12, 9, "2d8", "1/8", 25, ("Scimitar", 3, "1d6+1")),
    "Guard": (16, 11, "2d8", "1/8", 25, ("Spear", 3, "1d6+1")),
    "Commoner": (10, 4, "1d8", "0", 10, ("Club", 2, "1d4")),
    "Veteran": (17, 58, "9d8", "3", 700, ("Longsword", 5, "1d8+3")),
    "Thug": (11, 32, "5d8", "1/2", 100, ("Mace", 4, "1d6+2")),
    "Lion": (12, 26, "4d10", "1", 200, ("Bite", 5, "1d8+3")),
    "Dire Wolf": (14, 37, "5d10", "1", 200, ("Bite", 5, "2d6+3")),
    "Hill Giant": (13, 105, "10d12", "5", 1800, ("Greatclub", 8, "3d8+5")),
    "Wight": (14, 45, "6d8", "3", 700, ("Longsword", 4, "1d8+2")),
    "Stirge": (14, 2, "1d4", "1/8", 25, ("Blood Drain", 5, "1d4+3")),
    "Hell Hound": (15, 45, "7d8", "3", 700, ("Bite", 5, "1d8+3")),
    "Lich": (17, 135, "18d8", "21", 33000, None),
    "Cult Fanatic": (13, 33, "6d8", "2", 450, ("Dagger", 4, "1d4+2")),  # the JSON we import had 22: fixed
}


@pytest.mark.parametrize("name", sorted(SRD))
def test_stat_blocks_are_the_srds(name):
    ac, hp, dice, cr, xp, attack = SRD[name]
    m = monster(name)
    assert (m.ac, m.hp, m.hit_dice, m.cr, m.xp) == (ac, hp, dice, cr, xp)
    if attack is not None:
        found = next(a for a in m.attacks if a.name == attack[0])
        assert (found.bonus, found.damage) == attack[1:]


def test_every_srd_creature_loads_checked():
    table = all_creatures()
    assert len(table) == 334 and len(SRD) >= 30
    # The checks hold for all of them: XP by CR, hit points the average of the dice, multiattacks naming own actions.
    dragon = monster("adult red dragon")
    assert dragon.saves == {"dexterity": 6, "constitution": 13, "wisdom": 7, "charisma": 11} and dragon.immune == ["fire"]
    assert next(a for a in dragon.attacks if a.name == "Bite").plus == "2d6 fire"
    breath = next(s for s in dragon.specials if s.name == "Fire Breath")
    assert (breath.save, breath.dc, breath.damage, breath.type, breath.half, breath.use) == \
        ("dexterity", 21, "18d6", "fire", True, "recharge 5-6")
    assert find("werewolf").name == "Werewolf, Hybrid Form" and find("vampire").name == "Vampire, Vampire Form"
    assert find("werewolf").immune_nonmagical == ["bludgeoning", "piercing", "slashing"]
    assert "DC 11 STR save or prone" in monster("wolf").attacks[0].rider


def test_names_plurals_and_nearest():
    assert find("Goblins").name == "Goblin" and find("wolves").name == "Wolf" and find("GIANT  spider").name == "Giant Spider"
    assert find("adult-red-dragon").name == "Adult Red Dragon" and find("gobln") is None
    with pytest.raises(BadInput, match="no SRD creature called 'gobln'. Nearest: Goblin"):
        monster("gobln")


def test_a_broken_bestiary_is_a_config_error_naming_where(tmp_path, monkeypatch):
    good = yaml.safe_load((bestiary.DATA / "monsters.yaml").read_text())
    good["goblin"]["xp"] = 100  # CR 1/4 is worth 50
    (tmp_path / "monsters.yaml").write_text(yaml.safe_dump({"goblin": good["goblin"]}))
    monkeypatch.setattr(bestiary, "DATA", tmp_path)
    bestiary.bestiary.cache_clear()
    try:
        with pytest.raises(ConfigError, match="wrong at goblin.*CR 1/4 is worth 50 XP, not 100"):
            bestiary.bestiary()
        good["goblin"].update(xp=50, hp=9)
        (tmp_path / "monsters.yaml").write_text(yaml.safe_dump({"goblin": good["goblin"]}))
        bestiary.bestiary.cache_clear()
        with pytest.raises(ConfigError, match="2d6 with CON 10 averages 7 HP, not 9"):
            bestiary.bestiary()
        (tmp_path / "monsters.yaml").write_text("- just\n- a list\n")
        bestiary.bestiary.cache_clear()
        with pytest.raises(ConfigError, match="must map creature ids"):
            bestiary.bestiary()
    finally:
        monkeypatch.undo()
        bestiary.bestiary.cache_clear()
        bestiary._names.cache_clear()


def test_the_import_keeps_numbers_and_names_not_prose():
    raw = {"index": "mire-thing", "name": "Mire Thing", "size": "Medium", "type": "monstrosity", "alignment": "unaligned",
           "armor_class": [{"type": "natural", "value": 12}], "hit_points": 15, "hit_dice": "2d8", "speed": {"walk": "20 ft.", "swim": "40 ft."},
           "strength": 14, "dexterity": 10, "constitution": 16, "intelligence": 3, "wisdom": 10, "charisma": 5,
           "proficiencies": [{"proficiency": {"index": "saving-throw-con"}, "value": 5}],
           "damage_vulnerabilities": [], "damage_resistances": ["bludgeoning, piercing, and slashing from nonmagical weapons"],
           "damage_immunities": ["poison"], "condition_immunities": [{"index": "poisoned"}],
           "senses": {"darkvision": "60 ft.", "passive_perception": 10}, "languages": "", "challenge_rating": 0.5, "xp": 25,
           "special_abilities": [{"name": "Amphibious", "desc": "Long prose that must not be copied."}],
           "actions": [{"name": "Bite", "attack_bonus": 4, "desc": "Melee Weapon Attack: +4 to hit, reach 5 ft., one target. "
                        "Hit: 5 (1d6 + 2) piercing damage, and the target must succeed on a DC 12 Strength saving throw "
                        "or be knocked prone.",
                        "damage": [{"damage_dice": "1d6+2", "damage_type": {"index": "piercing"}}]}]}
    key, out = convert(raw)
    assert key == "mire-thing" and out["xp"] == 100  # XP follows the CR
    assert out["resist_nonmagical"] == ["bludgeoning", "piercing", "slashing"] and out["immune"] == ["poison"]
    assert out["attacks"] == [{"name": "Bite", "bonus": 4, "damage": "1d6+2", "type": "piercing", "reach": "5 ft.",
                               "rider": "DC 12 STR save or prone"}]
    text = dump([raw])
    assert "Long prose" not in text and "CC-BY-4.0" in text
    m = bestiary.Monster.model_validate(yaml.safe_load(text)["mire-thing"])
    assert m.saves == {"constitution": 5} and m.speed_text() == "20 ft, swim 40 ft"
    assert json.dumps(raw)  # the sample stays JSON, as the source file is


def test_enemies_and_people_from_the_srd(tmp_path):
    t = EnemyTemplate.model_validate({"monster": "goblin", "count": 3})
    assert (t.name, t.hp, t.ac, t.initiative_bonus, t.cr, t.count, t.monster) == ("Goblin", 7, 15, 2, "1/4", 3, "goblin")
    boss = EnemyTemplate.model_validate({"monster": "bandit captain", "name": "Brask the Red", "hp": 80})
    assert (boss.name, boss.hp, boss.ac, boss.saves) == ("Brask the Red", 80, 15, {"strength": 4, "dexterity": 5, "wisdom": 2})
    assert boss.attacks.startswith("Multiattack: 2 × Scimitar, 1 × Dagger or 2 × Dagger")
    with pytest.raises(ValueError, match="no SRD creature called 'gobln'. Nearest: Goblin"):
        EnemyTemplate.model_validate({"monster": "gobln"})
    assert stat_fields("lich")["saves"]["constitution"] == 10


def test_start_combat_with_srd_monsters_fights_and_saves_by_their_numbers(state):
    ctx = ctx_for(state)
    began = call(ctx, '<start_combat>{"enemy": [{"monster": "goblin", "count": 2}, {"monster": "werewolf"}]}</start_combat>')
    assert began.ok and "Goblin 1" in began.observation and "Goblin 2" in began.observation, began.observation
    g = next(p for p in state.combat.order if p.name == "Goblin 1")
    assert (g.hp, g.ac, g.cr, [a.name for a in g.actions]) == (7, 15, "1/4", ["Scimitar", "Shortbow"])
    cctx = ctx_for(state, agent=AgentType.COMBAT)
    wolf = next(p for p in state.combat.order if p.name.startswith("Werewolf"))
    # A sword is a nonmagical weapon: the werewolf shrugs it off; a spell's (or untyped-source) damage gets through.
    for seed in range(60):
        trial = turn_of(state.model_copy(deep=True), "Aria")
        swung = call(ctx_for(trial, seed=seed), f'<attack attacker="Aria" target="{wolf.name}" weapon="longsword"/>')
        if "miss" not in swung.observation:
            assert "immune to slashing from nonmagical weapons" in swung.observation, swung.observation
            assert next(p for p in trial.combat.order if p.id == wolf.id).hp == wolf.max_hp
            break
    else:
        raise AssertionError("no hit in 60 seeds")
    burned = call(cctx, f'<update_hp target="{wolf.name}" amount="8" damage_type="slashing"/>')
    assert burned.ok and wolf.hp == wolf.max_hp - 8, burned.observation
    # Its saves are the stat block's: a creature's saving throw by the tool.
    rolled = call(cctx, '<saving_throw character="Goblin 2" ability="dex" dc="10"/>')
    assert rolled.ok and "Goblin 2's Dexterity save: 1d20+2" in rolled.observation and "vs DC 10" in rolled.observation
    assert call(cctx, "<end_combat/>").ok
    captain = monster("bandit captain")
    assert call(ctx, '<start_combat>{"enemy": [{"monster": "bandit captain"}]}</start_combat>').ok
    cap = next(p for p in state.combat.order if p.faction == "enemy")
    assert cap.saves == captain.saves
    rolled = call(cctx, '<saving_throw character="Bandit Captain" ability="dexterity"/>')
    assert "1d20+5" in rolled.observation  # proficient: +5, not the +3 of DEX 16
    assert call(cctx, "<end_combat/>").ok
    bad = call(ctx, '<start_combat>{"enemy": [{"monster": "beholder"}]}</start_combat>')
    assert not bad.ok and "no SRD creature called 'beholder'" in bad.observation


def test_a_bite_plus_fire_is_one_hit_with_both(state):
    assert call(ctx_for(state), '<start_combat>{"enemy": [{"monster": "adult red dragon", "name": "Ember"}]}'
                                '</start_combat>').ok
    aria = next(c for c in state.characters.values() if c.name.startswith("Aria"))
    aria.max_hp = aria.hp = 300  # to see the damage, not a death
    for seed in range(40):
        trial = state.model_copy(deep=True)
        hit = call(ctx_for(trial, agent=AgentType.COMBAT, seed=seed), '<attack attacker="Ember" target="Aria" weapon="bite"/>')
        if "hit;" in hit.observation:
            break
    else:
        raise AssertionError("no hit in 40 seeds")
    assert "piercing plus 2d6" in hit.observation and "fire" in hit.observation, hit.observation
    after = next(c for c in trial.characters.values() if c.name.startswith("Aria"))
    assert after.hp < 300


def test_create_npc_from_a_monster(state):
    ctx = ctx_for(state)
    made = call(ctx, '<create_npc name="Brask" role="smuggler boss" monster="veteran" description="A scarred woman."/>')
    assert made.ok, made.observation
    npc = state.npcs["brask"]
    assert (npc.ac, npc.max_hp, npc.cr) == (17, 58, "3") and [a.name for a in npc.actions][:2] == ["Longsword", "Shortsword"]
    before = state.model_dump()
    bad = call(ctx, '<create_npc name="Mog" monster="beholdr" description="x"/>')
    assert not bad.ok and "no SRD creature called 'beholdr'" in bad.observation and state.model_dump() == before


def test_a_saved_enemy_is_read_as_saved_not_looked_up_again(monkeypatch):
    import engine.entities as entities

    saved = EnemyTemplate.model_validate({"monster": "goblin", "hp": 9}).model_dump(mode="json")

    def no_lookup(name):
        raise AssertionError("looked up again")

    monkeypatch.setattr(entities, "stat_fields", no_lookup)
    again = EnemyTemplate.model_validate(saved)  # a game state loading: every turn
    assert (again.hp, again.ac, again.monster, again.cr) == (9, 15, "goblin", "1/4")
