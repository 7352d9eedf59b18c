"""A player's turn rate and a server's daily token budget: counted in the database, polite when they refuse,
and kept across restarts (on SQLite and on PostgreSQL)."""

from __future__ import annotations

import contextlib
import random
from datetime import timedelta

import pytest

from engine import Deps, Engine, ScriptedModel, Store, load_config
from engine.limits import BudgetSpent, RateLimited
from engine.basics import AgentType, utcnow
from tests.conftest import CHANNEL, CORPUS, store_at

pytestmark = pytest.mark.usefixtures("backend")


def limited(**limits):
    config = load_config()
    return config.model_copy(update={"limits": config.limits.model_copy(update=limits)})


@contextlib.asynccontextmanager
async def table(db, model, config, *, start: bool = True, guild: str | None = "g1", channel: str = CHANNEL):
    async with Store.open(store_at(db)) as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, config, CORPUS, rng=random.Random(5)))
        if start:
            await engine.start_game(channel, guild)
            await engine.create_character(channel, "u1", "Aria", "fighter")
            await engine.create_character(channel, "u2", "Bram", "wizard")
        yield engine
        await engine.drain()


async def test_a_player_is_held_back_after_the_rate_and_the_count_survives_a_restart(tmp_path, monkeypatch):
    model, config = ScriptedModel(), limited(user_turns=2, user_window_s=60)
    db = tmp_path / "rate.db"
    async with table(db, model, config) as engine:
        for n in range(2):
            model.add(f"Step {n}.")
            await engine.take_turn(CHANNEL, "u1", "ann", f"I walk, step {n}.")
        asked = len(model.requests)
        with pytest.raises(RateLimited, match=r"that is 2 turns in 60 s, as fast as this server allows\. Go on in \d+ s"):
            await engine.check_action(CHANNEL, "u1", "I run.")
        with pytest.raises(RateLimited) as refused:
            await engine.take_turn(CHANNEL, "u1", "ann", "I run.")
        assert 0 < refused.value.retry_after <= 60
        session = await engine.session(CHANNEL)
        assert len(model.requests) == asked  # no model call
        assert [m.text for m in await engine.deps.store.messages(session.id, include_failed=True)
                if m.author_id == "u1"] == ["I walk, step 0.", "I walk, step 1."]  # nothing stored for the refusal
        model.add("Bram looks around.")
        await engine.take_turn(CHANNEL, "u2", "bo", "I look around.")  # another player is not held back
    async with table(db, model, config, start=False) as engine:  # a restart
        with pytest.raises(RateLimited):
            await engine.check_action(CHANNEL, "u1", "I run.")
        later = utcnow() + timedelta(seconds=61)
        monkeypatch.setattr("engine.limits.utcnow", lambda: later)
        model.add("You run.")
        assert (await engine.take_turn(CHANNEL, "u1", "ann", "I run.")).reply == "You run."


async def test_a_server_that_spent_its_tokens_rests_until_midnight_and_others_play_on(tmp_path):
    model, config = ScriptedModel(), limited(guild_daily_tokens=300)
    db = tmp_path / "budget.db"
    async with table(db, model, config) as engine:
        model.add("The quay is quiet.")
        first = await engine.take_turn(CHANNEL, "u1", "ann", "I listen.")
        spent = sum(c.input_tokens + c.output_tokens for c in first.model_calls)
        assert spent >= 300  # one turn's context is more than this budget
        usage = await engine.usage("g1")
        assert (usage.tokens, usage.turns, usage.budget) == (spent, 1, 300)
        assert usage.line().startswith(f"Today (UTC {usage.day}): {spent:,} tokens of 300 (")
        asked = len(model.requests)
        for attempt in (engine.check_action(CHANNEL, "u2", "I wait."), engine.take_turn(CHANNEL, "u2", "bo", "I wait."),
                        engine.check_retry(CHANNEL, "u1")):
            with pytest.raises(BudgetSpent, match=r"today's model budget \(300 tokens\).*until 00:00 UTC, in \d+ (h|min|s)"):
                await attempt
        assert len(model.requests) == asked
        await engine.start_game("other-channel", "g2")  # another server has its own budget
        await engine.create_character("other-channel", "u1", "Aria", "fighter")
        model.add("Elsewhere, the sun.")
        assert (await engine.take_turn("other-channel", "u1", "ann", "I wake.")).reply == "Elsewhere, the sun."
        session = await engine.session(CHANNEL)
        await engine.deps.store.add_usage(session.id, 7)  # a summary's tokens count, but are no turn
        assert (await engine.usage("g1")).tokens == spent + 7 and (await engine.usage("g1")).turns == 1
    async with table(db, model, config, start=False) as engine:  # a restart does not reset the day
        with pytest.raises(BudgetSpent):
            await engine.check_action(CHANNEL, "u2", "I wait.")


