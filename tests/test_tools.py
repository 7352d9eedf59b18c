"""Every tool against a real game state: what it does, and that each error changes nothing."""

from __future__ import annotations

import pytest

from engine.basics import AgentType
from engine.state import GameState
from tests.conftest import call, ctx_for, turn_of

NPC = AgentType.NPC
COMBAT = AgentType.COMBAT


def unchanged(state: GameState, before: GameState) -> bool:
    return state.model_dump() == before.model_dump()


def failing(ctx, tag: str, *fragments: str):
    """The tag must fail with an error naming each fragment, and leave the state as it was."""
    before = ctx.state.model_copy(deep=True)
    result = call(ctx, tag)
    assert not result.ok, result.observation
    assert result.observation.startswith("Error:")
    for f in fragments:
        assert f.lower() in result.observation.lower(), result.observation
    assert unchanged(ctx.state, before)
    return result


# --- roll ---------------------------------------------------------------------------------------------------------

def test_roll_is_seeded(state):
    a = call(ctx_for(state, seed=5), "<roll>1d20+3</roll>")
    b = call(ctx_for(state, seed=5), "<roll>1d20+3</roll>")
    assert a.ok and a.observation == b.observation and "1d20+3 →" in a.observation


def test_roll_with_reason_attribute(state):
    result = call(ctx_for(state), '<roll reason="Perception">1d20+1</roll>')
    assert result.ok and result.observation.startswith("Perception: 1d20+1")


def test_roll_errors(state):
    ctx = ctx_for(state)
    failing(ctx, "<roll>banana</roll>", "not a dice expression")
    failing(ctx, "<roll>500d6</roll>", "too many dice")
    failing(ctx, "<roll></roll>", "expression")


# --- inventory and coin --------------------------------------------------------------------------------------------

def test_give_and_take_items(state):
    ctx = ctx_for(state)
    assert call(ctx, '<modify_inventory item="Rope" quantity="2"/>').ok
    assert state.characters["u1"].item("rope").quantity == 2
    assert call(ctx, '<modify_inventory item="healing potion" quantity="1"/>').ok
    assert state.characters["u1"].item("healing potion").quantity == 2
    took = call(ctx, '<modify_inventory item="rope" quantity="-2"/>')
    assert took.ok and state.characters["u1"].item("rope") is None


def test_inventory_for_a_named_character_and_child_element_form(state):
    ctx = ctx_for(state)
    result = call(ctx, "<modify_inventory><item>lantern oil</item><quantity>3</quantity><character>Bram</character></modify_inventory>")
    assert result.ok and state.characters["u2"].item("lantern oil").quantity == 3


def test_currency_give_and_take(state):
    ctx = ctx_for(state)
    assert call(ctx, '<modify_inventory currency="gp" quantity="-4"/>').ok
    assert state.characters["u1"].currency.gp == 6
    assert call(ctx, '<modify_inventory>{"currency": "sp", "quantity": 12}</modify_inventory>').ok
    assert state.characters["u1"].currency.sp == 12


def test_paying_a_coin_one_lacks_makes_change_at_5e_rates(state):
    ctx = ctx_for(state)  # Aria has 10 gp and no silver
    paid = call(ctx, '<modify_inventory currency="sp" quantity="-5"/>')  # a rope for 5 sp
    assert paid.ok and "breaks 1 gp" in paid.observation and "5 sp in change" in paid.observation
    assert state.characters["u1"].currency.model_dump() == {"cp": 0, "sp": 5, "gp": 9, "pp": 0}
    assert call(ctx, '<modify_inventory currency="cp" quantity="-3"/>').ok  # breaks a silver piece
    assert state.characters["u1"].currency.model_dump() == {"cp": 7, "sp": 4, "gp": 9, "pp": 0}
    failing(ctx, '<modify_inventory currency="pp" quantity="-1"/>', "cannot pay 1 pp", "worth 0.947 pp", "nothing was paid")
    paid = call(ctx, '<modify_inventory currency="gp" quantity="-10"/>')  # 9 gp, then 4 sp and 60 cp of small change
    assert not paid.ok and "cannot pay 10 gp" in paid.observation
    state.characters["u1"].currency.cp = 60
    paid = call(ctx, '<modify_inventory currency="gp" quantity="-10"/>')
    assert paid.ok and "pays 4 sp" in paid.observation and "pays 60 cp" in paid.observation
    assert state.characters["u1"].currency.model_dump() == {"cp": 0, "sp": 0, "gp": 0, "pp": 0}


