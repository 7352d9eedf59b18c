"""Spells (SRD 5.1): the data and the class tables, what characters know, and casting by the engine: slots spent or
refused without a change, attacks and saves rolled with the engine's dice, damage, healing, concentration, rests."""

from __future__ import annotations

import random
import re

import pytest

from engine import BadInput, NoCharacter
from engine.characters import import_character
from engine.characters import make_character as _made
from engine.dice import roll
from engine.rules import proficiency_bonus
from engine.rules import spells
from engine.basics import Abilities, AgentType
from engine.state import Character
from engine.tools import tools_for
from engine.tools.spells import cast as _cast
from tests.conftest import CHANNEL, call, ctx_for, new_state, turn_of


def make_character(*args, **kwargs):
    """The standard array as the class orders it, without a species' increases: the arithmetic below counts on it."""
    return _made(*args, increases=False, **kwargs)


def cast(ctx, ch, *args, **kw):
    """Casting as these tests do, out of initiative order: in a fight, on a fresh turn of the caster's (the engine
    holds each turn to its actions: tests/test_economy.py)."""
    if ctx.state.combat.active and any(p.name == ch.name for p in ctx.state.combat.order):
        turn_of(ctx.state, ch.name)
    return _cast(ctx, ch, *args, **kw)


def seed_rolling(first_d20: int) -> int:
    """A seed whose first d20 (as the dice library draws it) comes up `first_d20`."""
    return next(s for s in range(10_000) if random.Random(s).randrange(20) + 1 == first_d20)


def caster(state, owner: str, name: str, cls: str, level: int = 1, **update) -> Character:
    ch = make_character(owner, name, cls, level).model_copy(update=update)
    state.characters[owner] = ch
    state.party.player_ids.append(owner)
    return ch


def fight(state, *enemies: tuple[str, int, int]) -> None:
    """A fight with the party and these enemies (name, hp, ac)."""
    body = ", ".join(f'{{"name": "{n}", "hp": {hp}, "ac": {ac}}}' for n, hp, ac in enemies)
    assert call(ctx_for(state), f'<start_combat>{{"enemy": [{body}]}}</start_combat>').ok


def enemy(state, name: str):
    return next(p for p in state.combat.order if p.name == name)


# -- the data -------------------------------------------------------------------------------------------------------

def test_the_data_is_complete_and_every_spell_rolls():
    data = spells.data()
    assert set(data.classes) == set(spells.CASTERS) and len(data.spells) >= 160
    for level in range(4):
        for cls in spells.CASTERS:
            have = [s for s in data.spells if s.level == level and cls in s.classes]
            assert have or (level == 0 and cls in ("paladin", "ranger")), (cls, level)
    for name in ("Fire Bolt", "Eldritch Blast", "Sacred Flame", "Cure Wounds", "Magic Missile", "Bless",
                 "Hold Person", "Spiritual Weapon", "Fireball", "Spirit Guardians", "Revivify", "Counterspell"):
        assert spells.find_spell(name.lower()).name == name
    wizard = make_character("u", "W", "wizard", 20)
    for s in data.spells:  # every dice expression, at every slot it can take, is one the dice library rolls
        assert s.description.endswith(".") and s.casting_time and s.range and s.duration
        for slot in ([None] if s.level == 0 else range(s.level, 10)):
            for effect in (s.damage, s.healing, s.roll):
                if effect is not None:
                    assert roll(spells.dice_for(s, effect, slot, wizard), random.Random(1)).total >= 0
            assert spells.beams(s, slot, wizard) >= 1 and s.max_targets(slot) >= 1
    with pytest.raises(BadInput, match=r"'firebal' is not a spell I know \(.*did you mean Fireball\?\)"):
        spells.find_spell("firebal")


