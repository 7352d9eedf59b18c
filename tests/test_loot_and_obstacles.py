"""Loot handed out once by the engine (an encounter won, a secret found), and checks against the adventure's DCs
that find a secret or open a closed way on a success and change nothing on a failure."""

from __future__ import annotations

from engine.context import game_context
from engine.basics import AgentType
from engine.state import GameState
from tests.conftest import call, ctx_for
from tests.test_spells import seed_rolling
from tests.test_tools import failing, unchanged

COMBAT, NPC = AgentType.COMBAT, AgentType.NPC


def win_wreckers_fight(state: GameState) -> str:
    state.current_location = "wreckers-grotto"
    assert call(ctx_for(state), '<start_combat encounter="wreckers-ambush"/>').ok
    cctx = ctx_for(state, agent=COMBAT)
    for p in [p for p in state.combat.order if p.faction == "enemy"]:
        assert call(cctx, f'<update_hp target="{p.name}" amount="99"/>').ok
    end = call(cctx, '<end_combat outcome="the wreckers fall"/>')
    assert end.ok
    return end.observation


def test_winning_an_encounter_hands_out_its_loot_once(state):
    told = win_wreckers_fight(state)
    aria, bram = state.characters["u1"], state.characters["u2"]
    assert "Loot: the party shares 34 gp, 60 sp (Aria 17 gp, 30 sp; Bram 17 gp, 30 sp)" in told
    assert "Aria takes 1 × silver locket, 1 × healing potion, 1 × iron grate key" in told
    assert aria.item("iron grate key") is not None and bram.item("silver locket") is None
    assert state.encounters["wreckers-ambush"].looted
    purses = (aria.currency.model_copy(), bram.currency.model_copy())
    again = win_wreckers_fight(state)  # the hired hands again; Corran Vey is down and stays out of it
    assert "Loot" not in again and (aria.currency, bram.currency) == purses


def test_coin_that_does_not_divide_goes_to_whoever_acted(state):
    state.encounters["wreckers-ambush"].loot.coins.gp = 35
    state.current_location = "wreckers-grotto"
    call(ctx_for(state, actor="u2"), '<start_combat encounter="wreckers-ambush"/>')
    cctx = ctx_for(state, agent=COMBAT, actor="u2")
    for p in [p for p in state.combat.order if p.faction == "enemy"]:
        call(cctx, f'<update_hp target="{p.name}" amount="99"/>')
    assert "Bram 18 gp" in call(cctx, "<end_combat/>").observation
    assert state.characters["u2"].item("silver locket") is not None


def test_no_loot_while_an_enemy_still_stands(state):
    state.current_location = "wreckers-grotto"
    call(ctx_for(state), '<start_combat encounter="wreckers-ambush"/>')
    end = call(ctx_for(state, agent=COMBAT), '<end_combat outcome="the wreckers flee into the surf"/>')
    assert end.ok and "Loot" not in end.observation and not state.encounters["wreckers-ambush"].looted
    assert state.characters["u1"].item("silver locket") is None


def test_a_found_secret_gives_its_loot_once_to_the_finder(state):
    state.current_location = "tide-tunnel"
    gold = state.characters["u1"].currency.gp
    # The adventure guards the cache with a DC 14 Investigation check: the tag alone does not find it.
    failing(ctx_for(state), '<discover_secret secret="smugglers-cache"/>', "DC 14 investigation check",
            '<ability_check character="…" obstacle="smugglers-cache"/>')
    found = call(ctx_for(state, seed=seed_rolling(20)), '<ability_check character="Aria" obstacle="smugglers-cache"/>')
    assert found.ok and "success" in found.observation and "Secret discovered" in found.observation
    assert "Aria takes" in found.observation and "1 × the wreckers' tally" in found.observation
    assert "Loot:" in found.meta["public"] and "Secret discovered" not in found.meta["public"]
    assert state.characters["u1"].currency.gp == gold + 10 and state.characters["u2"].currency.sp == 17
    again = call(ctx_for(state), '<discover_secret secret="smugglers-cache"/>')
    assert again.ok and "Loot" not in again.observation and state.characters["u1"].currency.gp == gold + 10