def test_inventory_errors_never_go_negative(state):
    ctx = ctx_for(state)
    failing(ctx, '<modify_inventory item="crown jewels" quantity="-1"/>', "has no 'crown jewels'")
    failing(ctx, '<modify_inventory item="healing potion" quantity="-3"/>', "only 1")
    failing(ctx, '<modify_inventory currency="gp" quantity="-11"/>', "only 10 gp")
    failing(ctx, '<modify_inventory item="rope" currency="gp" quantity="1"/>', "exactly one")
    failing(ctx, '<modify_inventory item="rope" quantity="0"/>', "must not be 0")
    failing(ctx, '<modify_inventory item="rope" quantity="lots"/>', "quantity")
    failing(ctx, '<modify_inventory item="rope" colour="red"/>', "colour", "not an argument")
    failing(ctx, '<modify_inventory item="rope" character="Zed"/>', "no player character called 'Zed'")
    failing(ctx, '<modify_inventory>{"item": </modify_inventory>', "not valid JSON")
    failing(ctx, '<modify_inventory item="rope">{"item": "torch"}</modify_inventory>', "both as an attribute")
    failing(ctx, "<modify_inventory>a rope</modify_inventory>", "takes no text body")


# --- hit points ----------------------------------------------------------------------------------------------------

def test_damage_clamps_at_zero_and_knocks_out_then_healing_revives(state):
    ctx = ctx_for(state)
    aria = state.characters["u1"]
    result = call(ctx, '<update_hp target="Aria" amount="20" kind="damage"/>')
    assert result.ok and aria.hp == 0 and "unconscious" in aria.conditions and "falls unconscious" in result.observation
    healed = call(ctx, '<update_hp target="Aria" amount="500" kind="healing"/>')
    assert healed.ok and aria.hp == aria.max_hp and "unconscious" not in aria.conditions


def test_hp_defaults_to_the_acting_character_and_reaches_npcs(state):
    ctx = ctx_for(state, actor="u2")
    assert call(ctx, '<update_hp amount="2"/>').ok and state.characters["u2"].hp == state.characters["u2"].max_hp - 2
    assert call(ctx, '<update_hp target="Brisa Wendle" amount="3"/>').ok
    assert state.npcs["brisa-wendle"].hp == state.npcs["brisa-wendle"].max_hp - 3


def test_hp_errors(state):
    ctx = ctx_for(state)
    failing(ctx, '<update_hp target="Nobody" amount="3"/>', "no one called 'Nobody'")
    failing(ctx, '<update_hp target="Aria" amount="-3"/>', "amount")
    failing(ctx, '<update_hp target="Aria" amount="3" kind="poison"/>', "kind")


# --- rests ---------------------------------------------------------------------------------------------------------

def test_short_rest_spends_hit_dice(state):
    ctx = ctx_for(state)
    aria = state.characters["u1"]
    aria.hp = 2
    result = call(ctx, "<short_rest/>")
    assert result.ok and aria.hit_dice == 0 and aria.hp > 2 and "spends 1 hit die" in result.observation
    again = call(ctx, "<short_rest/>")
    assert again.ok and "no hit dice left" in again.observation


def test_long_rest_restores_the_party(state):
    ctx = ctx_for(state)
    for ch in state.characters.values():
        ch.hp, ch.hit_dice = 1, 0
    result = call(ctx, "<long_rest/>")
    assert result.ok
    assert all(ch.hp == ch.max_hp and ch.hit_dice == 1 for ch in state.characters.values())


def test_rest_errors(state):
    ctx = ctx_for(state)
    state.characters["u1"].hp = 0
    failing(ctx, '<short_rest character="Aria"/>', "unconscious")
    state.characters["u1"].hp = 5
    call(ctx, '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>')
    failing(ctx, "<short_rest/>", "combat")
    failing(ctx, "<long_rest/>", "combat")


