"""Two processes on one database, a crash mid-turn, and the background summary: nothing a player did is lost."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import aiosqlite
import pytest

from engine import Deps, Engine, ModelError, ScriptedModel, Store, load_config
from engine.errors import StaleSession
from engine.basics import AgentType
from tests.conftest import CHANNEL, CORPUS, make_table, store_at

ROOT = Path(__file__).resolve().parent.parent


class EarningModel(ScriptedModel):
    """Every turn pays the acting character 1 gp with a tool, then says so: the purse counts committed turns."""

    def __init__(self, latency: float = 0.0) -> None:
        super().__init__(latency=latency, chunk_size=5)

    async def stream(self, request):
        if request.agent is AgentType.SUMMARIZER:
            self.add("A summary.")
        elif "</observation>" in request.prefill:
            self.add(" Paid.")
        else:
            self.add('A coin. <modify_inventory currency="gp" quantity="1"/>')
        async for item in super().stream(request):
            yield item


async def engine_on(db: Path, model) -> tuple[Engine, object]:
    opened = Store.open(store_at(db))
    store = await opened.__aenter__()

    async def no_sleep(_: float) -> None:
        return None

    return Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, sleep=no_sleep)), opened


@pytest.mark.usefixtures("backend")
async def test_two_processes_playing_one_channel_lose_no_update(tmp_path):
    t, first = await make_table(tmp_path / "g.db")
    theirs, ours = EarningModel(latency=0.002), EarningModel(latency=0.002)
    other, second = await engine_on(tmp_path / "g.db", theirs)
    t.engine.deps.models = {a: ours for a in AgentType}
    try:
        async def play(engine: Engine, who: str, n: int) -> int:
            done = 0
            for i in range(n):
                try:
                    await engine.take_turn(CHANNEL, who, who, f"I work, {i}.")
                    done += 1
                except StaleSession:
                    pass  # a turn that lost every race fails cleanly; it must not count
            return done

        # Separate engines: separate channel locks, as two processes would have; only the database is shared.
        a, b = await asyncio.gather(play(t.engine, "u1", 12), play(other, "u2", 12))
        state = await t.state()
        assert a + b >= 12  # most turns get through, played again on the fresher state when they lose a race
        assert state.turn == a + b
        assert state.characters["u1"].currency.gp == 10 + a and state.characters["u2"].currency.gp == 10 + b
        session = await t.engine.session(CHANNEL)
        seqs = [r["seq"] for r in await t.store.turns(session.id) if r["status"] == "ok"]
        assert sorted(seqs) == list(range(1, a + b + 1))  # no turn number twice
        said = [m.text for m in await t.store.messages(session.id, limit=500) if m.agent is AgentType.PLAYER]
        assert len(said) == a + b
        asked = sum(1 for m in (ours, theirs) for r in m.requests if r.agent is not AgentType.SUMMARIZER)
        assert asked > 2 * (a + b)  # the races happened: some turns were played again
    finally:
        await t.engine.drain()
        await other.drain()
        await second.__aexit__(None, None, None)
        await first.__aexit__(None, None, None)


@pytest.mark.usefixtures("backend")
async def test_a_turn_that_keeps_losing_the_race_fails_cleanly_and_keeps_the_message(tmp_path):
    t, first = await make_table(tmp_path / "g.db")
    other, second = await engine_on(tmp_path / "g.db", ScriptedModel())

    class Interrupted(EarningModel):  # another process writes the game during every model call of this one
        async def stream(self, request):
            await other.set_party_membership(CHANNEL, "u2", member=False)
            await other.set_party_membership(CHANNEL, "u2", member=True)
            async for item in super().stream(request):
                yield item

    model = Interrupted()
    t.engine.deps.models = {a: model for a in AgentType}
    try:
        try:
            await t.engine.take_turn(CHANNEL, "u1", "bob", "I count my coins.")
            raise AssertionError("the turn should have failed")
        except StaleSession as exc:
            assert "at the same moment" in exc.message
        state = await t.state()
        assert state.turn == 0 and state.characters["u1"].currency.gp == 10  # nothing of it applied
        session = await t.engine.session(CHANNEL)
        [kept] = [m for m in await t.store.messages(session.id, include_failed=True) if m.agent is AgentType.PLAYER]
        assert kept.text == "I count my coins." and kept.status == "failed"
        assert len([r for r in model.requests if r.agent is not AgentType.SUMMARIZER]) >= 3  # played three times
    finally:
        await second.__aexit__(None, None, None)
        await first.__aexit__(None, None, None)


@pytest.mark.usefixtures("backend")
async def test_an_admin_write_made_while_another_process_wrote_is_redone_not_lost(tmp_path):
    t, first = await make_table(tmp_path / "g.db")
    other, second = await engine_on(tmp_path / "g.db", ScriptedModel())
    load = t.store.load_session
    raced = []

    async def load_then_race(channel_id):
        session = await load(channel_id)
        if not raced:  # between our read and our write, the other process adds a character
            raced.append(True)
            await other.create_character(CHANNEL, "u3", "Cato", "rogue")
        return session

    t.store.load_session = load_then_race
    try:
        await t.engine.create_character(CHANNEL, "u4", "Dara", "cleric")
        state = await t.state()
        assert {c.name for c in state.characters.values()} == {"Aria", "Bram", "Cato", "Dara"}
        assert state.party.player_ids == ["u1", "u2", "u3", "u4"]
    finally:
        t.store.load_session = load
        await second.__aexit__(None, None, None)
        await first.__aexit__(None, None, None)


@pytest.mark.usefixtures("backend")
async def test_a_summary_is_not_written_over_one_another_process_made_first(tmp_path):
    t, first = await make_table(tmp_path / "g.db")
    other, second = await engine_on(tmp_path / "g.db", ScriptedModel())
    cfg = t.engine.deps.config
    t.engine.deps.config = cfg.model_copy(update={"turn": cfg.turn.model_copy(update={"summarize_after": 10, "summary_keep": 2})})

    class Racing(ScriptedModel):
        async def stream(self, request):
            if request.agent is AgentType.SUMMARIZER:  # meanwhile another process folds the same messages
                session = await other.session(CHANNEL)
                session.state.summary, session.state.summary_upto = "Theirs.", 3
                await other.deps.store.save_state(session.id, session.state, version=session.version)
            async for item in super().stream(request):
                yield item

    model = Racing([f"Outcome {i}." for i in range(5)] + ["Ours."])
    t.engine.deps.models = {a: model for a in AgentType}
    try:
        for i in range(5):
            await t.engine.take_turn(CHANNEL, "u1", "bob", f"Action {i}.")
        await t.engine.drain()
        state = await t.state()
        assert state.summary == "Theirs." and state.summary_upto == 3 and state.turn == 5
    finally:
        await second.__aexit__(None, None, None)
        await first.__aexit__(None, None, None)


@pytest.mark.usefixtures("backend")
async def test_the_summarizer_folds_a_bounded_batch_and_backs_off_after_failures(tmp_path):
    t, ctx = await make_table(tmp_path / "g.db")
    cfg = t.engine.deps.config
    t.engine.deps.config = cfg.model_copy(update={"turn": cfg.turn.model_copy(
        update={"summarize_after": 10, "summary_keep": 2, "summary_batch": 4})})

    class Model(ScriptedModel):
        fail = True

        async def stream(self, request):
            if request.agent is AgentType.SUMMARIZER:
                self.add(ModelError("summarizer down", retryable=False) if self.fail else "Folded.")
            else:
                self.add("Fine.")
            async for item in super().stream(request):
                yield item

    model = Model()
    t.engine.deps.models = {a: model for a in AgentType}
    summaries = lambda: [r for r in model.requests if r.agent is AgentType.SUMMARIZER]  # noqa: E731
    try:
        for i in range(40):
            await t.engine.take_turn(CHANNEL, "u1", "bob", f"Action {i}.")
            await t.engine.drain()
        # Due from turn 6 on (34 turns); asked after 2, 4, 8, 16 … turns, not after every one.
        assert 3 <= len(summaries()) <= 6, len(summaries())
        model.fail = False
        t.engine.summary_backoff.clear()
        await t.engine.take_turn(CHANNEL, "u1", "bob", "Again.")
        await t.engine.drain()
        folded = summaries()[-1].messages[-1].content.split("New messages:\n", 1)[1]
        assert len(folded.splitlines()) == 4  # one call folds a bounded batch, the oldest first
        assert "Action 0." in folded
        state = await t.state()
        assert state.summary == "Folded." and state.summary_upto > 0
    finally:
        await t.engine.drain()
        await ctx.__aexit__(None, None, None)


CHILD = textwrap.dedent("""
    import asyncio, random, sys
    from engine import Deps, Engine, ScriptedModel, Store, load_config
    from engine.basics import AgentType
    from tests.conftest import CORPUS

    class Hanging(ScriptedModel):
        async def stream(self, request):
            print("THINKING", flush=True)
            await asyncio.Event().wait()
            yield ""

    async def main():
        async with Store.open(sys.argv[1]) as store:
            engine = Engine(Deps(store, {a: Hanging() for a in AgentType}, load_config(), CORPUS, rng=random.Random(1)))
            await engine.start_game("c1")
            await engine.create_character("c1", "u1", "Aria", "fighter")
            await engine.take_turn("c1", "u1", "alice", "I open the sea door.")

    asyncio.run(main())