def test_slots_follow_the_srd_tables():
    assert spells.slots_for("wizard", 5) == {1: 4, 2: 3, 3: 2}
    assert spells.slots_for("cleric", 1) == {1: 2} and spells.slots_for("sorcerer", 3) == {1: 4, 2: 2}
    assert spells.slots_for("bard", 20) == {1: 4, 2: 3, 3: 3, 4: 3, 5: 3, 6: 2, 7: 2, 8: 1, 9: 1}
    assert spells.slots_for("paladin", 1) == {} and spells.slots_for("paladin", 2) == {1: 2}
    assert spells.slots_for("ranger", 5) == {1: 4, 2: 2} and spells.slots_for("ranger", 20) == {1: 4, 2: 3, 3: 3, 4: 3, 5: 2}
    assert spells.slots_for("warlock", 1) == {1: 1} and spells.slots_for("warlock", 5) == {3: 2}
    assert spells.slots_for("warlock", 11) == {5: 3} and spells.slots_for("warlock", 17) == {5: 4}
    assert spells.slots_for("fighter", 5) == {} and spells.slots_for("rogue", 20) == {}
    assert [spells.cantrips_allowed("wizard", lv) for lv in (1, 4, 10)] == [3, 4, 5]
    assert spells.cantrips_allowed("sorcerer", 1) == 4 and spells.cantrips_allowed("paladin", 5) == 0
    scores = Abilities(intelligence=16, charisma=14, wisdom=12)
    assert spells.spells_allowed("bard", 10, scores) == 14 and spells.spells_allowed("sorcerer", 1, scores) == 2
    assert spells.spells_allowed("ranger", 1, scores) == 0 and spells.spells_allowed("ranger", 2, scores) == 2
    assert spells.spells_allowed("wizard", 1, scores) == 4 and spells.spells_allowed("paladin", 2, scores) == 3
    assert spells.spells_allowed("paladin", 1, scores) == 0  # no spellcasting before 2nd level


def test_new_casters_start_with_their_classes_picks_and_older_characters_load():
    wizard = make_character("u", "Bram", "wizard")
    assert len(wizard.cantrips) == 3 and len(wizard.spells) == spells.spells_allowed("wizard", 1, wizard.abilities)
    assert all("wizard" in spells.find_spell(n).classes and spells.find_spell(n).level == 1 for n in wizard.spells)
    assert make_character("u", "P", "paladin").spells == [] and make_character("u", "F", "fighter").cantrips == []
    high = make_character("u", "Bram", "wizard", 5)
    assert max(spells.find_spell(n).level for n in high.spells) == 3 and len(high.cantrips) == 4
    assert spells.slots_left(high) == {1: 4, 2: 3, 3: 2} and high.concentration is None
    old = {k: v for k, v in wizard.model_dump().items() if k not in ("cantrips", "spells", "slots_spent", "concentration")}
    loaded = Character.model_validate(old)
    assert (loaded.cantrips, loaded.spells, loaded.slots_spent) == ([], [], {})
    assert spells.cantrips_of(loaded) == wizard.cantrips and spells.spells_of(loaded) == wizard.spells
    grown = wizard.model_copy(update={"level": 3})
    added = spells.learn_new_spells(grown)
    assert added and set(added) <= set(grown.spells) and len(grown.spells) == spells.spells_allowed("wizard", 3, grown.abilities)
    assert any(spells.find_spell(n).level == 2 for n in grown.spells)


def test_a_character_file_lists_spells_checked_against_class_and_level():
    ch = import_character("u", {"name": "Iri", "class": "cleric", "level": 3, "cantrips": ["sacred flame", "Light"],
                                "spells": ["bless", "Hold Person", "cure wounds"]})
    assert ch.cantrips == ["Sacred Flame", "Light"] and ch.spells == ["Bless", "Hold Person", "Cure Wounds"]
    with pytest.raises(BadInput) as bad:
        import_character("u", {"name": "Zed", "class": "wizard", "cantrips": ["fire bolt", "bless"],
                               "spells": ["fireball", "magic missle"]})
    assert "- spells: 'magic missle' is not a spell I know (the SRD's cantrips to 3rd level; did you mean " \
           "Magic Missile?)" in bad.value.message
    with pytest.raises(BadInput) as bad:
        import_character("u", {"name": "Zed", "class": "wizard", "cantrips": ["fire bolt", "bless"], "spells": ["fireball"]})
    assert bad.value.message.splitlines()[1:] == [
        "- cantrips: Bless is not a wizard spell (cleric, paladin)",
        "- spells: Fireball is a 3rd-level spell; a level-1 wizard casts up to 1st level"]
    with pytest.raises(BadInput, match="a level-1 wizard has 4 spells prepared, not 5"):  # INT 16 (human): +3, +1
        import_character("u", {"name": "Zed", "class": "wizard",
                               "spells": ["shield", "sleep", "mage armor", "grease", "magic missile"]})
    with pytest.raises(BadInput, match="a fighter casts no spells"):
        import_character("u", {"name": "Zed", "class": "fighter", "spells": ["bless"]})


