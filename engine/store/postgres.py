"""PostgreSQL (asyncpg): for several bot processes or machines sharing one database. A pool of connections; each
store operation is one transaction on one of them."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, TypeVar
from urllib.parse import urlsplit, urlunsplit

from .. import fair
from ..errors import ConfigError
from .sql import Conflict, Op, Statement, numbered

T = TypeVar("T")
POOL_SIZE = 10  # connections per process: a turn holds one only while it reads or writes, never across a model call
CONNECT_TIMEOUT = 10.0


class Postgres:
    dialect = "postgresql"

    def __init__(self, pool: Any, where: str) -> None:
        self.pool, self.where = pool, where

    async def write(self, op: Op[T]) -> T:
        import asyncpg

        # No fair.step() after a write: cancelled there, a committed write would be reported as not made.
        async with self.pool.acquire() as conn:
            try:
                async with conn.transaction():
                    return await _drive(conn, op)
            except asyncpg.UniqueViolationError as exc:
                raise Conflict(str(exc)) from exc

    async def read(self, op: Op[T], *, slow: bool = False) -> T:
        async with self.pool.acquire() as conn:
            # No transaction: most reads are one statement, and BEGIN and COMMIT would triple their round trips.
            # The few of several statements (last_turn, telemetry) tolerate a write landing between them.
            found = await _drive(conn, op)
        await fair.step()  # the server answered: take the loop in turn (engine/fair.py)
        return found


def _storable(value: Any) -> Any:
    """PostgreSQL's text cannot hold NUL (SQLite's can): it is left out, as the engine leaves it out of players' and
    models' text (jsonio.well_formed), so a name or an adventure's text that holds one is stored, not refused."""
    return value.replace("\x00", "") if isinstance(value, str) and "\x00" in value else value


async def _statement(conn: Any, s: Statement) -> Any:
    sql = numbered(s.sql)
    if s.want == "many":
        await conn.executemany(sql, [tuple(map(_storable, row)) for row in s.params])
        return len(s.params)
    params = tuple(map(_storable, s.params))
    if s.want == "count":
        status = await conn.execute(sql, *params)  # "UPDATE 3", "INSERT 0 1", "CREATE TABLE"
        last = status.rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else 0
    if s.want == "rows":
        return await conn.fetch(sql, *params)
    if s.want == "row":
        return await conn.fetchrow(sql, *params)
    return await conn.fetchval(sql, *params)


async def _drive(conn: Any, op: Op[T]) -> T:
    try:
        statement = next(op)
        while True:
            statement = op.send(await _statement(conn, statement))
    except StopIteration as done:
        return done.value
    finally:
        op.close()


async def _nothing_to_reset(conn: Any) -> None:
    """What the pool runs on a connection it takes back, after asyncpg's own reset (which rolls back a
    transaction left open). The store leaves no other session state: no SET, LISTEN, cursor or session-level
    advisory lock (its locks are pg_advisory_xact_lock, let go at COMMIT). asyncpg's default sent a reset query
    (unlock all, CLOSE ALL, UNLISTEN, RESET ALL) on every release: one more round trip per operation, in front of
    every turn's load, begin and commit."""


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@asynccontextmanager
async def connect(url: str) -> AsyncIterator[Postgres]:
    try:
        import asyncpg
    except ImportError as exc:
        raise ConfigError("LOREKEEPER_DB names a PostgreSQL database, but asyncpg is not installed "
                          "(pip install asyncpg).") from exc
    where = redacted(url)
    try:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=POOL_SIZE, timeout=CONNECT_TIMEOUT,
                                         reset=_nothing_to_reset)
    except (OSError, asyncio.TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, ValueError) as exc:
        reason = str(exc) or type(exc).__name__
        raise ConfigError(f"Cannot connect to the PostgreSQL database {where}: {reason}.") from exc
    try:
        yield Postgres(pool, where)
    finally:
        await pool.close()
