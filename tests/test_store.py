"""The store on SQLite and PostgreSQL: migrations, atomic commits, races between processes, unreadable data."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from engine import ConfigError, GameError, Store
from engine.errors import GameAlreadyRunning, StaleSession
from engine.basics import AgentType
from engine.state import Message
from engine.store import MIGRATIONS, TurnRecord
from engine.store.sql import rows
from engine.basics import utcnow
from tests.conftest import new_state, store_at


def query(sql: str, *params):
    return [tuple(r) for r in (yield rows(sql, *params))]


@pytest.mark.usefixtures("backend")
async def test_migrations_are_recorded_and_run_once(tmp_path):
    async with Store.open(store_at(tmp_path / "m.db")) as store:
        assert await store.migrate() == []  # already applied on open
        assert await store.driver.read(query("SELECT version, name FROM migrations ORDER BY version")) == \
            [(v, n) for v, n, _ in MIGRATIONS]


async def test_sqlite_runs_in_wal_mode(tmp_path):
    async with Store.open(tmp_path / "w.db"):
        pass
    assert sqlite3.connect(tmp_path / "w.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.usefixtures("backend")
async def test_a_database_from_a_newer_version_is_refused_clearly(tmp_path):
    db = store_at(tmp_path / "new.db")
    async with Store.open(db) as store:
        await store.execute("INSERT INTO migrations VALUES (999, 'future', 'x')")
    with pytest.raises(ConfigError, match="newer Lorekeeper"):
        async with Store.open(db):
            pass


async def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path):
    db = tmp_path / "junk.db"
    db.write_text("this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="cannot be used"):
        async with Store.open(db):
            pass


@pytest.mark.usefixtures("backend")
async def test_unreadable_saved_state_is_a_readable_error(tmp_path):
    db = store_at(tmp_path / "c.db")
    async with Store.open(db) as store:
        await store.create_session("c", None, new_state())
        await store.execute("UPDATE sessions SET state = ?", '{"broken": true}')
    async with Store.open(db) as store:
        with pytest.raises(GameError, match="cannot be read"):
            await store.load_session("c")


@pytest.mark.usefixtures("backend")
async def test_commit_turn_is_all_or_nothing(tmp_path):
    async with Store.open(store_at(tmp_path / "a.db")) as store:
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


@pytest.mark.usefixtures("backend")
async def test_a_nul_in_any_text_is_stored_on_both_databases(tmp_path):
    """PostgreSQL's text cannot hold NUL: its driver leaves it out of every value (a name, a tool's observation)
    rather than failing the write; SQLite keeps it."""
    async with Store.open(store_at(tmp_path / "n.db")) as store:
        session = await store.create_session("c\x00", None, new_state())
        msg = Message(channel_id="c\x00", author_id="u1", author_name="b\x00ob", agent=AgentType.PLAYER, text="hi\x00!")
        record = TurnRecord(seq=1, agent=AgentType.NARRATIVE, npc_id=None, status="ok", seed=1, started_at=utcnow())

        class Call:
            name, args, ok, observation, persistence, meta = "roll", {"x": "1\x00"}, True, "3\x00", "turn", {}

        await store.commit_turn(session.id, new_state(), [msg], record, [Call()])
        (stored,) = await store.messages(session.id)
        assert (stored.author_name.replace("\x00", ""), stored.text.replace("\x00", "")) == ("bob", "hi!")
        assert (await store.load_session("c\x00")).id == session.id
        assert (await store.turns(session.id))[0]["seq"] == 1


@pytest.mark.usefixtures("backend")
async def test_debug_flag_persists_per_channel(tmp_path):
    async with Store.open(store_at(tmp_path / "d.db")) as store:
        assert await store.debug("c") is None  # never set: the config decides
        await store.set_debug("c", True)
        await store.set_debug("other", False)
    async with Store.open(store_at(tmp_path / "d.db")) as store:
        assert await store.debug("c") is True and await store.debug("other") is False
        await store.set_debug("c", False)
        assert await store.debug("c") is False


async def test_a_write_cancelled_while_waiting_for_the_database_is_not_made_later(tmp_path):
    db = tmp_path / "busy.db"
    async with Store.open(db) as mine:
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        task = asyncio.create_task(mine.set_debug("c", True))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        other.execute("ROLLBACK")
        await mine.set_sources("c", True)  # the connection is usable: no transaction was left open
        assert not mine.driver.writer.in_transaction
        assert await mine.debug("c") is None  # the cancelled write was rolled back, not committed for nobody
        assert await mine.sources("c") is True


@pytest.mark.usefixtures("backend")
async def test_two_processes_opening_a_new_database_at_once_both_succeed(tmp_path):
    # Two openers of a new file both hold SQLite's shared lock when they ask to switch it to WAL; SQLite refuses
    # one of them at once (waiting would deadlock). That opener must let go and try again, not fail the start-up.
    for attempt in range(12):  # the race was lost in about one start of ten
        db = store_at(tmp_path / f"race{attempt}.db")

        async def open_once():
            async with Store.open(db) as store:
                return await store.debug("x")

        assert await asyncio.gather(open_once(), open_once(), open_once()) == [None, None, None]


@pytest.mark.usefixtures("backend")
async def test_two_processes_starting_a_game_in_one_channel_at_once_make_one(tmp_path):
    db = store_at(tmp_path / "start.db")
    async with Store.open(db) as mine, Store.open(db) as theirs:
        for attempt in range(5):
            channel = f"c{attempt}"
            results = await asyncio.gather(mine.create_session(channel, None, new_state()),
                                           theirs.create_session(channel, None, new_state()), return_exceptions=True)
            assert sorted(type(r).__name__ for r in results) == ["GameAlreadyRunning", "Session"]
        assert isinstance(next(r for r in results if not isinstance(r, GameAlreadyRunning)).id, int)


async def test_an_unreachable_postgresql_is_a_clear_error_without_the_password():
    with pytest.raises(ConfigError, match="Cannot connect to the PostgreSQL database") as raised:
        async with Store.open("postgresql://keeper:hunter2@127.0.0.1:1/lore"):
            pass
    assert "hunter2" not in str(raised.value) and "keeper@127.0.0.1:1/lore" in str(raised.value)


async def test_sqlite_checkpoints_in_the_background_not_in_a_commit(tmp_path, monkeypatch):
    import engine.store.sqlite as driver

    def main_file_pages(name):
        return (tmp_path / name).stat().st_size // 4096

    monkeypatch.setattr(driver, "CHECKPOINT_EVERY", 1000.0)
    async with Store.open(tmp_path / "never.db") as store:
        await store.create_session("c", None, new_state())
        assert main_file_pages("never.db") <= 1  # every table is still in the WAL: no commit checkpointed
    monkeypatch.setattr(driver, "CHECKPOINT_EVERY", 0.05)
    async with Store.open(tmp_path / "soon.db") as store:
        await store.create_session("c", None, new_state())
        await asyncio.sleep(0.5)
        assert main_file_pages("soon.db") > 5  # the background checkpoint copied the WAL into the file
        assert (await store.load_session("c")).state == new_state()


@pytest.mark.usefixtures("backend")
async def test_a_saved_state_is_loaded_from_the_cache_until_another_process_writes(tmp_path, monkeypatch):
    from engine.state import GameState

    db = store_at(tmp_path / "cache.db")
    async with Store.open(db) as mine, Store.open(db) as theirs:
        session = await mine.create_session("c", None, new_state())
        changed = (await mine.load_session("c")).state.clone()
        changed.characters["u1"].currency.gp = 3
        record = TurnRecord(seq=1, agent=AgentType.NARRATIVE, npc_id=None, status="ok", seed=1, started_at=utcnow())
        committed = await mine.commit_turn(session.id, changed, [], record, [], version=session.version)
        assert committed.version == session.version + 1

        parsed = []
        real = GameState.model_validate_json
        monkeypatch.setattr(GameState, "model_validate_json", lambda raw: parsed.append(1) or real(raw))
        loaded = await mine.load_session("c")
        assert loaded.state is changed and loaded.version == committed.version and parsed == []  # not parsed again

        # Another process writes the game: the version moves, and this store reads what was written.
        theirs_now = await theirs.load_session("c")
        assert parsed == [1] and theirs_now.state.characters["u1"].currency.gp == 3
        elsewhere = theirs_now.state.clone()
        elsewhere.characters["u1"].currency.gp = 77
        await theirs.save_state(session.id, elsewhere, version=theirs_now.version)
        again = await mine.load_session("c")
        assert again.state.characters["u1"].currency.gp == 77 and again.state is not changed

        # A write refused (someone wrote first) leaves nothing of its state in the cache.
        stale = again.state
        stale.characters["u1"].currency.gp = 5  # changed in place, as a careless caller might, then refused
        with pytest.raises(StaleSession):
            await mine.save_state(session.id, stale, version=again.version - 1)
        assert (await mine.load_session("c")).state.characters["u1"].currency.gp == 77

        await mine.end_session(session.id)  # an ended game is no longer served
        assert await mine.load_session("c") is None


async def test_the_state_cache_keeps_the_most_recently_used_channels(tmp_path, monkeypatch):
    from engine.store import cache

    monkeypatch.setattr(cache, "CACHED_STATES", 2)
    async with Store.open(tmp_path / "lru.db") as store:
        for channel in ("a", "b", "c"):
            await store.create_session(channel, None, new_state())
        await store.load_session("b")
        assert list(store.states.by_channel) == ["c", "b"] and set(store.states.channels.values()) == {"b", "c"}
        await store.load_session("a")
        assert list(store.states.by_channel) == ["b", "a"]


async def test_a_load_racing_a_refused_write_reads_the_game_again(tmp_path):
    # A read without the channel's lock (a /char sheet) while a commit in that channel is refused: the cached
    # state the refused write dropped is not served, and the load does not fail.
    async with Store.open(tmp_path / "race.db") as store:
        session = await store.create_session("c", None, new_state())
        cached = (await store.load_session("c")).state
        real_read, gate = store.driver.read, asyncio.Event()

        async def slow_read(op):
            await gate.wait()
            return await real_read(op)

        store.driver.read = slow_read
        reader = asyncio.create_task(store.load_session("c"))
        await asyncio.sleep(0)
        cached.characters["u1"].currency.gp = 4242  # what a careless failed write might have left in it
        with pytest.raises(StaleSession):
            await store.save_state(session.id, cached, version=99)
        gate.set()
        loaded = await reader
        assert loaded.version == session.version and loaded.state is not cached
        assert loaded.state.characters["u1"].currency.gp == 10


def threads(where: list[int], sql: str = "SELECT 1"):
    """An operation that notes the thread that ran it."""
    where.append(threading.get_ident())
    return [tuple(r) for r in (yield rows(sql))]


async def test_sqlite_runs_an_operation_on_the_loop_when_it_need_not_wait_and_in_its_thread_when_it_must(tmp_path):
    db = tmp_path / "inline.db"
    loop_thread, where = threading.get_ident(), []
    async with Store.open(db) as store:
        assert await store.driver.read(threads(where)) == [(1,)]
        assert await store.driver.write(threads(where)) == [(1,)]
        assert where == [loop_thread, loop_thread]

        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        first = asyncio.create_task(store.set_debug("c", True))
        second = asyncio.create_task(store.set_debug("c", False))  # follows the first into the thread
        reads = [await store.debug("c") for _ in range(3)]  # the loop is not blocked, and reads go on
        await asyncio.sleep(0.2)
        assert reads == [None, None, None] and not first.done() and not second.done()
        other.execute("ROLLBACK")
        await asyncio.gather(first, second)
        assert await store.debug("c") is False  # in the order they were asked
        other.close()

        where.clear()
        await store.driver.write(threads(where))  # the lock is free again: back on the loop
        assert where == [loop_thread]


async def test_a_sqlite_read_that_cannot_start_at_once_goes_on_in_the_thread_from_its_first_statement(tmp_path, monkeypatch):
    import engine.store.sqlite as driver

    loop_thread, ran, started = threading.get_ident(), [], []
    real = driver._statement

    def busy_once_on_the_loop(conn, statement):
        if threading.get_ident() == loop_thread and not ran:
            ran.append("busy")
            exc = sqlite3.OperationalError("database is locked")
            exc.sqlite_errorcode = sqlite3.SQLITE_BUSY
            raise exc
        ran.append(threading.get_ident())
        return real(conn, statement)

    def op():
        started.append(1)
        first = yield rows("SELECT 1")
        second = yield rows("SELECT 2")
        return [tuple(first[0]), tuple(second[0])]

    async with Store.open(tmp_path / "read.db") as store:
        monkeypatch.setattr(driver, "_statement", busy_once_on_the_loop)
        assert await store.driver.read(op()) == [(1,), (2,)]
        assert started == [1]  # the same operation went on, not begun again
        assert ran[0] == "busy" and ran[1:] and all(t != loop_thread for t in ran[1:])
        monkeypatch.setattr(driver, "_statement", real)
        assert await store.driver.read(op()) == [(1,), (2,)]  # and the next one is on the loop again
        assert not store.driver.reader.in_transaction


def test_a_commit_writes_again_only_the_fields_a_turn_did_not_share():
    from engine.store.cache import BIG, CachedState, dump

    base = new_state()
    text, parts = dump(base, None)  # nothing known: the whole dump
    assert text == base.model_dump_json() and parts is None

    first = base.working_copy()
    first.turn += 1
    text, parts = dump(first, CachedState(1, 1, base, base.model_dump_json(), None))
    assert text == first.model_dump_json() and set(parts) == set(BIG)

    second = first.working_copy()  # the next turn, from the state the first one committed
    second.turn += 1
    second.summary = "They reached the quay."
    text, again = dump(second, CachedState(1, 2, first, text, None, parts))
    assert text == second.model_dump_json()
    assert all(again[name] is parts[name] for name in BIG)  # taken as they were, not written again

    third = second.working_copy()  # a big field replaced whole, without making the copy deep
    third.npcs = {k: v.model_copy(update={"attitude": "hostile"}) for k, v in second.npcs.items()}
    text, later = dump(third, CachedState(1, 3, second, text, None, again))
    assert text == third.model_dump_json() and later["npcs"] is not again["npcs"] and later["items"] is again["items"]

    lookalike = second.clone()  # the same game, but other objects: nothing is taken on trust
    copy = lookalike.working_copy()
    text, fresh = dump(copy, CachedState(1, 2, second, second.model_dump_json(), None, again))
    assert text == copy.model_dump_json() and all(fresh[name] is not again[name] for name in BIG)

    deep = second.working_copy()
    deep.own()
    deep.characters["u1"].hp -= 3
    text, none = dump(deep, CachedState(1, 3, second, second.model_dump_json(), None, again))
    assert text == deep.model_dump_json() and none is None


async def test_a_write_cancelled_in_the_thread_keeps_the_connection_there_until_it_is_done(tmp_path):
    db = tmp_path / "cancel.db"
    async with Store.open(db) as store:
        writer = id(store.driver.writer)
        other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        first = asyncio.create_task(store.set_debug("a", True))
        await asyncio.sleep(0.05)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        # Its job still waits in the connection's thread: the connection is not the loop's yet.
        assert store.driver._away[writer] == 1
        second = asyncio.create_task(store.set_debug("b", True))  # so this one queues behind it, in the thread
        await asyncio.sleep(0.05)
        assert not second.done()
        other.execute("ROLLBACK")
        await second
        assert (await store.debug("a"), await store.debug("b")) == (None, True)  # the cancelled one rolled back
        assert store.driver._away[writer] == 0
        other.close()


async def test_reads_still_running_when_a_store_closes_end_with_a_clear_error(tmp_path):
    ended: list[str] = []
    for attempt in range(10):
        async with Store.open(tmp_path / f"close{attempt}.db") as store:
            await store.set_debug("c", True)

            async def keep_reading():
                while True:
                    try:
                        await store.debug("c")
                    except Exception as exc:  # the store closed under it
                        ended.append(type(exc).__name__)
                        return
                    await asyncio.sleep(0)

            reading = asyncio.create_task(keep_reading())
            await asyncio.sleep(0.001)
        await asyncio.wait_for(reading, 5)  # it ended, and the process is still here (no read beside the close)
    assert set(ended) <= {"ProgrammingError", "ValueError"} and len(ended) == 10


async def test_long_reports_and_long_reads_of_the_log_run_off_the_event_loop(tmp_path, monkeypatch):
    import engine.store.sqlite as driver

    loop_thread, ran = threading.get_ident(), []
    real = driver._statement

    def noting(conn, statement):
        ran.append(threading.get_ident())
        return real(conn, statement)

    async with Store.open(tmp_path / "long.db") as store:
        session = await store.create_session("c", None, new_state())
        monkeypatch.setattr(driver, "_statement", noting)
        await store.messages(session.id, limit=20)
        assert ran and set(ran) == {loop_thread}  # a turn's history: on the loop
        for long_read in (store.messages(session.id, limit=2000, oldest=True), store.telemetry(session.id),
                          store.turns(session.id), store.turns_for_analysis()):
            ran.clear()
            await long_read
            assert ran and loop_thread not in ran


@pytest.mark.usefixtures("backend")
async def test_a_game_saved_before_undo_kept_only_what_it_needs_is_trimmed_and_still_undoes(tmp_path):
    """Migration 11: of the copies a turn row kept (every turn's, ~20 KB each), the newest 20 undoable ones move
    beside the turns; the rest are dropped, and undo goes on working."""
    from tests.conftest import make_table, CHANNEL

    db = store_at(tmp_path / "old.db")
    table, ctx = await make_table(db)
    try:
        for n in range(24):
            await table.turn(f"I wait ({n}).", f"Time passes ({n}).")
        session = await table.engine.session(CHANNEL)
        kept = {t.id: t.state_before for t in await table.store.undoable_turns(session.id, 24)}
        # As the version before kept it: a copy in every turn's row, nothing beside them, migration 11 not applied.
        fill = [(state or '{"old": true}', turn_id) for turn_id, state in kept.items()]
        await table.store.driver.write(_as_before_11(fill))
    finally:
        await ctx.__aexit__(None, None, None)
    table, ctx = await make_table(db, start=False)
    try:
        assert await table.store.driver.read(query("SELECT COUNT(*) FROM turns WHERE state_before IS NOT NULL")) == [(0,)]
        now = {t.id: t.state_before for t in await table.store.undoable_turns(session.id, 24)}
        newest = sorted(kept, reverse=True)[:20]
        assert [now[i] for i in newest] == [kept[i] for i in newest] and all(now[i] is None for i in kept if i not in newest)
        assert (await table.engine.undo(CHANNEL, 3)).state.turn == 21
    finally:
        await ctx.__aexit__(None, None, None)


def _as_before_11(fill):
    from engine.store.sql import many, run

    yield many("UPDATE turns SET state_before = ? WHERE id = ?", fill)
    yield run("DELETE FROM undo_states")
    for statement in ("DROP TABLE undo_states", "DROP INDEX turns_by_session", "DROP INDEX messages_by_turn",
                      "DROP INDEX messages_waiting"):
        yield run(statement)
    yield run("DELETE FROM migrations WHERE version = 11")