# --- quests --------------------------------------------------------------------------------------------------------

def test_quest_lifecycle(state):
    ctx = ctx_for(state)
    assert call(ctx, '<start_quest quest="relight-the-lantern"/>').ok
    assert state.quests["relight-the-lantern"].status == "active"
    for obj in ("learn-the-thief", "break-the-wreckers"):
        assert call(ctx, f'<complete_objective quest="relight-the-lantern" objective="{obj}"/>').ok
    failing(ctx, '<complete_quest quest="relight-the-lantern"/>', "still has open objectives")
    last = call(ctx, '<complete_objective quest="The Drowned Lantern" objective="relight-the-lamp"/>')
    assert last.ok and "Every objective is done" in last.observation
    done = call(ctx, "<complete_quest>relight-the-lantern</complete_quest>")
    assert done.ok and "40 gp" in done.observation and state.quests["relight-the-lantern"].status == "completed"
    log = call(ctx, "<get_quest_log/>")
    assert "completed" in log.observation and "keepers-rest" in log.observation


def test_new_quest_from_child_elements_and_failing_it(state):
    ctx = ctx_for(state, agent=NPC, npc="odile-farrow")
    result = call(ctx, "<start_quest><quest>Find Odile's cat</quest><objective>Search the docks</objective>"
                       "<objective>Bring the cat home</objective></start_quest>")
    assert result.ok
    quest = state.quests["find-odile-s-cat"]
    assert quest.giver == "odile-farrow" and [o.text for o in quest.objectives] == ["Search the docks", "Bring the cat home"]
    assert call(ctx, '<fail_quest quest="find-odile-s-cat" reason="the cat drowned"/>').ok
    assert quest.status == "failed"


def test_quest_errors(state):
    ctx = ctx_for(state)
    failing(ctx, '<start_quest quest="slay the dragon"/>', "at least one <objective>", "relight-the-lantern")
    failing(ctx, '<complete_objective quest="relight-the-lantern" objective="learn-the-thief"/>', "offered, not active")
    call(ctx, '<start_quest quest="relight-the-lantern"/>')
    failing(ctx, '<start_quest quest="relight-the-lantern"/>', "already active")
    failing(ctx, '<complete_objective quest="relight-the-lantern" objective="dance"/>', "no objective 'dance'")
    failing(ctx, '<fail_quest quest="nonexistent"/>', "no quest called")
    call(ctx, '<complete_objective quest="relight-the-lantern" objective="learn-the-thief"/>')
    failing(ctx, '<complete_objective quest="relight-the-lantern" objective="learn-the-thief"/>', "already done")


# --- world ---------------------------------------------------------------------------------------------------------

def test_change_location_through_an_open_exit_brings_party_npcs(state):
    ctx = ctx_for(state)
    state.npcs["brisa-wendle"].location = "saltmere-quay"
    assert call(ctx, '<add_to_party npc="brisa-wendle"/>').ok
    result = call(ctx, '<change_location location="brine-cup-tavern"/>')
    assert result.ok and state.current_location == "brine-cup-tavern"
    assert state.npcs["brisa-wendle"].location == "brine-cup-tavern" and "Odile" in result.observation


def test_gated_exits_open_by_flag_and_by_secret(state):
    ctx = ctx_for(state)
    failing(ctx, '<change_location location="gannet-rock-lighthouse"/>', "not open yet")
    flag = call(ctx, '<update_location_state flag="tide_out" value="true"/>')
    assert flag.ok and "now open" in flag.observation and state.location().flags["tide_out"] is True
    assert call(ctx, '<change_location location="saltmere-quay"/>').ok is False
    call(ctx, "<change_location>brine-cup-tavern</change_location>")
    failing(ctx, '<change_location location="tide-tunnel"/>', "not open yet")
    failing(ctx, '<discover_secret secret="cask-door"/>', "DC 13 investigation check")  # found by the check
    cask = state.locations["brine-cup-tavern"].secret("cask-door")
    cask.skill, cask.dc = None, None  # as an adventure that sets no check for it
    found = call(ctx, '<discover_secret secret="cask-door"/>')
    assert found.ok and found.persistence == "permanent" and "now open" in found.observation
    assert call(ctx, '<change_location location="tide-tunnel"/>').ok


