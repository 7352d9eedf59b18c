"""SQLite (aiosqlite, WAL): a writer connection and a reader beside it, and a third that checkpoints the WAL into the
database in the background, so no commit waits for that fsync (~20 ms).

A store operation runs on the event loop itself, whole, when it can start at once: a read of the WAL's latest
snapshot, or a write when no other process holds the write lock (commits do not fsync: synchronous=NORMAL). It
then costs its statements and nothing else (~0.2 ms to begin a turn, ~0.6 ms to commit one). Through the
connection's thread, the same operations had cost ~2 ms of CPU a turn more in thread hand-offs (the thread takes
the GIL back after every statement) and waited ~100 ms a write in its queue at 200 busy channels
(bench/channels.py), in front of every reply. Only an operation that would have to wait (another process writing,
a read lock SQLite cannot give yet) goes to the connection's thread and waits there, up to busy_timeout, off the
loop; the connection's later operations follow it there until it is done, so they keep their order and never
share the connection between two threads at once."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, TypeVar

import aiosqlite
import structlog

from .. import fair
from ..errors import ConfigError
from .sql import Conflict, Op, Statement

log = structlog.get_logger(__name__)
T = TypeVar("T")
CHECKPOINT_EVERY = 1.0  # seconds between background checkpoints, when something was written
BUSY_TIMEOUT_MS = 5000  # how long an operation sent to the thread waits for another process's lock


class Abandoned(Exception):
    """The task that asked for a write was cancelled before it committed: it is rolled back instead."""


class Busy(Exception):
    """The operation's first statement could not start without waiting (another process holds a lock)."""

    def __init__(self, pending: Statement | None) -> None:
        super().__init__("database is busy")
        self.pending = pending  # the statement to run first when the operation goes on elsewhere (None: next(op))


class SQLite:
    dialect = "sqlite"

    def __init__(self, writer: aiosqlite.Connection, reader: aiosqlite.Connection, where: str) -> None:
        self.writer, self.reader, self.where = writer, reader, where
        self.written = False  # since the last checkpoint
        # Operations sent to each connection's thread and not yet back: while any is, the connection is the
        # thread's, and the next operations queue behind it there.
        self._away: dict[int, int] = {}

    async def checkpoints(self, checkpointer: aiosqlite.Connection) -> None:
        """Copy the WAL into the database now and then (PASSIVE: never waits for, nor blocks, readers and writers).
        The writer's own automatic checkpoints are off: they made every ~100th commit wait for the fsync."""
        while True:
            await asyncio.sleep(CHECKPOINT_EVERY)
            if not self.written:
                continue
            self.written = False
            try:
                await checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # busy now: the next one catches up
                log.warning("checkpoint_failed", error=str(exc))

    async def write(self, op: Op[T]) -> T:
        self.written = True
        try:
            if not self._away.get(id(self.writer)):
                try:
                    return _write_now(self.writer._conn, op)
                except Busy:
                    log.info("sqlite_write_waits", reason="another connection holds the write lock")
            return await self._in_thread(self.writer, _write_waiting, op)
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise Conflict(str(exc)) from exc
            raise

    async def read(self, op: Op[T], *, slow: bool = False) -> T:
        """`slow`: a report over a whole log (tens of ms to seconds), run in the thread so the loop goes on."""
        if not slow and not self._away.get(id(self.reader)):
            try:
                return _read_now(self.reader._conn, op)
            except Busy as busy:
                log.info("sqlite_read_waits", reason="the read lock is not available yet")
                return await self._in_thread(self.reader, _read_waiting, op, busy.pending, step=True)
        return await self._in_thread(self.reader, _read_waiting, op, None, step=True)

    async def _in_thread(self, connection: aiosqlite.Connection, job: Any, op: Op[T], *args: Any,
                         step: bool = False) -> T:
        key = id(connection)
        self._away[key] = self._away.get(key, 0) + 1
        abandoned = threading.Event()
        # aiosqlite's own way to run a function on its connection's thread (every execute goes through it). Not
        # cancelled with its caller: the connection stays the thread's until the job has really finished.
        running = asyncio.ensure_future(connection._execute(job, connection._conn, op, abandoned, *args))
        running.add_done_callback(functools.partial(self._back, key))
        try:
            result = await asyncio.shield(running)
        except asyncio.CancelledError:
            abandoned.set()  # still queued or running: a write rolls back rather than commit for nobody
            raise
        if step:  # a read's answer came from another thread: take the loop in turn (engine/fair.py). Not after a
            await fair.step()  # write: cancelled there, a committed write would be reported as not made
        return result

    def _back(self, key: int, running: asyncio.Future[Any]) -> None:
        self._away[key] -= 1
        if not running.cancelled():
            running.exception()  # retrieved: a cancelled caller's Abandoned is no news

    def closing(self) -> None:
        """From now on every operation goes through the threads, behind their close (never beside it)."""
        for connection in {id(self.writer): self.writer, id(self.reader): self.reader}.values():
            self._away[id(connection)] = self._away.get(id(connection), 0) + 1


def _statement(conn: sqlite3.Connection, s: Statement) -> Any:
    if s.want == "many":
        return conn.executemany(s.sql, s.params).rowcount
    cursor = conn.execute(s.sql, s.params)
    if s.want == "count":
        return cursor.rowcount
    found = cursor.fetchall()  # whole, so no statement is left open when the transaction ends
    if s.want == "rows":
        return found
    first = found[0] if found else None
    return first if s.want == "row" or first is None else first[0]