# -- casting ----------------------------------------------------------------------------------------------------------

def test_casting_spends_the_lowest_fitting_slot_or_the_one_asked_for():
    state = new_state()
    bram = caster(state, "u3", "Mira", "wizard", 3)
    fight(state, ("Goblin", 40, 12))
    ctx = ctx_for(state, actor="u3")
    cast(ctx, bram, "magic missile", "Goblin", None, None)
    assert bram.slots_spent == {1: 1} and spells.slots_left(bram) == {1: 3, 2: 2}
    told = cast(ctx, bram, "Magic Missile", "Goblin", 2, None)  # upcast: a fourth dart
    assert bram.slots_spent == {1: 1, 2: 1} and "(2nd-level slot)" in told and "Dart 4 (Goblin)" in told
    assert "Dart 5" not in told and told.endswith("Slots left: 1st 3/4, 2nd 1/2.")
    assert "Fire Bolt" in cast(ctx, bram, "fire bolt", "Goblin", None, None) and bram.slots_spent == {1: 1, 2: 1}


def test_refusals_say_why_and_change_nothing():
    state = new_state()
    mira = caster(state, "u3", "Mira", "wizard", 1, cantrips=["Fire Bolt", "Acid Splash", "Light"])
    fight(state, ("Goblin", 7, 12))
    ctx = ctx_for(turn_of(state, "Mira"), actor="u3")
    mira.slots_spent = {1: 2}
    before = state.model_dump()
    for args, message in (
            (("magic missile", "Goblin", None), "Mira has no spell slot of 1st level or higher left for Magic "
                                                  "Missile. Slots left: 1st 0/2. A long rest brings them back."),
            (("magic missile", "Goblin", 2), "Mira has no 2nd-level spell slots. Slots left: 1st 0/2."),
            (("fireball", "Goblin", None), "Mira has not prepared Fireball."),
            (("fire bolt", "Goblin", 1), "Fire Bolt is a cantrip and uses no spell slot; leave the level out."),
            (("fire bolt", None, None), "Fire Bolt needs a target: name who it is cast at."),
            (("fire bolt", "Gobin", None), "No one called 'Gobin' is here to target. Did you mean Goblin?"),
            (("acid splash", "Goblin, Aria, Bram", None), "Acid Splash affects at most 2 creatures; 3 were named."),
            (("fire blot", "Goblin", None), "did you mean Fire Bolt?")):
        with pytest.raises(BadInput) as refused:
            _cast(ctx, mira, *args, None)
        assert message in refused.value.message
    mira.slots_spent = {}
    with pytest.raises(BadInput, match="Shield is a 1st-level spell: it needs a slot of 1st level or higher"):
        spells.choose_slot(mira, spells.find_spell("shield"), 0)
    fighter = state.characters["u1"]
    with pytest.raises(BadInput, match="Aria is a fighter and casts no spells"):
        _cast(ctx, fighter, "fire bolt", "Goblin", None, None)
    mira.slots_spent, mira.hp = {1: 2}, 0
    with pytest.raises(BadInput, match="Mira is down"):
        _cast(ctx, mira, "fire bolt", "Goblin", None, None)
    mira.hp = mira.max_hp
    assert state.model_dump() == before


def test_damage_grows_with_the_slot_and_cantrips_with_the_casters_level():
    wizard5, wizard1 = make_character("u", "W", "wizard", 5), make_character("u", "W", "wizard", 1)
    cleric = make_character("u", "C", "cleric", 5)  # WIS 15: +2
    dice = spells.dice_for
    s = spells.find_spell
    assert dice(s("burning hands"), s("burning hands").damage, 1, wizard1) == "3d6"
    assert dice(s("burning hands"), s("burning hands").damage, 3, wizard5) == "5d6"
    assert dice(s("fire bolt"), s("fire bolt").damage, None, wizard1) == "1d10"
    assert dice(s("fire bolt"), s("fire bolt").damage, None, wizard5) == "2d10"
    assert dice(s("fire bolt"), s("fire bolt").damage, None, wizard5.model_copy(update={"level": 17})) == "4d10"
    assert dice(s("cure wounds"), s("cure wounds").healing, 3, cleric) == "3d8+2"
    weapon = s("spiritual weapon")  # 1d8 more for every two slot levels above 2nd
    assert [dice(weapon, weapon.damage, n, cleric) for n in (2, 3, 4)] == ["1d8+2", "1d8+2", "2d8+2"]
    assert dice(s("sleep"), s("sleep").roll, 2, wizard1) == "7d8" and dice(s("aid"), s("aid").roll, 4, cleric) == "15"
    blast = s("eldritch blast")
    assert spells.beams(blast, None, make_character("u", "K", "warlock", 5)) == 2
    assert dice(blast, blast.damage, None, make_character("u", "K", "warlock", 5)) == "1d10"  # more beams, not dice
    assert spells.beams(s("scorching ray"), 3, wizard5) == 4 and spells.beams(s("magic missile"), 1, wizard5) == 3
    assert s("hold person").max_targets(3) == 2 and s("fireball").max_targets(3) == spells.AREA_TARGETS