def test_location_errors(state):
    ctx = ctx_for(state)
    failing(ctx, '<change_location location="saltmere-quay"/>', "already at")
    failing(ctx, '<change_location location="wreckers-grotto"/>', "no way from")
    failing(ctx, '<change_location location="atlantis"/>', "no location called 'atlantis'")
    failing(ctx, '<update_location_state flag="has spaces" value="1"/>', "flag")
    failing(ctx, '<discover_secret secret="cask-door"/>', "party is not there")
    failing(ctx, '<discover_secret secret="no-such-secret"/>', "no secret")


def test_get_location_reports_exits_and_people(state):
    result = call(ctx_for(state), "<get_location/>")
    assert result.ok and "Ysolde Marrick" in result.observation and "Exits:" in result.observation


def test_npc_may_reveal_only_its_own_secrets_even_from_afar(state):
    odile = ctx_for(state, agent=NPC, npc="odile-farrow")
    failing(odile, '<discover_secret secret="sea-stair"/>', "does not know")
    state.npcs["brisa-wendle"].location = "saltmere-quay"
    brisa = ctx_for(state, agent=NPC, npc="brisa-wendle")
    assert call(brisa, '<discover_secret secret="sea-stair"/>').ok


def test_npc_moves_and_party_membership(state):
    ctx = ctx_for(state)
    failing(ctx, '<add_to_party npc="odile-farrow"/>', "not here")
    assert call(ctx, '<move_npc_to_location npc="odile-farrow" location="saltmere-quay"/>').ok
    assert call(ctx, "<add_to_party>odile-farrow</add_to_party>").ok
    failing(ctx, '<add_to_party npc="odile-farrow"/>', "already in the party")
    assert call(ctx, '<remove_from_party npc="odile-farrow"/>').ok
    assert state.npcs["odile-farrow"].location == "saltmere-quay"
    failing(ctx, '<remove_from_party npc="odile-farrow"/>', "not in the party")
    failing(ctx, '<move_npc_to_location npc="odile-farrow" location="saltmere-quay"/>', "already at")
    failing(ctx, '<move_npc_to_location npc="nobody" location="saltmere-quay"/>', "no NPC called")


def test_npc_agent_acts_only_on_itself(state):
    ysolde = ctx_for(state, agent=NPC, npc="ysolde-marrick")
    failing(ysolde, '<move_npc_to_location npc="odile-farrow" location="saltmere-quay"/>', "only move yourself")
    assert call(ysolde, '<add_to_party npc="ysolde-marrick"/>').ok


def test_get_npc_is_permanent_and_hides_other_npcs_secrets_from_npcs(state):
    gm = call(ctx_for(state), '<get_npc npc="odile"/>')
    assert gm.ok and gm.persistence == "permanent" and "cask-door" in gm.observation
    as_npc = call(ctx_for(state, agent=NPC, npc="ysolde-marrick"), '<get_npc npc="Odile Farrow"/>')
    assert as_npc.ok and "cask-door" not in as_npc.observation


def test_get_character(state):
    result = call(ctx_for(state), '<get_character name="Bram"/>')
    assert result.ok and "wizard" in result.observation and "HP" in result.observation
    failing(ctx_for(state), '<get_character name="Nobody"/>', "no player character")


# --- combat --------------------------------------------------------------------------------------------------------

def move_party_to_grotto(state: GameState) -> None:
    state.current_location = "wreckers-grotto"


def test_start_combat_from_encounter_rolls_initiative_in_order(state):
    move_party_to_grotto(state)
    result = call(ctx_for(state), '<start_combat encounter="wreckers-ambush"/>')
    assert result.ok and state.combat.active and state.combat.round == 1
    order = state.combat.order
    assert [p.initiative for p in order] == sorted((p.initiative for p in order), reverse=True)
    assert {"Aria", "Bram"} <= {p.name for p in order}
    enemies = [p for p in order if p.faction == "enemy"]
    assert len(enemies) == 3 and len({p.id for p in enemies}) == 3 and all(p.hp == p.max_hp for p in enemies)