def _busy(exc: sqlite3.OperationalError) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _drive(conn: sqlite3.Connection, op: Op[T], pending: Statement | None = None, now: bool = False) -> T:
    """Run the operation's statements in order, starting with `pending` if it was already asked for. With `now`,
    a first statement that cannot start without waiting raises Busy and leaves the operation to go on elsewhere."""
    handed_on = False
    try:
        statement = next(op) if pending is None else pending
        first = True
        while True:
            try:
                result = _statement(conn, statement)
            except sqlite3.OperationalError as exc:
                if now and first and _busy(exc):
                    handed_on = True
                    raise Busy(statement) from exc
                raise
            first = False
            statement = op.send(result)
    except StopIteration as done:
        return done.value
    finally:
        if not handed_on:
            op.close()


def _write_now(conn: sqlite3.Connection, op: Op[T]) -> T:
    """The write, on the loop, if the write lock is free this instant (busy_timeout is 0 on this connection);
    else Busy before any statement of it ran."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if _busy(exc):
            raise Busy(None) from exc
        raise
    return _commit(conn, op, None)


def _commit(conn: sqlite3.Connection, op: Op[T], abandoned: threading.Event | None) -> T:
    try:
        result = _drive(conn, op)
        if abandoned is not None and abandoned.is_set():
            raise Abandoned()
        conn.execute("COMMIT")
        return result
    except BaseException:
        if conn.in_transaction:  # SQLite itself ends it after some errors (a full disk)
            conn.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def _patient(conn: sqlite3.Connection) -> Any:
    """In the thread, wait for other processes' locks up to BUSY_TIMEOUT_MS; back on the loop, never wait."""
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    try:
        yield
    finally:
        conn.execute("PRAGMA busy_timeout=0")


def _write_waiting(conn: sqlite3.Connection, op: Op[T], abandoned: threading.Event) -> T:
    if abandoned.is_set():
        raise Abandoned()
    with _patient(conn):
        conn.execute("BEGIN IMMEDIATE")  # the database's write lock, waiting up to busy_timeout for other processes
        return _commit(conn, op, abandoned)


def _read_now(conn: sqlite3.Connection, op: Op[T]) -> T:
    conn.execute("BEGIN")  # one snapshot for every statement of the operation (taken by its first statement)
    try:
        return _drive(conn, op, now=True)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _read_waiting(conn: sqlite3.Connection, op: Op[T], abandoned: threading.Event, pending: Statement | None) -> T:
    with _patient(conn):
        conn.execute("BEGIN")
        try:
            return _drive(conn, op, pending)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")


@asynccontextmanager
async def connect(target: Path | str) -> AsyncIterator[SQLite]:
    path = Path(target)
    if path.is_dir():
        raise ConfigError(f"The database path {path} is a directory; give a file name (e.g. {path / 'lorekeeper.db'}).")
    memory = str(path) == ":memory:"
    if not memory:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"Cannot open the database {path}: {exc}.") from exc
    writer = await _open(path)
    opened = [writer]
    try:
        await writer.execute("PRAGMA busy_timeout=0")  # operations that would wait go to the thread
        if memory:  # each :memory: connection is its own database: one does everything, checkpoints included
            driver = SQLite(writer, writer, str(path))
            checkpointing = None
        else:
            await writer.execute("PRAGMA wal_autocheckpoint=0")
            reader = await _open(path, reader=True)
            opened.append(reader)
            checkpointer = await _open(path)
            opened.append(checkpointer)
            await reader.execute("PRAGMA busy_timeout=0")  # operations that would wait go to the thread
            driver = SQLite(writer, reader, str(path.resolve()))
            checkpointing = asyncio.create_task(driver.checkpoints(checkpointer))
        try:
            yield driver
        except aiosqlite.DatabaseError as exc:
            raise ConfigError(f"The database {path} cannot be used: {exc}.") from exc
        finally:
            driver.closing()
            if checkpointing is not None:
                checkpointing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await checkpointing
                with contextlib.suppress(sqlite3.Error):  # leave the file whole: the WAL folded in
                    await opened[-1].execute("PRAGMA wal_checkpoint(PASSIVE)")
    finally:
        for connection in reversed(opened):
            await connection.close()


async def _open(path: Path, reader: bool = False) -> aiosqlite.Connection:
    # Not bound to its thread: the event loop's thread runs the operations that need not wait (see above).
    connecting = aiosqlite.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db = await connecting
    except (OSError, aiosqlite.Error) as exc:
        # aiosqlite's thread is still closing the failed connection; let it finish before the loop may close,
        # or it reports "Event loop is closed" from that thread after our message.
        thread = getattr(connecting, "_thread", None)
        if thread is not None and thread.is_alive():
            await asyncio.to_thread(thread.join, 5)
        raise ConfigError(f"Cannot open the database {path}: {exc}.") from exc
    try:
        db.row_factory = aiosqlite.Row
        await db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # first: switching to WAL waits for other openers
        if reader:
            await db.execute("PRAGMA query_only=1")
        else:
            await _use_wal(db)
            await db.execute("PRAGMA synchronous=NORMAL")
        await db.execute("PRAGMA foreign_keys=ON")
    except aiosqlite.DatabaseError as exc:
        await db.close()
        raise ConfigError(f"The database {path} cannot be used: {exc}.") from exc
    except BaseException:
        await db.close()
        raise
    return db


async def _use_wal(db: aiosqlite.Connection) -> None:
    """Switch the file to WAL, even while other processes open the same new database.

    The switch takes a shared lock, then an exclusive one. When two openers hold the shared lock at once, SQLite
    refuses one upgrade at once, without calling the busy handler (waiting would deadlock them): the documented
    remedy is to let go and try again, which is what happens here. Once the file is in WAL mode, this is a read.
    """
    delay = 0.005
    for _ in range(40):
        try:
            async with db.execute("PRAGMA journal_mode=WAL") as cur:
                await cur.fetchone()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)
    raise sqlite3.OperationalError("database is locked (another process kept it while switching to WAL)")
