"""SQLite (aiosqlite, WAL): a writer connection and a reader beside it, each running a whole store operation as one
job in its thread, so an operation costs one hop from the event loop however many statements it has; and a third
that checkpoints the WAL into the database in the background, so no commit waits for that fsync (~20 ms)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, TypeVar

import aiosqlite
import structlog

from ..errors import ConfigError
from .sql import Conflict, Op, Statement

log = structlog.get_logger(__name__)
T = TypeVar("T")
CHECKPOINT_EVERY = 1.0  # seconds between background checkpoints, when something was written


class Abandoned(Exception):
    """The task that asked for a write was cancelled before it committed: it is rolled back instead."""


class SQLite:
    dialect = "sqlite"

    def __init__(self, writer: aiosqlite.Connection, reader: aiosqlite.Connection, where: str) -> None:
        self.writer, self.reader, self.where = writer, reader, where
        self.written = False  # since the last checkpoint

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
        abandoned = threading.Event()
        try:
            # aiosqlite's own way to run a function on its connection's thread (every execute goes through it).
            return await self.writer._execute(_write, self.writer._conn, op, abandoned)
        except asyncio.CancelledError:
            abandoned.set()  # still queued or running: it will roll back rather than commit for nobody
            raise
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise Conflict(str(exc)) from exc
            raise

    async def read(self, op: Op[T]) -> T:
        return await self.reader._execute(_read, self.reader._conn, op)


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


def _drive(conn: sqlite3.Connection, op: Op[T]) -> T:
    try:
        statement = next(op)
        while True:
            statement = op.send(_statement(conn, statement))
    except StopIteration as done:
        return done.value
    finally:
        op.close()


def _write(conn: sqlite3.Connection, op: Op[T], abandoned: threading.Event) -> T:
    if abandoned.is_set():
        raise Abandoned()
    conn.execute("BEGIN IMMEDIATE")  # the database's write lock, waiting up to busy_timeout for other processes
    try:
        result = _drive(conn, op)
        if abandoned.is_set():
            raise Abandoned()
        conn.execute("COMMIT")
        return result
    except BaseException:
        if conn.in_transaction:  # SQLite itself ends it after some errors (a full disk)
            conn.execute("ROLLBACK")
        raise


def _read(conn: sqlite3.Connection, op: Op[T]) -> T:
    conn.execute("BEGIN")  # one snapshot for every statement of the operation
    try:
        return _drive(conn, op)
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
        if memory:  # each :memory: connection is its own database: one does everything, checkpoints included
            driver = SQLite(writer, writer, str(path))
            checkpointing = None
        else:
            await writer.execute("PRAGMA wal_autocheckpoint=0")
            reader = await _open(path, reader=True)
            opened.append(reader)
            checkpointer = await _open(path)
            opened.append(checkpointer)
            driver = SQLite(writer, reader, str(path.resolve()))
            checkpointing = asyncio.create_task(driver.checkpoints(checkpointer))
        try:
            yield driver
        except aiosqlite.DatabaseError as exc:
            raise ConfigError(f"The database {path} cannot be used: {exc}.") from exc
        finally:
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
    connecting = aiosqlite.connect(path, isolation_level=None)
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
        await db.execute("PRAGMA busy_timeout=5000")  # first: switching to WAL waits for other openers
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