def test_combat_turns_damage_and_end(state):
    move_party_to_grotto(state)
    ctx = ctx_for(state)
    call(ctx, '<start_combat encounter="wreckers-ambush"/>')
    cctx = ctx_for(state, agent=COMBAT)
    first = state.combat.turn_index
    assert call(cctx, "<next_turn/>").ok and state.combat.turn_index != first
    for p in [p for p in state.combat.order if p.faction == "enemy"]:
        hit = call(cctx, f'<update_hp target="{p.name}" amount="99"/>')
        # Hired hands are defeated; Corran Vey fights with his own NPC sheet, and is knocked out.
        assert hit.ok and ("defeated" if p.hp is not None else "Corran Vey falls unconscious") in hit.observation
    step = call(cctx, "<next_turn/>")
    assert step.ok and "No enemy is left standing" in step.observation
    assert state.combat.current().faction != "enemy"  # fallen enemies are skipped
    end = call(cctx, '<end_combat outcome="the wreckers fall"/>')
    assert end.ok and not state.combat.active and "defeated:" in end.observation


def test_next_turn_skips_the_fallen_and_counts_rounds(state):
    move_party_to_grotto(state)
    call(ctx_for(state), '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>')
    cctx = ctx_for(state, agent=COMBAT)
    state.characters["u2"].hp, state.characters["u2"].stable = 0, True  # Bram is down, and stable: no turns
    names = []
    for _ in range(4):
        call(cctx, "<next_turn/>")
        names.append(state.combat.current().name)
    assert "Bram" not in names and state.combat.round >= 2
    state.characters["u2"].stable = False  # dying: his turns are his death saves
    said = [call(cctx, "<next_turn/>").observation for _ in range(3)]
    assert any("Bram is dying: their turn is a death saving throw" in s for s in said)


def test_combat_errors(state):
    ctx, cctx = ctx_for(state), ctx_for(state, agent=COMBAT)
    failing(ctx, '<start_combat encounter="wreckers-ambush"/>', "not here")
    failing(ctx, '<start_combat encounter="dragon"/>', "no encounter")
    failing(ctx, "<start_combat/>", "at least one enemy")
    failing(cctx, "<next_turn/>", "no combat")
    failing(cctx, "<end_combat/>", "no combat")
    call(ctx, '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>')
    failing(ctx, '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>', "already")
    failing(ctx, '<change_location location="brine-cup-tavern"/>', "during combat")


def test_an_enemy_never_shares_a_name_with_a_character_a_person_or_another_enemy(state):
    """Foes are found by name: a bandit called Aria made 'update_hp target="Aria"' hit whoever came first."""
    ctx = ctx_for(state)
    failing(ctx, '<start_combat>{"enemy": [{"name": "aria", "hp": 30, "ac": 10}]}</start_combat>',
            "an enemy cannot be called aria: that is a player character's name")
    failing(ctx, '<start_combat>{"enemy": [{"name": "Ysolde Marrick", "hp": 9, "ac": 10}]}</start_combat>',
            "the name of someone in this adventure")
    assert not state.combat.active
    started = call(ctx, '<start_combat>{"enemy": [{"name": "Gull", "hp": 2, "ac": 10, "count": 2}, '
                        '{"name": "Gull", "hp": 3, "ac": 10}]}</start_combat>')
    assert started.ok
    assert sorted(p.name for p in state.combat.order if p.faction == "enemy") == ["Gull 1", "Gull 2", "Gull 3"]


# --- the executor's own refusals ------------------------------------------------------------------------------------

def test_unknown_tool_lists_the_agents_tools(state):
    result = failing(ctx_for(state), "<summon_dragon>red</summon_dragon>", "no tool called 'summon_dragon'", "roll")
    assert "next_turn" not in result.observation  # a combat-only tool is not offered to the narrator


def test_disallowed_tool_for_agent(state):
    npc = ctx_for(state, agent=NPC, npc="ysolde-marrick")
    failing(npc, '<start_combat encounter="wreckers-ambush"/>', "not available to the npc agent")
    failing(npc, '<update_hp target="Aria" amount="3"/>', "not available to the npc agent")
    failing(ctx_for(state), "<next_turn/>", "not available to the narrative agent")


