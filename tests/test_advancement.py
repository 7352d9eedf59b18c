"""Levels come from the game: the GM's tools (or an admin) award XP or grant milestones, /levelup takes only a level
earned, characters begin at the game's starting level, and one who left the party does nothing in its scene."""

from __future__ import annotations

import json
import random

import pytest

from engine import BadInput
from engine.basics import xp_for
from engine.characters import import_character, make_character
from engine.jsonio import untrusted
from engine.rules.levels import earned, level_up, progress
from tests.conftest import CHANNEL, call, ctx_for


def test_xp_thresholds_follow_the_srd_and_a_character_starts_at_its_levels_threshold():
    assert [xp_for(n) for n in (1, 2, 3, 5, 11, 20)] == [0, 300, 900, 6500, 85000, 355000]
    wizard = make_character("u", "Bram", "wizard", level=5)
    assert wizard.xp == 6500 and progress(wizard, "xp") == "6,500/14,000 XP"
    assert not earned(wizard, "xp") and not earned(wizard, "milestone")
    wizard.xp = 14_000
    assert earned(wizard, "xp") and progress(wizard, "xp") == "14,000/14,000 XP (level up ready: /levelup)"
    assert progress(wizard, "milestone") == "levels by milestone (none to take)"


def test_levelup_needs_the_xp_or_a_milestone_and_a_milestone_is_spent():
    fighter = make_character("u", "Aria", "fighter")
    before = fighter.model_dump()
    with pytest.raises(BadInput, match=r"Aria has 0 XP; level 2 needs 300 \(300 more\)\. XP comes from play"):
        level_up(fighter, random.Random(1))
    with pytest.raises(BadInput, match="Aria has no level to take: in this game the GM grants levels by milestone"):
        level_up(fighter, random.Random(1), leveling="milestone")
    assert fighter.model_dump() == before
    fighter.milestones = 2
    level_up(fighter, random.Random(1), leveling="milestone")
    assert (fighter.level, fighter.milestones) == (2, 1) and progress(fighter, "milestone").startswith("1 level to take")
    fighter.xp = 899  # by XP a milestone counts for nothing, and 899 is not level 3's 900
    with pytest.raises(BadInput, match="Aria has 899 XP; level 3 needs 900"):
        level_up(fighter, random.Random(1))


def test_the_gms_award_xp_splits_among_the_party_and_says_who_may_level(state):
    ctx = ctx_for(state)
    result = call(ctx, '<award_xp xp="601" reason="the wreckers driven off"/>')
    assert result.ok, result.observation
    aria, bram = (state.characters[o] for o in ("u1", "u2"))
    assert (aria.xp, bram.xp) == (301, 300)  # the odd point goes to the first
    assert "Aria and Bram gain 300 XP each for the wreckers driven off." in result.observation
    assert "Aria and Bram have earned a level" in result.observation
    assert call(ctx, '<award_xp xp="50" to="Bram"/>').ok and bram.xp == 350 and aria.xp == 301
    assert call(ctx, '<award_xp xp="10" to="Aria, Bram"/>').ok and (aria.xp, bram.xp) == (306, 355)
    for bad, said in (('<award_xp xp="0"/>', "xp"), ('<award_xp xp="100001"/>', "xp"),
                      ('<award_xp xp="10" to="Nobody"/>', "Nobody"),
                      ('<grant_milestone/>', "this game levels by XP: use award_xp")):
        before = state.model_dump()
        refused = call(ctx, bad)
        assert not refused.ok and said in refused.observation, refused.observation
        assert state.model_dump() == before


def test_in_a_milestone_game_the_gm_grants_levels_and_xp_is_refused(state):
    state.leveling = "milestone"
    ctx = ctx_for(state)
    refused = call(ctx, '<award_xp xp="300"/>')
    assert not refused.ok and "levels by milestone, not XP" in refused.observation
    granted = call(ctx, '<grant_milestone to="Aria" reason="the lantern relit"/>')
    assert granted.ok and "A milestone (the lantern relit): Aria may take a level (/levelup)." in granted.observation
    assert (state.characters["u1"].milestones, state.characters["u2"].milestones) == (1, 0)
    state.characters["u2"].level = 20
    capped = call(ctx, "<grant_milestone/>")
    assert not capped.ok and "Bram can gain no more levels" in capped.observation
    assert state.characters["u1"].milestones == 1  # nothing of the refused call was kept