def test_a_spell_attack_hits_or_misses_by_the_rolls_against_ac():
    for seed in range(12):
        state = new_state()
        fight(state, ("Ogre", 59, 11))
        bram = state.characters["u2"]  # a level-1 human wizard: INT 16, attack +5
        told = cast(ctx_for(state, actor="u2", seed=seed), bram, "fire bolt", "Ogre", None, None)
        to_hit = re.search(r"Spell attack 1d20\+5 → (\d+) vs AC 11 \(Ogre\), (hit|miss|critical hit)", told)
        assert to_hit, told
        total, result = int(to_hit.group(1)), to_hit.group(2)
        ogre = enemy(state, "Ogre")
        if result == "miss":
            assert ogre.hp == 59 and (total < 11 or "natural 1" in told)
        else:
            damage = int(re.search(r"d10 → (\d+) fire", told).group(1))
            assert ogre.hp == 59 - damage and f"Ogre takes {damage} damage: HP {ogre.hp}/59." in told
    state = new_state()
    fight(state, ("Ogre", 59, 40))
    crit = cast(ctx_for(state, actor="u2", seed=seed_rolling(20)), state.characters["u2"], "fire bolt", "Ogre", None,
                None)
    assert "critical hit (damage dice doubled): 2d10 →" in crit and enemy(state, "Ogre").hp < 59
    state = new_state()
    fight(state, ("Ogre", 59, 1))
    fumble = cast(ctx_for(state, actor="u2", seed=seed_rolling(1)), state.characters["u2"], "fire bolt", "Ogre",
                  None, None)
    assert "→ 6 vs AC 1 (Ogre), miss (natural 1)." in fumble and enemy(state, "Ogre").hp == 59
    keen = cast(ctx_for(state, actor="u2", seed=3), state.characters["u2"], "fire bolt", "Ogre", None, "advantage")
    assert "Spell attack 1d20+5 adv →" in keen


def test_a_save_spell_rolls_each_targets_save_against_the_dc_for_full_or_half_damage():
    state = new_state()
    sorcerer = caster(state, "u3", "Sel", "sorcerer", 5)  # CHA 15 (+2), proficiency +3: DC 13
    assert spells.save_dc(sorcerer) == 8 + proficiency_bonus(5) + 2 == 13
    fight(state, ("Goblin", 60, 12), ("Orc", 60, 13))
    told = cast(ctx_for(state, actor="u3", seed=5), sorcerer, "fireball", "Goblin, Orc, Aria", None, None,
                 confirmed=True)  # Aria in the blast: her player's friend said yes
    damage = int(re.search(r"Fire damage 8d6 → (\d+); Dexterity save DC 13\.", told).group(1))
    for name, sheet in (("Goblin", None), ("Orc", None), ("Aria", state.characters["u1"])):
        save = re.search(rf"{name}: (1d20[+-]?\d*) → (\d+), (success|failure); (half|full) damage", told)
        assert save, told
        expected = damage // 2 if int(save.group(2)) >= 13 else damage
        assert save.group(3) == ("success" if int(save.group(2)) >= 13 else "failure")
        if sheet is None:  # no ability scores in the state: a flat +0
            assert save.group(1) == "1d20" and enemy(state, name).hp == max(0, 60 - expected)
        else:  # a character saves by the sheet (a fighter's Dexterity, not proficient)
            assert save.group(1) == f"1d20{sheet.abilities.mod('dexterity'):+d}".replace("+0", "")
            assert sheet.hp == max(0, sheet.max_hp - expected)
    assert sorcerer.slots_spent == {3: 1}
    mockery = caster(state, "u4", "Vi", "bard", 1)
    said = cast(ctx_for(state, actor="u4", seed=2), mockery, "vicious mockery", "Goblin", None, "disadvantage")
    assert re.search(r"Goblin: 1d20 dis → \d+, (success\.|failure, disadvantage on its next attack roll; full)", said)