@pytest.mark.parametrize("tag,fragment", [
    ('<modify_inventory item=rope/>', "quotes"),
    ("<roll>1d20", "never closed"),
])
def test_malformed_and_unclosed_tags(state, tag, fragment):
    failing(ctx_for(state), tag, fragment)


def test_a_crashing_tool_restores_the_state(state, monkeypatch):
    from engine.tools import TOOLS

    spec = TOOLS["modify_inventory"]

    def explode(ctx, args):
        ctx.state.characters["u1"].currency.gp = 999
        raise RuntimeError("bug")

    monkeypatch.setitem(TOOLS, "modify_inventory", type(spec)(**{**spec.__dict__, "func": explode}))
    failing(ctx_for(state), '<modify_inventory item="rope"/>', "failed unexpectedly")


# --- found in review ------------------------------------------------------------------------------------------------

def test_encounters_are_bounded(state):
    ctx = ctx_for(state)
    failing(ctx, '<start_combat>{"enemy": [{"name": "Rat", "hp": 1, "ac": 10, "count": 20000}]}</start_combat>', "count")
    failing(ctx, '<start_combat>{"enemy": [' + ", ".join(['{"name": "Rat", "hp": 1, "ac": 10, "count": 12}'] * 3)
            + "]}</start_combat>", "at most 30 combatants")
    ok = call(ctx, '<start_combat>{"enemy": [{"name": "Rat", "hp": 1, "ac": 10, "count": 12}]}</start_combat>')
    assert ok.ok and len({p.id for p in state.combat.order}) == len(state.combat.order) == 14


def test_a_new_quest_never_overwrites_another(state):
    ctx = ctx_for(state)
    call(ctx, "<start_quest><quest>Relight the lantern 2</quest><objective>a</objective></start_quest>")
    call(ctx, "<start_quest><quest>Relight the lantern!</quest><objective>b</objective></start_quest>")
    titles = {q.id: q.title for q in state.quests.values()}
    assert titles["relight-the-lantern"] == "The Drowned Lantern"  # the adventure's own quest is untouched
    assert titles["relight-the-lantern-2"] == "Relight the lantern 2" and titles["relight-the-lantern-3"] == "Relight the lantern!"
    # the same title again is the same quest, not a new one
    failing(ctx, "<start_quest><quest>Relight the lantern?</quest><objective>c</objective></start_quest>", "already active")
    failing(ctx, "<start_quest><quest>x</quest><objective>" + "y" * 151 + "</objective></start_quest>", "objective")


@pytest.mark.parametrize("word", ["0", "no", "off", "false", "closed"])
def test_flag_words_that_mean_no_keep_exits_shut(state, word):
    ctx = ctx_for(state)
    result = call(ctx, f'<update_location_state flag="tide_out" value="{word}"/>')
    assert result.ok and state.location().flags["tide_out"] is False and "now open" not in result.observation
    failing(ctx, '<change_location location="gannet-rock-lighthouse"/>', "not open yet")
    failing(ctx, '<update_location_state flag="tide_out" value="7"/>', "yes/no flag")


def test_deep_json_is_an_error_observation_not_a_crash(state):
    deep = '{"enemy": ' + "[" * 1500 + "]" * 1500 + "}"
    failing(ctx_for(state), f"<start_combat>{deep}</start_combat>", "cannot be read")


def test_division_by_zero_in_a_roll_is_an_error_observation(state):
    failing(ctx_for(state), "<roll>1d20/0</roll>", "divide by zero")


def test_no_joining_leaving_or_wandering_off_during_combat(state):
    state.npcs["brisa-wendle"].location = state.current_location
    ctx = ctx_for(state)
    call(ctx, '<add_to_party npc="brisa-wendle"/>')
    call(ctx, '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>')
    brisa = ctx_for(state, agent=NPC, npc="brisa-wendle")
    failing(brisa, '<remove_from_party npc="brisa-wendle"/>', "not during combat")
    failing(brisa, '<move_npc_to_location npc="brisa-wendle" location="saltmere-quay"/>', "not during combat")
    failing(ctx, '<add_to_party npc="ysolde-marrick"/>', "not during combat")


