"""/undo and /retry: reverting turns restores the state byte for byte; the log keeps what was undone."""

from __future__ import annotations

import random

import pytest

from engine import BadInput, ScriptedModel, TurnFailed
from engine.dice import roll as roll_dice
from engine.basics import AgentType
from engine.errors import ModelError, NeedsConfirming, StaleSession
from engine.state import Message
from tests.conftest import CHANNEL

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on SQLite and on PostgreSQL


async def test_undo_restores_the_state_before_the_turn_byte_for_byte(table):
    before = (await table.engine.session(CHANNEL)).state.model_dump_json()
    await table.turn("I buy a rope.", '<modify_inventory item="Rope" quantity="1"/>Done.',
                     "The chandler hands you a coil.")
    changed = await table.state()
    assert changed.model_dump_json() != before and any(i.name == "Rope" for i in changed.characters["u1"].inventory)
    undone = await table.engine.undo(CHANNEL)
    assert (undone.turns, undone.messages) == (1, 2)  # the player's words and the reply
    session = await table.engine.session(CHANNEL)
    assert session.state.model_dump_json() == before == undone.state.model_dump_json()
    statuses = [m.status for m in await table.store.messages(session.id, include_failed=True, limit=100)][-2:]
    assert statuses == ["undone", "undone"]  # kept in the log, out of every agent's history
    assert "I buy a rope." not in [m.text for m in await table.store.messages(session.id, limit=100)]


async def test_undo_several_turns_goes_back_to_the_oldest_start(table):
    start = (await table.state()).model_dump_json()
    for n in range(3):
        await table.turn(f"I wait ({n}).", f"Time passes ({n}).")
    middle = None
    turns = await table.store.undoable_turns((await table.engine.session(CHANNEL)).id, 3)
    assert len(turns) == 3 and turns[0].id > turns[-1].id  # newest first
    middle = turns[1].state_before
    undone = await table.engine.undo(CHANNEL, 2)
    assert undone.turns == 2 and (await table.state()).model_dump_json() == middle
    await table.engine.undo(CHANNEL)
    assert (await table.state()).model_dump_json() == start
    with pytest.raises(BadInput, match="no turn to undo"):
        await table.engine.undo(CHANNEL)
    await table.turn("I wait again.", "More time passes.")
    with pytest.raises(BadInput, match="Only 1 turn"):
        await table.engine.undo(CHANNEL, 2)
    for bad in (0, 21):
        with pytest.raises(BadInput, match="1 to 20"):
            await table.engine.undo(CHANNEL, bad)


async def test_undo_loses_to_a_concurrent_write_and_changes_nothing(table, monkeypatch):
    await table.turn("I wait.", "Time passes.")
    session = await table.engine.session(CHANNEL)
    real = table.store.undo_turns

    async def someone_wrote_first(session_id, turns, *, version):
        await table.store.save_state(session_id, session.state)  # another process: the version moves on
        return await real(session_id, turns, version=version)

    monkeypatch.setattr(table.store, "undo_turns", someone_wrote_first)
    with pytest.raises(StaleSession):
        await table.engine.undo(CHANNEL)
    assert [m.status for m in await table.store.messages(session.id, limit=100)][-2:] == ["ok", "ok"]


async def test_retry_replays_the_last_turn_for_its_player_with_the_same_dice(table):
    first = await table.turn("I roll to climb.", "<roll>1d20+2</roll>", "You climb.")
    rolled = first.calls[0].observation
    table.model.add("<roll>1d20+2</roll>", "This time you slip.")
    again = await table.engine.retry(CHANNEL, "u1")
    assert again.reply == "This time you slip." and again.calls[0].observation == rolled  # no re-rolling by retry
    assert (await table.state()).turn == first.state.turn  # replaced, not added
    texts = [m.text for m in await table.store.messages((await table.engine.session(CHANNEL)).id, limit=100)]
    assert texts.count("I roll to climb.") == 1 and "You climb." not in texts


