"""Store operations written once for both databases: an operation is a generator that yields statements and
receives their results, so SQLite runs it whole, on the event loop or in its connection's thread when it would
have to wait (sqlite.py), and PostgreSQL runs it with an await per statement."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generator, Protocol, Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Statement:
    sql: str  # with ? placeholders; PostgreSQL gets $1, $2, …
    params: Sequence[Any]
    want: str  # rows | row | value | count | many


Op = Generator[Statement, Any, T]


class Driver(Protocol):
    """One database: runs an operation whole, as one transaction."""

    dialect: str  # sqlite | postgresql
    where: str  # the database, named without secrets

    async def read(self, op: Op[T], *, slow: bool = False) -> T: ...

    async def write(self, op: Op[T]) -> T: ...


def reads(method: Callable[..., Op[T]]) -> Callable[..., Awaitable[T]]:
    @functools.wraps(method)
    async def read(self: Any, *args: Any, **kwargs: Any) -> T:
        return await self.driver.read(method(self, *args, **kwargs))
    return read


def reads_slowly(method: Callable[..., Op[T]]) -> Callable[..., Awaitable[T]]:
    """A report over a whole log (tens of ms to seconds): SQLite runs it in its connection's thread, not on the
    event loop the turns share."""
    @functools.wraps(method)
    async def read(self: Any, *args: Any, **kwargs: Any) -> T:
        return await self.driver.read(method(self, *args, **kwargs), slow=True)
    return read


def writes(method: Callable[..., Op[T]]) -> Callable[..., Awaitable[T]]:
    @functools.wraps(method)
    async def write(self: Any, *args: Any, **kwargs: Any) -> T:
        return await self.driver.write(method(self, *args, **kwargs))
    return write


def rows(sql: str, *params: Any) -> Statement:
    """Every row (each indexable by column name and position)."""
    return Statement(sql, params, "rows")


def row(sql: str, *params: Any) -> Statement:
    """The first row, or None."""
    return Statement(sql, params, "row")


def value(sql: str, *params: Any) -> Statement:
    """The first column of the first row, or None (a count, an id from RETURNING)."""
    return Statement(sql, params, "value")


def run(sql: str, *params: Any) -> Statement:
    """A write; its result is the number of rows it changed."""
    return Statement(sql, params, "count")


def many(sql: str, params: Sequence[Sequence[Any]]) -> Statement:
    """One write for each parameter set."""
    return Statement(sql, params, "many")


class Conflict(Exception):
    """A uniqueness constraint refused a write (two processes raced to create the same thing)."""


_PLACEHOLDER = re.compile(r"\?")
_numbered: dict[str, str] = {}


def numbered(sql: str) -> str:
    """`?` placeholders as PostgreSQL's $1, $2, … (none of our statements has a ? inside a string literal)."""
    found = _numbered.get(sql)
    if found is None:
        count = iter(range(1, 1000))
        found = _numbered[sql] = _PLACEHOLDER.sub(lambda _: f"${next(count)}", sql)
    return found


def script(text: str) -> list[str]:
    """The statements of a migration script (not executescript: it would commit the open transaction first)."""
    text = re.sub(r"--[^\n]*", "", text)  # comments (none of our scripts has -- inside a string)
    return [s.strip() for s in text.split(";") if s.strip()]