async def test_a_gm_award_in_a_turn_is_state_and_levelup_follows(table):
    with pytest.raises(BadInput, match="Bram has 0 XP"):
        await table.engine.level_up(CHANNEL, "u2", "al")
    await table.turn("We drive them off.", 'They flee. <award_xp xp="600" reason="the wreckers"/>', " Well fought.")
    state = await table.state()
    assert (state.characters["u1"].xp, state.characters["u2"].xp) == (300, 300)
    ch, gained = await table.engine.level_up(CHANNEL, "u2", "al")
    assert ch.level == 2 and gained.gained > 0
    with pytest.raises(BadInput, match="Bram has 300 XP; level 3 needs 900"):
        await table.engine.level_up(CHANNEL, "u2", "al")


async def test_an_admins_award_enters_the_story_and_bad_awards_change_nothing(table):
    before = (await table.state()).model_dump()
    for kwargs, said in (({"xp": 300, "to": ["Nobody"]}, "Nobody"), ({"xp": 0}, "XP is a whole number from 1"),
                         ({"milestone": True}, "This game levels by XP")):
        with pytest.raises(BadInput, match=said):
            await table.engine.award(CHANNEL, "gm", **kwargs)
    assert (await table.state()).model_dump() == before
    told = await table.engine.award(CHANNEL, "gm", xp=900, to=["Aria"], reason="a clever plan")
    assert told.startswith("Aria gains 900 XP for a clever plan. Aria has earned a level")
    session = await table.engine.session(CHANNEL)
    assert (await table.store.messages(session.id))[-1].text == told + " (Awarded by gm.)"


async def test_characters_begin_at_the_games_starting_level(table):
    with pytest.raises(BadInput, match="Characters begin at level 1 at most in this game"):
        await table.engine.create_character(CHANNEL, "u3", "Cass", "rogue", level=3)
    with pytest.raises(BadInput, match="Characters begin at level 1 at most"):
        await table.engine.import_character(CHANNEL, "u3", {"name": "Cass", "class": "rogue", "level": 4})
    assert "u3" not in (await table.state()).characters
    await table.engine.configure_server("g1", CHANNEL, starting_level=3)
    cass = await table.engine.create_character(CHANNEL, "u3", "Cass", "rogue")  # no level given: the starting one
    assert cass.level == 3 and cass.xp == 900
    new = await table.engine.server_settings("g1")
    assert "Characters start at level 3 at most" in new.describe()


async def test_a_character_outside_the_party_cannot_act_in_its_scene(table):
    await table.engine.award(CHANNEL, "gm", xp=300, to=["Bram"])
    await table.engine.set_party_membership(CHANNEL, "u2", False)
    before = (await table.state()).model_dump()
    session = await table.engine.session(CHANNEL)
    count = len(await table.store.messages(session.id))
    attempts = (table.engine.rest(CHANNEL, "u2", "al", "short"), table.engine.level_up(CHANNEL, "u2", "al"),
                table.engine.cast(CHANNEL, "u2", "al", "fire bolt", "Ysolde Marrick"),
                table.engine.player_attack(CHANNEL, "u2", "al", "quarterstaff"),
                table.engine.trade(CHANNEL, "u2", "al", "rope"),
                table.engine.player_check(CHANNEL, "u2", "al", "arcana", None))
    for attempt in attempts:
        with pytest.raises(BadInput, match="Bram is not with the party: /party join first."):
            await attempt
    assert (await table.state()).model_dump() == before and len(await table.store.messages(session.id)) == count
    await table.engine.set_party_membership(CHANNEL, "u2", True)
    ch, _ = await table.engine.level_up(CHANNEL, "u2", "al")
    assert ch.level == 2