async def test_retry_is_refused_to_others_and_after_newer_events(table):
    await table.turn("I wait.", "Time passes.")
    with pytest.raises(BadInput, match="Only bob can retry"):
        await table.engine.retry(CHANNEL, "u2")
    table.model.add("Time passes again.")
    assert (await table.engine.retry(CHANNEL, "u2", admin=True)).reply == "Time passes again."  # an admin may
    await table.engine.record_roll(CHANNEL, "u2", "amy", roll_dice("1d20", random.Random(1)), "luck")  # newer
    with pytest.raises(BadInput, match="can no longer be retried"):
        await table.engine.retry(CHANNEL, "u1")


async def test_a_character_who_joined_or_a_party_change_after_a_turn_is_never_quietly_undone(table):
    """Making a character and joining or leaving the party write no log line: going back over them is refused."""
    await table.turn("I wait.", "Time passes.")
    await table.engine.create_character(CHANNEL, "u3", "Cora", "rogue")
    for attempt in (lambda: table.engine.retry(CHANNEL, "u1"), lambda: table.engine.undo(CHANNEL, 1)):
        with pytest.raises(BadInput, match="Cora joined the game after that"):
            await attempt()
    assert "u3" in (await table.state()).characters
    await table.turn("I wait more.", "More time passes.")
    await table.engine.set_party_membership(CHANNEL, "u2", False)
    with pytest.raises(BadInput, match="Bram joined or left the party after that, so it can no longer be retried"):
        await table.engine.retry(CHANNEL, "u1")
    with pytest.raises(BadInput, match="can no longer be undone"):
        await table.engine.undo(CHANNEL, 1)
    assert "u2" not in (await table.state()).party.player_ids
    await table.engine.set_party_membership(CHANNEL, "u2", True)  # back as it was: the turn may be taken back
    table.model.add("Time passes differently.")
    assert (await table.engine.retry(CHANNEL, "u1")).reply == "Time passes differently."
    assert (await table.engine.undo(CHANNEL, 1)).turns == 1


async def test_a_failed_turn_is_retried_without_reverting_anything(table):
    table.model.add(ModelError("down", retryable=False))
    before = (await table.state()).model_dump_json()
    with pytest.raises(Exception):
        await table.engine.take_turn(CHANNEL, "u1", "bob", "I open the door.")
    assert (await table.state()).model_dump_json() == before
    table.model.add("The door creaks open.")
    result = await table.engine.retry(CHANNEL, "u1")
    assert result.reply == "The door creaks open."
    with pytest.raises(BadInput, match="no turn to undo|Only"):
        await table.engine.undo(CHANNEL, 2)  # the failed turn is not a committed one


async def snapshot(table) -> tuple[str, list[tuple[str, str]]]:
    """The saved state and every log line with its status: what "exactly as it was" compares."""
    session = await table.engine.session(CHANNEL)
    lines = await table.store.messages(session.id, include_failed=True, limit=500)
    return session.state.model_dump_json(), [(m.text, m.status) for m in lines if m.status != "failed"]


async def test_a_retry_that_fails_leaves_the_game_exactly_as_it_was(table):
    """The old turn is taken back only when the new one commits: a model that fails three times changes nothing."""
    await table.turn("I take the rope.", '<modify_inventory item="Rope" quantity="1"/>', "The chandler hands it over.")
    before = await snapshot(table)
    assert any(i.name == "Rope" for i in (await table.state()).characters["u1"].inventory)
    table.model.add(*[ModelError("HTTP 500", retryable=True)] * 3)
    with pytest.raises(TurnFailed) as failed:
        await table.engine.retry(CHANNEL, "u1")
    assert "your last turn stands as it was" in failed.value.message
    assert await snapshot(table) == before  # the rope, the reply, the turn: all still there, nothing marked undone
    # The failed attempt does not hide the turn: it can be retried again, and undone.
    table.model.add("The chandler shrugs: no rope today.")
    again = await table.engine.retry(CHANNEL, "u1")
    assert again.reply == "The chandler shrugs: no rope today."
    state = await table.state()
    assert not any(i.name == "Rope" for i in state.characters["u1"].inventory) and state.turn == 1
    undone = await table.engine.undo(CHANNEL)
    assert undone.turns == 1 and undone.state.turn == 0  # back before the original: the retry committed over it