def test_an_npc_sees_only_the_face_of_another_npc_and_cannot_overwrite_the_gms_note(state):
    gm = call(ctx_for(state), '<get_npc npc="brisa-wendle"/>')
    assert "Knows secrets: keepers-log, sea-stair" in gm.observation
    other = call(ctx_for(state, agent=NPC, npc="ysolde-marrick"), '<get_npc npc="odile-farrow"/>')
    assert other.ok and "wreckers" not in other.observation.lower() and "private thoughts are their own" in other.observation
    call(ctx_for(state, agent=NPC, npc="ysolde-marrick"), '<get_npc npc="brisa-wendle"/>')
    assert any("Knows secrets: keepers-log, sea-stair" in v for v in state.knowledge.values())


def test_quests_in_other_scripts_stay_apart(state):
    ctx = ctx_for(state)
    assert call(ctx, "<start_quest><quest>Найти кольцо</quest><objective>Искать</objective></start_quest>").ok
    assert call(ctx, "<start_quest><quest>Спасти деревню</quest><objective>Защитить</objective></start_quest>").ok
    assert call(ctx, "<start_quest><quest>村を救う</quest><objective>守る</objective></start_quest>").ok
    assert call(ctx, '<fail_quest quest="Спасти деревню"/>').ok
    statuses = {q.title: q.status for q in state.quests.values()}
    assert statuses["Найти кольцо"] == "active" and statuses["Спасти деревню"] == "failed" and statuses["村を救う"] == "active"


# --- attacks the engine resolves -------------------------------------------------------------------------------------

def fight(state, ac: int, hp: int = 30, seed: int = 1):
    """A fight with a Rat, and a Mercenary with no stat block (whose attacks take the numbers given)."""
    ctx = ctx_for(state, seed=seed)
    enemies = f'[{{"name": "Rat", "hp": {hp}, "ac": {ac}}}, {{"name": "Mercenary", "hp": 20, "ac": 12}}]'
    assert call(ctx, f'<start_combat>{{"enemy": {enemies}}}</start_combat>').ok
    rat = next(p for p in state.combat.order if p.name == "Rat")
    return ctx_for(state, agent=COMBAT, seed=seed), rat


def attack_until(state_factory, ac, tag, wanted, hp=30):
    """Seeds are deterministic: find the first whose attack reads as wanted."""
    for seed in range(1, 400):
        state = state_factory()
        cctx, rat = fight(state, ac, hp, seed)
        result = call(cctx, tag)
        if wanted(result.observation):
            return state, rat, result
    raise AssertionError("no seed gave that outcome")


def test_an_attack_rolls_against_ac_and_deals_damage_only_on_a_hit(state):
    import re

    from tests.conftest import new_state

    # someone with no sheet and no stat block: the numbers given count (tests/test_attacks.py: a sheet's weapon)
    tag = '<attack attacker="Mercenary" target="Rat" weapon="broken bottle" bonus="4" damage="1d8+2"/>'
    state, rat, hit = attack_until(new_state, 12, tag, lambda o: ", hit;" in o)
    dealt = int(re.search(r"damage 1d8\+2 → (\d+)", hit.observation).group(1))
    assert hit.ok and "Mercenary attacks Rat with broken bottle: 1d20+4 →" in hit.observation and "vs AC 12" in hit.observation
    assert rat.hp == 30 - dealt and f"Rat takes {dealt} damage: HP {30 - dealt}/30." in hit.observation
    state, rat, miss = attack_until(new_state, 12, tag, lambda o: ", miss" in o)
    assert miss.ok and "No damage." in miss.observation and rat.hp == 30  # a miss rolls no damage at all
    total = int(re.search(r"→ (-?\d+) vs AC", miss.observation).group(1))
    assert total < 12 or "natural 1" in miss.observation