def test_healing_is_capped_at_the_maximum_and_drain_heals_the_caster():
    state = new_state()
    cleric = caster(state, "u3", "Iri", "cleric", 1)
    aria = state.characters["u1"]
    aria.hp = 1
    told = cast(ctx_for(state, actor="u3"), cleric, "cure wounds", "Aria", None, None)
    healed = int(re.search(r"Healing 1d8\+2\+3 → (\d+) \(Disciple of Life\)\.", told).group(1))  # WIS +2; 2 + slot 1
    assert aria.hp == min(aria.max_hp, 1 + healed) and f"Aria regains {aria.hp - 1} HP" in told
    cleric.hp = cleric.max_hp - 1
    assert "on themself" in cast(ctx_for(state, actor="u3"), cleric, "cure wounds", None, None, None)
    assert cleric.hp == cleric.max_hp
    warlock = caster(state, "u4", "Kael", "warlock", 5, spells=["Vampiric Touch"], hp=10)
    fight(state, ("Troll", 80, 1))
    touch = cast(ctx_for(state, actor="u4", seed=seed_rolling(10)), warlock, "vampiric touch", "Troll", None, None)
    dealt = 80 - enemy(state, "Troll").hp
    assert dealt > 0 and warlock.hp == min(warlock.max_hp, 10 + dealt // 2), touch


def test_a_new_concentration_spell_ends_the_last_and_the_sheet_says_so():
    state = new_state()
    cleric = caster(state, "u3", "Iri", "cleric", 3, spells=["Bless", "Shield of Faith", "Hold Person"])
    ctx = ctx_for(state, actor="u3")
    assert cast(ctx, cleric, "bless", "Aria, Bram, Iri", None, None).endswith(
        "Concentration on Bless. Slots left: 1st 3/4, 2nd 2/2.")
    told = cast(ctx, cleric, "hold person", "Ysolde Marrick", None, None, confirmed=True)
    assert "Concentration on Hold Person. Bless ends (Iri casts Hold Person) for Aria, Bram, Iri." in told
    assert cleric.concentration == "Hold Person" and not any(c.effects for c in state.characters.values())
    assert re.search(r"Ysolde Marrick: 1d20\+1 → \d+, (success\.|failure, paralyzed)", told)  # her stat block: WIS 12
    lines = spells.sheet_lines(cleric)
    assert lines[0] == "Wisdom · spell attack +4 · save DC 12 · slots 1st 3/4, 2nd 1/2"
    assert lines[-1] == "Concentrating on Hold Person" and "Prepared: Bless (1st), Shield of Faith (1st)" in lines[2]
    assert spells.sheet_lines(state.characters["u1"]) == []
    felled = call(ctx, f'<update_hp target="Iri" amount="{cleric.hp}"/>').observation
    assert "Iri falls unconscious and is dying (death saving throws on their turns). Concentration on Hold Person ends." in felled
    assert cleric.concentration is None
    held = "failure, paralyzed" in told  # and if she was held, the hold ends with the concentration it hung on
    assert ("Hold Person ends (Iri's concentration is broken) for Ysolde Marrick." in felled) == held
    ysolde = state.find_npc("Ysolde Marrick")
    assert "paralyzed" not in ysolde.conditions and not ysolde.effects


def test_rests_bring_slots_back_pact_magic_on_a_short_rest_too():
    state = new_state()
    wizard = caster(state, "u3", "Mira", "wizard", 3, slots_spent={1: 2, 2: 1}, concentration="Detect Magic")
    warlock = caster(state, "u4", "Kael", "warlock", 3, slots_spent={2: 2})
    ctx = ctx_for(state)
    short = call(ctx, '<short_rest character="Mira"/>')
    assert short.ok and wizard.slots_spent == {1: 2, 2: 1}
    assert call(ctx, '<short_rest character="Kael"/>').observation.endswith("Spell slots restored.")
    assert warlock.slots_spent == {}
    long = call(ctx, '<long_rest character="Mira"/>')
    assert "Mira: HP" in long.observation and "spell slots restored, concentration on Detect Magic ends" in long.observation
    assert wizard.slots_spent == {} and wizard.concentration is None


# -- the agents' tool and the players' command ------------------------------------------------------------------------

def test_the_cast_spell_tool_runs_the_same_engine_code(state):
    fight(state, ("Goblin", 7, 12))
    ctx = ctx_for(state, AgentType.COMBAT)
    done = call(ctx, '<cast_spell caster="Bram" spell="Magic Missile" target="Goblin"/>')
    assert done.ok and done.observation.startswith("Bram casts Magic Missile (1st-level slot) at Goblin. Dart 1")
    assert done.meta["public"] == done.observation and state.characters["u2"].slots_spent == {1: 1}
    before = state.model_dump()
    refused = call(ctx, '<cast_spell caster="Bram" spell="fireball" target="Goblin"/>')
    assert not refused.ok and refused.observation.startswith("Error: Bram has not prepared Fireball.")
    assert refused.observation.endswith("never narrate it as done.") and ".." not in refused.observation
    assert not call(ctx, '<cast_spell caster="Aria" spell="fire bolt" target="Goblin"/>').ok
    assert state.model_dump() == before
    assert "cast_spell" in {t.name for t in tools_for(AgentType.NARRATIVE)} & {t.name for t in tools_for(AgentType.COMBAT)}
    assert "cast_spell" not in {t.name for t in tools_for(AgentType.NPC)}  # NPCs' own magic is the GM's to narrate
    sheet = call(ctx, '<get_character name="Bram"/>').observation
    assert "spell attack +5 · save DC 13 · slots 1st 1/2" in sheet and "Magic Missile (1st)" in sheet


async def test_a_players_cast_enters_the_story_and_a_refusal_changes_nothing(table):
    text = await table.engine.cast(CHANNEL, "u2", "bob", "fire bolt", "Ysolde Marrick", confirmed=True)
    assert text.startswith("Bram casts Fire Bolt at Ysolde Marrick. Spell attack 1d20+5 →")
    session = await table.engine.session(CHANNEL)
    [line] = [m for m in await table.store.messages(session.id) if m.author_id == "u2"]
    assert line.text == text and line.agent is AgentType.PLAYER
    await table.engine.cast(CHANNEL, "u2", "bob", "shield")
    await table.engine.cast(CHANNEL, "u2", "bob", "mage armor", "Bram")
    state = await table.state()
    assert state.characters["u2"].slots_spent == {1: 2}
    with pytest.raises(BadInput, match="Bram has no spell slot of 1st level or higher left for Magic Missile"):
        await table.engine.cast(CHANNEL, "u2", "bob", "magic missile", "Ysolde Marrick")
    after = await table.engine.session(CHANNEL)
    assert after.state == state and after.version == (await table.engine.session(CHANNEL)).version
    assert len(await table.store.messages(session.id)) == len(await table.store.messages(after.id))
    with pytest.raises(NoCharacter):
        await table.engine.cast(CHANNEL, "stranger", "x", "fire bolt", "Bram")
    rested = await table.engine.rest(CHANNEL, "u2", "bob", "long")
    assert "spell slots restored" in rested and (await table.state()).characters["u2"].slots_spent == {}


def test_an_adventures_enemies_save_by_their_stat_blocks_scores():
    state = new_state()
    state.current_location = "tide-tunnel"
    assert call(ctx_for(state), '<start_combat encounter="tunnel-crabs"/>').ok
    crab = enemy(state, "Giant Crab 1")
    assert crab.abilities is not None and crab.abilities.mod("dexterity") == 2  # DEX 15
    sorcerer = caster(state, "u3", "Sel", "sorcerer", 5)
    told = cast(ctx_for(state, actor="u3", seed=5), sorcerer, "fireball", "Giant Crab 1, Giant Crab 2", None, None)
    assert re.search(r"Giant Crab 1: 1d20\+2 → \d+, (success|failure)", told), told
    assert re.search(r"Giant Crab 2: 1d20\+2 → \d+, (success|failure)", told), told
    # The saved fight keeps the scores: a later turn's save reads the same block.
    assert type(state).model_validate_json(state.model_dump_json()).combat.order == state.combat.order