@pytest.mark.parametrize("sheet, said", [
    ({"max_hp": 10 ** 30}, "max_hp: 1,000,000,000,000,000,000,000,000,000,000 is more than a level-1 rogue"),
    ({"max_hp": 12, "hp": 40}, "hp: 40 is more than max_hp (12)"),
    ({"currency": {"gp": 10 ** 12}}, "currency: 1,000,000,000,000 gp in all is more than a character may bring"),
    ({"inventory": [{"name": "arrow", "quantity": 5000}]}, "5,000 × arrow is more than 1,000 of one thing"),
    ({"level": 3, "xp": 300}, "xp: 300 does not fit level 3 (900 to 2,699"),
    ({"level": 21}, "level"),
])
def test_an_imported_sheet_is_bounded_like_a_made_one(sheet, said):
    with pytest.raises(BadInput) as refused:
        import_character("u9", {"name": "Vex", "class": "rogue"} | sheet)
    assert said in str(refused.value) and str(refused.value).startswith("The character file has problems:")


def test_a_sheet_within_bounds_is_taken_as_written():
    vex = import_character("u9", {"name": "Vex", "class": "rogue", "level": 3, "xp": 1200, "max_hp": 20,
                                  "currency": {"gp": 500}, "inventory": [{"name": "arrow", "quantity": 40}]})
    assert (vex.level, vex.xp, vex.max_hp, vex.hp, vex.currency.gp) == (3, 1200, 20, 20, 500)


@pytest.mark.parametrize("text, said", [
    ("[" * 40_000 + "]" * 40_000, "nests lists or objects deeper than the parser follows"),
    ('{"max_hp": ' + "9" * 5000 + "}", "a number too long"),
    ("{oops", "not JSON"),
])
def test_hostile_json_is_one_sentence(text, said):
    with pytest.raises(ValueError) as refused:
        untrusted(text)
    message = str(refused.value)
    assert said in message and "\n" not in message and len(message) < 300
    assert untrusted(json.dumps({"a": [1, 2]})) == {"a": [1, 2]}


def test_foes_with_a_challenge_rating_are_worth_their_xp_when_the_fight_ends(state):
    from engine.basics import XP_BY_CR
    from engine.basics import AgentType

    ctx = ctx_for(state)
    assert call(ctx, '<start_combat>{"enemy": [{"name": "Bandit", "hp": 11, "ac": 12, "cr": "1/8", "count": 3}, '
                     '{"name": "Thug", "hp": 32, "ac": 11, "cr": "1/2"}, {"name": "Cat", "hp": 2, "ac": 12}]}'
                     '</start_combat>').ok
    combat = ctx_for(state, agent=AgentType.COMBAT)
    for p in state.combat.order:
        if p.faction == "enemy" and p.name != "Bandit 3":  # one bandit flees: no XP for it
            p.hp = 0
    ended = call(combat, '<end_combat outcome="the last bandit flees"/>')
    worth = 2 * XP_BY_CR["1/8"] + XP_BY_CR["1/2"]  # the cat has no rating: the GM's to reward
    assert ended.ok and f"The party earns {worth} XP for the foes overcome ({worth // 2} XP each)." in ended.observation
    assert (state.characters["u1"].xp, state.characters["u2"].xp) == (worth // 2, worth // 2)
    state.leveling = "milestone"  # a milestone game: no XP
    assert call(ctx, '<start_combat>{"enemy": [{"name": "Ogre", "hp": 59, "ac": 11, "cr": "2"}]}</start_combat>').ok
    state.combat.order[[p.name for p in state.combat.order].index("Ogre")].hp = 0
    again = call(ctx_for(state, agent=AgentType.COMBAT), "<end_combat/>")
    assert again.ok and "XP" not in again.observation and state.characters["u1"].xp == worth // 2


async def test_an_adventure_for_higher_levels_begins_its_characters_there(table):
    await table.engine.end_game(CHANNEL)
    state, _ = await table.engine.start_game(CHANNEL, "g1", adventure="ashen-thane")
    assert state.starting_level == 3  # written for levels 3-5
    ketter = await table.engine.create_character(CHANNEL, "u3", "Cass", "rogue")
    assert ketter.level == 3 and ketter.xp == 900
    await table.engine.end_game(CHANNEL)
    await table.engine.configure_server("g1", None, starting_level=1)  # a server's own choice wins
    state, _ = await table.engine.start_game(CHANNEL, "g1", adventure="ashen-thane")
    assert state.starting_level == 1