""")


async def test_a_message_in_flight_survives_a_kill_and_is_reported_at_start_up(tmp_path):
    db = tmp_path / "g.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "THINKING" not in line and time.monotonic() < deadline:
            line = await asyncio.to_thread(child.stdout.readline)
            if not line and child.poll() is not None:
                raise AssertionError(child.stderr.read())
        # A live process's turn in flight is not someone else's to call interrupted.
        async with Store.open(db) as store:
            assert await store.recover_interrupted() == []
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(10)
    async with aiosqlite.connect(db) as raw:
        async with raw.execute("SELECT text, status FROM messages WHERE agent = 'player'") as cur:
            assert await cur.fetchall() == [("I open the sea door.", "pending")]  # stored before the model call
    async with Store.open(db) as store:
        [lost] = await store.recover_interrupted()
        assert lost.text == "I open the sea door." and lost.channel_id == "c1" and lost.author_name == "alice"
        assert await store.recover_interrupted() == []  # reported once
        session = await store.load_session("c1")
        assert session is not None and session.state.turn == 0
        [kept] = [m for m in await store.messages(session.id, include_failed=True) if m.agent is AgentType.PLAYER]
        assert kept.status == "interrupted"
        assert [m for m in await store.messages(session.id) if m.agent is AgentType.PLAYER] == []  # not history


QUEUED_CHILD = CHILD.replace('        await engine.take_turn("c1", "u1", "alice", "I open the sea door.")\n', """\
        await engine.create_character("c1", "u2", "Bram", "wizard")
        first = asyncio.create_task(engine.take_turn("c1", "u1", "alice", "I open the sea door."))
        await asyncio.sleep(0.2)
        waiting = []
        for who, name, text in (("u2", "bo", "I hold the lantern."), ("u1", "alice", "I step through."),
                                ("u2", "bo", "I follow.")):
            waiting.append(asyncio.create_task(engine.take_turn("c1", who, name, text)))
            await asyncio.sleep(0.1)
        print("QUEUED", flush=True)  # three wait behind the first, whose model never answers
        await asyncio.gather(first, *waiting)