async def test_a_retry_that_loses_a_race_is_refused_and_changes_nothing(table, monkeypatch):
    """Another process writes the game and logs a line while the retry waits for the model: the retry's commit
    fails, its replay finds the turn is no longer the last thing that happened, and the game keeps both."""
    await table.turn("I wait.", "Time passes.")
    session = await table.engine.session(CHANNEL)
    other = Message(channel_id=CHANNEL, author_id="u2", author_name="amy", agent=AgentType.PLAYER, text="Bram hums.")
    real = table.store.commit_turn

    async def someone_wrote_first(*args, **kwargs):
        monkeypatch.setattr(table.store, "commit_turn", real)
        await table.store.save_state(session.id, session.state, [other])  # the version moves on
        return await real(*args, **kwargs)

    monkeypatch.setattr(table.store, "commit_turn", someone_wrote_first)
    table.model.add("Time passes again.", "Time passes again.")
    with pytest.raises(BadInput, match="can no longer be retried"):
        await table.engine.retry(CHANNEL, "u1")
    texts = [(m.text, m.status) for m in await table.store.messages(session.id, limit=100)]
    assert texts[-3:] == [("I wait.", "ok"), ("Time passes.", "ok"), ("Bram hums.", "ok")]
    assert (await table.state()).turn == 1


async def test_a_retry_at_the_turn_limit_is_refused_before_anything_changes(tmp_path):
    from engine.limits import RateLimited
    from tests.test_limits import limited, table as limited_table

    model, config = ScriptedModel(), limited(user_turns=1, user_window_s=60)
    async with limited_table(tmp_path / "l.db", model, config) as engine:
        model.add('<modify_inventory item="Rope" quantity="1"/>', "Here is your rope.")
        await engine.take_turn(CHANNEL, "u1", "ann", "I buy rope.")
        session = await engine.session(CHANNEL)
        before = session.state.model_dump_json()
        for attempt in (engine.check_retry(CHANNEL, "u1"), engine.retry(CHANNEL, "u1")):
            with pytest.raises(RateLimited):
                await attempt
        after = await engine.session(CHANNEL)
        assert after.state.model_dump_json() == before
        assert [m.status for m in await engine.deps.store.messages(session.id, include_failed=True)] == ["ok", "ok", "ok"]


async def test_undo_asks_before_taking_back_what_players_did_themselves(table):
    await table.turn("I wait.", "Time passes.")
    await table.engine.rest(CHANNEL, "u1", "bob", "short")
    await table.engine.record_roll(CHANNEL, "u2", "amy", roll_dice("1d20", random.Random(1)), "luck")
    rested = (await table.state()).model_dump_json()
    with pytest.raises(NeedsConfirming) as asked:
        await table.engine.undo(CHANNEL)
    assert asked.value.seen == 2
    assert "Aria takes a short rest." in asked.value.message and "Bram rolls 1d20" in asked.value.message
    assert (await table.state()).model_dump_json() == rested  # nothing undone while it asks
    await table.engine.rest(CHANNEL, "u2", "amy", "short")  # more happens before the answer
    with pytest.raises(NeedsConfirming, match="More was done since you were asked") as again:
        await table.engine.undo(CHANNEL, seen=asked.value.seen)
    assert again.value.seen == 3
    undone = await table.engine.undo(CHANNEL, seen=again.value.seen)
    assert undone.turns == 1 and undone.state.turn == 0


async def test_undo_keeps_only_what_the_last_twenty_turns_need(table):
    for n in range(25):
        await table.turn(f"I wait ({n}).", f"Time passes ({n}).")
    session = await table.engine.session(CHANNEL)
    kept = await table.store.undoable_turns(session.id, 25)
    assert [t.state_before is not None for t in kept] == [True] * 20 + [False] * 5
    await table.engine.undo(CHANNEL, 5)
    with pytest.raises(BadInput, match="Undo keeps what the last 20 turns changed, so only 15 turns"):
        await table.engine.undo(CHANNEL, 20)
    assert (await table.engine.undo(CHANNEL, 15)).state.turn == 5