async def test_the_terminal_has_no_limits_and_no_reads_for_them(tmp_path):
    model, config = ScriptedModel(), limited(user_turns=1, guild_daily_tokens=1)
    async with table(tmp_path / "t.db", model, config, guild=None) as engine:
        calls = []
        original = engine.deps.store.limits
        engine.deps.store.limits = lambda *a, **k: calls.append(a) or original(*a, **k)
        for n in range(3):
            model.add(f"Fine {n}.")
            await engine.take_turn(CHANNEL, "u1", "ann", f"Again {n}.")
        assert calls == []


async def test_a_failed_turn_still_pays_for_its_model_calls(tmp_path):
    model, config = ScriptedModel(), limited(guild_daily_tokens=1_000_000)
    async with table(tmp_path / "f.db", model, config) as engine:
        model.add("You reach for <roll>1d20</roll>", ValueError("the model server fell over"))
        with pytest.raises(Exception):
            await engine.take_turn(CHANNEL, "u1", "ann", "I reach.")
        usage = await engine.usage("g1")
        assert usage.tokens > 0 and usage.turns == 1


async def test_turns_begun_at_once_in_several_channels_cannot_all_slip_under_the_rate(tmp_path):
    import asyncio

    model, config = ScriptedModel(latency=0.01), limited(user_turns=2, user_window_s=60)
    async with table(tmp_path / "race.db", model, config) as engine:
        for channel in ("c2", "c3"):
            await engine.start_game(channel, "g1")
            await engine.create_character(channel, "u1", "Aria", "fighter")
        model.add("One.", "Two.", "Three.")
        results = await asyncio.gather(*(engine.take_turn(c, "u1", "ann", f"I act in {c}.")
                                         for c in (CHANNEL, "c2", "c3")), return_exceptions=True)
        assert sorted(type(r).__name__ for r in results) == ["RateLimited", "TurnResult", "TurnResult"]
        stored = 0
        for channel in (CHANNEL, "c2", "c3"):
            session = await engine.session(channel)
            stored += sum(m.author_id == "u1" for m in await engine.deps.store.messages(session.id, include_failed=True))
        assert stored == 2  # the refused turn left nothing behind


async def test_commands_that_call_no_model_are_counted_per_user_in_a_sliding_window(tmp_path, monkeypatch):
    from engine.limits import Commands

    now = [0.0]
    commands = Commands(clock=lambda: now[0])
    settings = limited(user_commands=2, user_commands_window_s=60).limits
    commands.admit(settings, "u1")
    now[0] = 10.0
    commands.admit(settings, "u1")
    with pytest.raises(RateLimited, match=r"that is 2 commands in 60 s, as fast as this server allows\. Go on in 50 s"):
        commands.admit(settings, "u1")
    commands.admit(settings, "u2")  # another player has a window of their own
    now[0] = 60.5  # the first has left the window: one more, then full again until the second leaves
    commands.admit(settings, "u1")
    with pytest.raises(RateLimited) as refused:
        commands.admit(settings, "u1")
    assert refused.value.retry_after == 10
    monkeypatch.setattr(Commands, "SWEEP", 2)
    now[0] = 500.0
    commands.admit(settings, "u3")
    commands.admit(settings, "u3")  # the sweep: whoever has gone quiet is forgotten, so memory stays bounded
    assert set(commands._seen) == {"u3"}
    for _ in range(50):
        commands.admit(limited(user_commands=0).limits, "u1")  # 0: no limit
    async with table(tmp_path / "c.db", ScriptedModel(), limited(user_commands=1)) as engine:
        engine.check_command("u1", "g1")
        with pytest.raises(RateLimited):
            engine.check_command("u1", "g1")
        for _ in range(5):
            engine.check_command("u1", None)  # the terminal: one player at their own keyboard, no limit