def test_a_natural_20_hits_anything_and_doubles_the_dice_and_a_natural_1_always_misses(state):
    from tests.conftest import new_state

    tag = '<attack attacker="Mercenary" target="Rat" bonus="-5" damage="1d6+2"/>'
    state, rat, crit = attack_until(new_state, 30, tag, lambda o: "critical" in o)
    assert "critical hit (damage dice doubled); damage 2d6+2 →" in crit.observation and rat.hp < 30
    tag = '<attack attacker="Mercenary" target="Rat" bonus="25" damage="1d6"/>'
    state, rat, fumble = attack_until(new_state, 5, tag, lambda o: "natural 1" in o)
    assert ", miss (natural 1). No damage." in fumble.observation and rat.hp == 30


def test_attack_arguments_and_defaults(state):
    cctx, rat = fight(state, ac=10)
    before = state.model_copy(deep=True)
    failing(cctx, '<attack target="Nobody" weapon="longsword"/>', "no one called 'Nobody'")
    failing(cctx, '<attack target="Rat" damage="a fistful"/>', "bad arguments")
    failing(cctx, '<attack attacker="Rat" target="Aria" damage="1d4"/>', "give the attack's bonus")
    assert unchanged(state, before)
    # The acting player's character by default, by the sheet: a weapon it carries, never numbers the model gave.
    failing(cctx, '<attack target="Rat" damage="1d8"/>', "Aria must attack with a weapon they carry")
    assert unchanged(state, before)
    default = call(ctx_for(turn_of(cctx.state, "Aria"), agent=cctx.agent), '<attack target="Rat" weapon="longsword"/>')
    assert default.ok and default.observation.startswith("Aria attacks Rat with longsword: 1d20+5 →")
    enemy = call(cctx, '<attack attacker="Rat" target="Aria" bonus="3" damage="1d4" roll="advantage"/>')
    assert enemy.ok and "Rat attacks Aria: 1d20+3 adv →" in enemy.observation


def test_the_combat_agent_can_use_up_a_potion(state):
    cctx, _ = fight(state, ac=10)
    used = call(cctx, '<modify_inventory item="healing potion" quantity="-1"/>')
    assert used.ok and "loses 1 × healing potion" in used.observation


def test_dropped_dice_are_struck_through_in_what_players_read():
    import random

    from engine.dice import roll as roll_dice

    advantage = roll_dice("1d20+2 adv", random.Random(3))
    assert advantage.detail == "2d20kh1 (8\u0336, 19) + 2 = 21" and advantage.total == 21
    best = roll_dice("4d6kh3", random.Random(3))
    assert best.detail.count("\u0336") == 1 and best.total == 12  # one die dropped, struck once
    assert "\u0336" not in roll_dice("1d20+3", random.Random(3)).detail


def test_a_roll_tells_players_whose_it_is_and_what_for(state):
    told = call(ctx_for(state), '<roll reason="Bram\'s arcana">1d20+2</roll>')
    assert told.meta["public"].startswith("Bram's arcana: 1d20+2 →") and told.observation.startswith("Bram's arcana:")
    told = call(ctx_for(state, actor="u1"), "<roll>1d20</roll>")
    assert told.meta["public"].startswith("Aria: 1d20 →") and told.observation.startswith("1d20 →")
    call(ctx_for(state), '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>')
    now = state.combat.order[state.combat.turn_index].name
    assert call(ctx_for(state, AgentType.COMBAT), "<roll>1d6</roll>").meta["public"].startswith(f"{now}: 1d6 →")
    assert call(ctx_for(state, actor=None), '<roll>1d4</roll>').meta["public"].startswith(f"{now}: 1d4")


def test_a_player_characters_attack_takes_the_sheets_numbers_or_none(state):
    from tests.conftest import new_state

    state = new_state()
    cctx, rat = fight(state, 12)
    for tag in ('<attack attacker="Aria" target="Rat" weapon="greataxe" bonus="30" damage="99d12+99"/>',
                '<attack attacker="Aria" target="Rat" bonus="30" damage="99d12+99"/>'):
        failing(cctx, tag, "a player character's attack takes its numbers from the sheet")
    assert rat.hp == 30
    failing(cctx, '<attack attacker="Aria" target="Odile Farrow" weapon="longsword"/>', "Odile Farrow is not here")
    assert state.npcs["odile-farrow"].hp == state.npcs["odile-farrow"].max_hp