""")
assert QUEUED_CHILD != CHILD


async def test_messages_waiting_behind_a_turn_survive_a_kill_and_are_each_reported_once(tmp_path):
    db = tmp_path / "g.db"
    child = subprocess.Popen([sys.executable, "-c", QUEUED_CHILD, str(db)], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "QUEUED" not in line and time.monotonic() < deadline:
            line = await asyncio.to_thread(child.stdout.readline)
            if not line and child.poll() is not None:
                raise AssertionError(child.stderr.read())
        async with Store.open(db) as store:
            assert await store.recover_interrupted() == []  # all four belong to a live process
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(10)
    async with Store.open(db) as store:
        lost = await store.recover_interrupted()
        assert [(m.author_name, m.text) for m in lost] == [
            ("alice", "I open the sea door."), ("bo", "I hold the lantern."), ("alice", "I step through."),
            ("bo", "I follow.")]  # every accepted message, in the order they came
        assert await store.recover_interrupted() == []  # reported once
        session = await store.load_session("c1")
        assert session is not None and session.state.turn == 0


@pytest.mark.usefixtures("backend")
async def test_an_earlier_process_with_our_pid_is_not_taken_for_us(tmp_path):
    """In a container the bot is pid 1 at every start: the last run's pending turn must still count as interrupted."""
    from engine.state import Message
    from engine.store import utcnow

    async with Store.open(store_at(tmp_path / "g.db")) as store:
        engine = Engine(Deps(store, {a: ScriptedModel() for a in AgentType}, load_config(), CORPUS))
        await engine.start_game("c1")
        session = await engine.session("c1")
        now = utcnow().isoformat()
        # the last run: same host, same pid, fresh heartbeat, other id
        await store.execute("INSERT INTO instances (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
                            "last-run", __import__("socket").gethostname(), os.getpid(), now, now)
        store.instance, mine = "last-run", store.instance
        await store.begin_turn(session.id, Message(channel_id="c1", author_id="u1", author_name="a",
                                                   agent=AgentType.PLAYER, text="Lost?"))
        store.instance = mine
        [lost] = await store.recover_interrupted()
        assert lost.text == "Lost?"
        # While a turn of this very process's store is pending, it is not interrupted.
        await store.begin_turn(session.id, Message(channel_id="c1", author_id="u1", author_name="a",
                                                   agent=AgentType.PLAYER, text="In flight."))
        async with Store.open(store_at(tmp_path / "g.db")) as beside:
            assert await beside.recover_interrupted() == []
