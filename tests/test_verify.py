"""Post-flight verification: each rule on its own, then the stage in flag and correct modes."""

from __future__ import annotations

import time

import pytest

from engine.basics import AgentType
from engine.state import Participant
from engine.tools import ToolCall
from engine.verify import RULES, verify
from tests.conftest import CHANNEL, new_state

N = AgentType.NARRATIVE


def misses(reply: str, calls: list[ToolCall] = (), before=None, after=None) -> list[str]:
    before = before or new_state()
    after = after or before.model_copy(deep=True)
    return [m.rule for m in verify(before, after, reply, list(calls), N)]


def ok(name: str, observation: str = "done", **args) -> ToolCall:
    return ToolCall(name, args, True, observation)


def test_coins_or_things_changing_hands_need_modify_inventory():
    assert misses("Odile sells you the rope for 5 sp.") == ["exchange_without_inventory"]
    assert misses("You drink the healing potion; warmth spreads.") == ["exchange_without_inventory"]
    assert misses("Odile sells you the rope for 5 sp.", [ok("modify_inventory")]) == []
    assert misses("The rope hangs from a hook by the door.") == []
    for promise in ('"Find who took it and I\'ll pay you forty gold," she says.', "She will sell you the rope for 5 sp.",
                    "If you pay the gold, it is yours.", "He offers to sell you a map.", "You could drink the potion now."):
        assert misses(promise) == [], promise  # promised, offered or supposed: nothing changed hands yet


def test_numbered_wounds_and_healing_need_update_hp_or_attack():
    assert misses("The rat bites: you take 4 damage.") == ["hp_without_update"]
    assert misses("You regain 5 hit points.") == ["hp_without_update"]
    assert misses("You take 4 damage.", [ok("update_hp", "Aria takes 4 damage: HP 8/12.")]) == []
    assert misses("The wound stings.") == []


def test_taking_on_an_offered_quest_needs_start_quest():
    assert misses("You accept the job and shake Ysolde's hand.") == ["quest_without_start"]
    assert misses("You accept the job.", [ok("start_quest")]) == []
    state = new_state()
    for q in state.quests.values():
        q.status = "active"
    assert misses("You accept the job.", before=state) == []  # nothing was on offer


def test_arriving_somewhere_needs_change_location():
    assert misses("You step into The Brine Cup, warm and smoky.") == ["travel_without_change_location"]
    assert misses("You step into The Brine Cup.", [ok("change_location")]) == []
    assert misses("From the quay you can see The Brine Cup's lamps.") == []


def fighting(hp: int):
    state = new_state()
    state.combat.active = True
    state.combat.order = [Participant(id="rat", name="Rat", faction="enemy", initiative=10, ac=12, hp=hp, max_hp=8)]
    return state


def test_a_creature_narrated_dead_must_be_at_zero_hit_points():
    assert misses("The Rat dies with a squeal.", before=fighting(5)) == ["slain_but_standing"]
    assert misses("The Rat dies with a squeal.", before=fighting(5), after=fighting(0)) == []


def test_a_missed_attack_is_not_narrated_as_a_hit():
    miss = ok("attack", "Aria attacks Rat: 1d20+4 → 9 vs AC 12, miss. No damage.", target="Rat")
    assert misses("Your blade hits the Rat hard.", [miss], before=fighting(8)) == ["hit_after_miss"]
    assert misses("Your blade misses the Rat by a whisker.", [miss], before=fighting(8)) == []
    hit = ok("attack", "Aria attacks Rat: 1d20+4 → 15 vs AC 12, hit; damage 1d8 → 3. Rat takes 3 damage: HP 5/8.",
             target="Rat")
    assert misses("Your second blow hits the Rat.", [miss, hit], before=fighting(8)) == []


def test_damage_in_the_story_must_be_the_damage_rolled():
    hit = ok("attack", "Aria attacks Rat: 1d20+4 → 15 vs AC 12, hit; damage 1d8+2 → 7. Rat takes 7 damage: HP 1/8.",
             target="Rat")
    assert misses("The Rat takes 9 damage.", [hit], before=fighting(8)) == ["damage_not_rolled"]
    assert misses("The Rat takes 7 damage and reels.", [hit], before=fighting(8)) == []


def test_a_failed_call_is_not_told_as_done():
    failed = ToolCall("modify_inventory", {"currency": "gp"}, False, "Error: Aria cannot pay 50 gp. Nothing was done.")
    assert "failed_call_pretended" in misses("You pay the gold and pocket the map.", [failed])
    assert misses("You pay the gold and pocket the map.", [failed, ok("modify_inventory")]) == []


def test_every_rule_is_linear_in_the_reply():
    reply = ("you hand " + "coins " * 2000)[:20_000] + ("the rat " * 1500)
    started = time.perf_counter()
    verify(fighting(5), fighting(5), reply, [], N)
    assert len(RULES) == 8 and time.perf_counter() - started < 0.5  # generous: quadratic would take many seconds


# -- the stage ------------------------------------------------------------------------------------------------------

def set_mode(table, mode: str, **turn) -> None:
    cfg = table.engine.deps.config
    table.engine.deps.config = cfg.model_copy(update={"turn": cfg.turn.model_copy(update={"verify": mode, **turn})})


async def test_flag_mode_records_the_miss_and_changes_nothing(table):
    result = await table.turn("I buy the rope.", "Odile sells you the rope for 5 sp.")
    assert result.reply == "Odile sells you the rope for 5 sp." and result.checks[0]["rule"] == "exchange_without_inventory"
    session = await table.engine.session(CHANNEL)
    [turn] = [t for t in await table.store.turns(session.id) if t["status"] == "ok"]
    assert turn["checks"] == [result.checks[0]] and turn["checks"][0]["outcome"] == "flagged"


async def test_correct_mode_asks_once_and_the_fix_commits_with_the_turn(table):
    set_mode(table, "correct")
    result = await table.turn("I buy the rope.", "Odile sells you the rope for 5 sp.",
                              '<modify_inventory item="rope" quantity="1"/>', ' <modify_inventory currency="sp" quantity="-5"/>',
                              " Odile sells you the rope for 5 sp.")
    correction = table.model.requests[1].messages[-1].content
    assert correction.startswith("[Engine check]") and "modify_inventory" in correction
    assert result.checks[0]["outcome"] == "corrected" and result.reply == "Odile sells you the rope for 5 sp."
    aria = (await table.state()).characters["u1"]
    assert aria.item("rope") is not None and aria.currency.gp == 9 and aria.currency.sp == 5


async def test_a_correction_that_fails_keeps_the_first_reply_and_state(table):
    from engine import ModelError

    set_mode(table, "correct")
    result = await table.turn("I buy the rope.", "Odile sells you the rope for 5 sp.", ModelError("down", retryable=False))
    assert result.reply == "Odile sells you the rope for 5 sp." and result.checks[0]["outcome"] == "uncorrected"
    assert (await table.state()).characters["u1"].currency.gp == 10 and (await table.state()).turn == 1


async def test_the_round_cap_bounds_the_correction_and_off_checks_nothing(table):
    set_mode(table, "correct", max_rounds=1)
    capped = await table.turn("I buy the rope.", "Odile sells you the rope for 5 sp.")
    assert capped.checks[0]["outcome"] == "uncorrected" and len(capped.model_calls) == 1
    set_mode(table, "off")
    assert (await table.turn("I buy the rope.", "Odile sells you the rope for 5 sp.")).checks == []


@pytest.mark.parametrize("reply", ["You look around the quay.", "The gulls wheel overhead; Ysolde nods."])
def test_plain_narration_is_not_flagged(reply):
    assert misses(reply) == []