def test_a_secret_told_by_an_npc_keeps_its_loot_until_the_party_is_there(state):
    state.npcs["odile-farrow"].knows_secrets.append("smugglers-cache")
    state.current_location = "brine-cup-tavern"
    told = call(ctx_for(state, agent=NPC, npc="odile-farrow"), '<discover_secret secret="smugglers-cache"/>')
    assert told.ok and "Loot" not in told.observation and not state.locations["tide-tunnel"].secret("smugglers-cache").looted
    state.current_location = "tide-tunnel"
    there = call(ctx_for(state), '<discover_secret secret="smugglers-cache"/>')
    assert there.ok and there.observation.startswith("Already known") and "Loot:" in there.observation


# --- obstacles ------------------------------------------------------------------------------------------------------

def outcomes(state: GameState, tag: str, changed) -> set[bool]:
    """Run the check with many seeds on copies of the state: each success must have made the change, and each
    failure must have left the state exactly as it was. Returns which outcomes were seen."""
    seen = set()
    for seed in range(40):
        copy = state.model_copy(deep=True)
        result = call(ctx_for(copy, seed=seed), tag)
        assert result.ok, result.observation
        assert ": success" in result.observation or ": failure" in result.observation, result.observation
        success = ": success" in result.observation
        if success:
            assert changed(copy), result.observation
        else:
            assert unchanged(copy, state), result.observation
        seen.add(success)
    return seen


def test_a_check_against_a_secrets_dc_finds_it_and_opens_the_way(state):
    state.current_location = "brine-cup-tavern"
    tag = '<ability_check character="Bram" obstacle="cask-door"/>'
    first = call(ctx_for(state.model_copy(deep=True), seed=3), tag)
    assert "Investigation check" in first.observation and "vs DC 13" in first.observation

    def found(s: GameState) -> bool:
        loc = s.locations["brine-cup-tavern"]
        return loc.secret("cask-door").discovered and loc.exit_open(loc.exits[1])

    assert outcomes(state, tag, found) == {True, False}


def test_a_check_against_a_closed_exits_dc_sets_its_flag(state):
    state.current_location = "tide-tunnel"
    tag = '<ability_check character="Aria" obstacle="wreckers-grotto"/>'
    assert "Sleight of Hand check" in call(ctx_for(state.model_copy(deep=True)), tag).observation
    assert outcomes(state, tag, lambda s: s.locations["tide-tunnel"].flags["grate_unlocked"] is True) == {True, False}
    forced = call(ctx_for(state.model_copy(deep=True)), '<ability_check character="Aria" skill="athletics" obstacle="wreckers-grotto"/>')
    assert "Athletics check" in forced.observation and "vs DC 15" in forced.observation  # another way, the same DC


def test_a_success_on_a_secret_with_loot_hands_it_out(state):
    state.current_location = "tide-tunnel"
    for seed in range(60):
        copy = state.model_copy(deep=True)
        result = call(ctx_for(copy, seed=seed), '<ability_check character="Aria" obstacle="smugglers-cache"/>')
        if ": success" in result.observation:
            assert "Loot:" in result.meta["public"] and copy.characters["u1"].item("the wreckers' tally") is not None
            assert "tarred box" not in result.meta["public"]  # what the secret says is the GM's to narrate
            return
    raise AssertionError("no seed succeeded")


def test_obstacle_refusals_change_nothing(state):
    ctx = ctx_for(state)
    failing(ctx, '<ability_check character="Aria" obstacle="keepers-cottage"/>', "already open")
    failing(ctx, '<ability_check character="Aria" obstacle="gannet-rock-lighthouse"/>', "sets no DC")
    failing(ctx, '<ability_check character="Aria" obstacle="nowhere"/>', "no secret or closed way")
    failing(ctx, '<ability_check character="Aria" obstacle="green-glimmer" dc="5"/>', "sets DC 12", "leave dc out")
    failing(ctx, '<ability_check character="Aria"/>', "give the skill")
    state.locations["saltmere-quay"].secret("green-glimmer").discovered = True
    failing(ctx, '<ability_check character="Aria" obstacle="green-glimmer"/>', "already discovered")


def test_the_gm_sees_the_dcs_of_secrets_and_closed_ways(state):
    state.current_location = "tide-tunnel"
    text = game_context(state, AgentType.NARRATIVE, "u1")
    assert 'smugglers-cache (investigation DC 14: ability_check with obstacle="smugglers-cache")' in text
    assert 'to wreckers-grotto until grate_unlocked (sleight of hand DC 15: ability_check with obstacle="wreckers-grotto")' in text
    npc_view = game_context(state, NPC, "u1", state.npcs["odile-farrow"])
    assert "DC" not in npc_view
