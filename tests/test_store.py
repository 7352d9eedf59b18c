"""The SQLite store: migrations, atomic commits, unreadable data."""

from __future__ import annotations

import sqlite3

import pytest

from engine import ConfigError, GameError, Store
from engine.state import AgentType, Message
from engine.store import MIGRATIONS, TurnRecord
from engine.state import utcnow
from tests.conftest import new_state


async def test_migrations_are_recorded_and_run_once(tmp_path):
    db = tmp_path / "m.db"
    async with Store.open(db) as store:
        assert await store.migrate() == []  # already applied on open
    rows = sqlite3.connect(db).execute("SELECT version, name FROM migrations").fetchall()
    assert rows == [(v, n) for v, n, _ in MIGRATIONS]
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_database_from_a_newer_version_is_refused_clearly(tmp_path):
    db = tmp_path / "new.db"
    async with Store.open(db):
        pass
    con = sqlite3.connect(db)
    con.execute("INSERT INTO migrations VALUES (999, 'future', 'x')")
    con.commit()
    with pytest.raises(ConfigError, match="newer Lorekeeper"):
        async with Store.open(db):
            pass


async def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path):
    db = tmp_path / "junk.db"
    db.write_text("this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="cannot be used"):
        async with Store.open(db):
            pass


async def test_unreadable_saved_state_is_a_readable_error(tmp_path):
    db = tmp_path / "c.db"
    async with Store.open(db) as store:
        await store.create_session("c", None, new_state())
    con = sqlite3.connect(db)
    con.execute("UPDATE sessions SET state = '{\"broken\": true}'")
    con.commit()
    async with Store.open(db) as store:
        with pytest.raises(GameError, match="cannot be read"):
            await store.load_session("c")


async def test_commit_turn_is_all_or_nothing(tmp_path):
    async with Store.open(tmp_path / "a.db") as store:
        session = await store.create_session("c", None, new_state())
        changed = new_state()
        changed.characters["u1"].currency.gp = 0
        msg = Message(channel_id="c", author_id="u1", author_name="bob", agent=AgentType.PLAYER, text="hi")
        record = TurnRecord(seq=1, agent=AgentType.NARRATIVE, npc_id=None, status="ok", seed=1, started_at=utcnow())

        class Boom:
            name, args, ok, observation = "roll", {"x": object()}, True, "x"  # args cannot be JSON-encoded
            persistence = "turn"

        with pytest.raises(TypeError):
            await store.commit_turn(session.id, changed, [msg], record, [Boom()])
        loaded = await store.load_session("c")
        assert loaded.state.characters["u1"].currency.gp == 10
        assert await store.messages(session.id, include_failed=True) == []
        assert await store.turns(session.id) == []


async def test_debug_flag_persists_per_channel(tmp_path):
    async with Store.open(tmp_path / "d.db") as store:
        assert await store.debug("c") is None  # never set: the config decides
        await store.set_debug("c", True)
        await store.set_debug("other", False)
    async with Store.open(tmp_path / "d.db") as store:
        assert await store.debug("c") is True and await store.debug("other") is False
        await store.set_debug("c", False)
        assert await store.debug("c") is False


async def test_a_write_cancelled_while_waiting_for_the_database_leaves_no_open_transaction(tmp_path):
    import asyncio

    db = tmp_path / "busy.db"
    async with Store.open(db) as mine, Store.open(db) as other:
        async with other.transaction():  # another process holds the write lock
            task = asyncio.create_task(mine.set_debug("c", True))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await mine.set_debug("c", True)  # the connection is usable: no transaction was left open
        assert not mine.db.in_transaction and await mine.debug("c")


async def test_two_processes_opening_a_new_database_at_once_both_succeed(tmp_path):
    import asyncio

    # Two openers of a new file both hold SQLite's shared lock when they ask to switch it to WAL; SQLite refuses
    # one of them at once (waiting would deadlock). That opener must let go and try again, not fail the start-up.
    for attempt in range(12):  # the race was lost in about one start of ten
        db = tmp_path / f"race{attempt}.db"

        async def open_once():
            async with Store.open(db) as store:
                return await store.debug("x")

        assert await asyncio.gather(open_once(), open_once(), open_once()) == [None, None, None]
