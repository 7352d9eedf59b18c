"""Sessions, message logs and turn logs, in SQLite (one file, the default) or PostgreSQL (several processes or
machines): the same operations, migrations and guarantees on both.

Several processes may share one database: each session has a version, every write of its state is a
compare-and-set on it, and a player's message is stored (pending) the moment its turn starts, marked with the
process answering it, so a crash loses nothing and another process can tell an orphan from a turn in flight.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import structlog
from pydantic import ValidationError

from .. import jsonio
from ..basics import utcnow
from ..errors import ConfigError, GameAlreadyRunning, GameError, StaleSession
from ..limits import Rate, today
from ..state import GameState, Message
from .admin import AdminRecords
from .cache import CachedState, StateCache, dump
from .instances import Instances
from .recall import MemoryRecords
from .records import OURS, Committed, LastTurn, Session, ToolCallRow, TurnRecord, message
from .reports import Reports
from .schema import MIGRATIONS, MIGRATIONS_TABLE
from .sql import Conflict, Driver, Op, many, reads, row, rows, run, script, value, writes
from .undo import UndoRecords

log = structlog.get_logger(__name__)
LONG_READ = 200  # messages: a read of more runs off the event loop (SQLite)


def _fit(m: Message) -> None:
    """A log line's words and speaker as a database can hold them (jsonio.well_formed): the engine cleans a player's
    and a model's words as they come in; this catches a name (a login name of bytes that are not UTF-8, say)."""
    m.text, m.author_name = jsonio.well_formed(m.text), jsonio.well_formed(m.author_name)


def is_postgres(target: Path | str) -> bool:
    return isinstance(target, str) and target.split("://", 1)[0] in ("postgresql", "postgres")


class Store(Instances, UndoRecords, MemoryRecords, AdminRecords, Reports):
    """The game's records over one database (`Store.open` picks SQLite for a path, PostgreSQL for a URL); this
    process among others in instances.py, undo in undo.py, the memory's reads in recall.py, settings and limits in
    admin.py, reports in reports.py."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self._key = hashlib.sha1(driver.where.encode()).hexdigest()[:10] if driver.where != ":memory:" \
            else uuid.uuid4().hex[:10]
        self.instance = uuid.uuid4().hex  # this process's (this store's) id, on the turns it answers
        OURS.add(self.instance)
        self._heartbeat: asyncio.Task[None] | None = None
        self.states = StateCache()

    @classmethod
    @asynccontextmanager
    async def open(cls, target: Path | str) -> AsyncIterator["Store"]:
        """A migrated store over a SQLite file (a path) or a PostgreSQL database (postgresql://…)."""
        if is_postgres(target):
            from .postgres import connect
        else:
            from .sqlite import connect  # type: ignore[assignment]
        async with connect(target) as driver:
            store = cls(driver)
            await store.migrate()
            await store._register()
            try:
                yield store
            finally:
                await store._unregister()

    @writes
    def migrate(self) -> Op[list[int]]:
        """Apply the migrations this database lacks, all in one transaction (a second process opening the database
        at the same moment waits, then finds them applied)."""
        postgres = self.driver.dialect == "postgresql"
        if postgres:
            from .schema import for_postgres
            yield value("SELECT pg_advisory_xact_lock(4707192)")  # the writer lock SQLite's BEGIN IMMEDIATE takes
        yield run(for_postgres(MIGRATIONS_TABLE) if postgres else MIGRATIONS_TABLE)
        done = {r[0] for r in (yield rows("SELECT version FROM migrations"))}
        newest = max(v for v, _, _ in MIGRATIONS)
        if done and max(done) > newest:
            raise ConfigError(f"The database {self.driver.where} was written by a newer Lorekeeper "
                              f"(schema {max(done)}); upgrade to use it.")
        applied = []
        for version, name, text in MIGRATIONS:
            if version in done:
                continue
            for statement in script(for_postgres(text) if postgres else text):
                yield run(statement)
            yield run("INSERT INTO migrations VALUES (?, ?, ?)", version, name, utcnow().isoformat())
            applied.append(version)
            log.info("migration_applied", version=version, name=name)
        return applied

    @writes
    def execute(self, sql: str, *params: Any) -> Op[int]:
        """One statement (? placeholders) in a transaction of its own, for maintenance and tests; rows changed."""
        return (yield run(sql, *params))

    # -- sessions -------------------------------------------------------------------------------------------------

    def game_key(self, session_id: int) -> str:
        """A name for one game that no game of another database shares (their lore folder may be the same)."""
        return f"{self._key}-s{session_id}"

    async def load_session(self, channel_id: str) -> Session | None:
        """The channel's active game. Its state is shared with the store's cache of parsed states (parsing a started
        game costs ~0.4-1.3 ms, a few times a turn): read it as it is, and clone it to change it (Engine._write, a
        turn's working copy). Saving through this store puts the saved object in the cache."""
        cached = self.states.get(channel_id)
        found = await self.driver.read(self._session_row(channel_id, cached))
        if found is None:
            self.states.forget(channel_id)
            return None
        if found["state"] is None:  # the cached state is this version's: nobody wrote since
            assert cached is not None
            if not self.states.touch(cached, channel_id):
                # Dropped while the row was read (a write that failed may have changed that object, or the
                # least recently used went): read the game again rather than serve it.
                return await self.load_session(channel_id)
            state = cached.state
        else:
            try:
                state = GameState.model_validate_json(found["state"])
            except ValidationError as exc:
                log.error("session_unreadable", channel_id=channel_id, error=str(exc))
                raise GameError("This channel's saved game cannot be read. A server admin can start over with /gm-admin reset.") from exc
            self.states.remember(channel_id, CachedState(found["id"], found["version"], state, found["state"],
                                                         found["guild_id"]))
        debug = found["debug_set"]
        return Session(found["id"], channel_id, state, found["version"], found["guild_id"],
                       None if debug is None else bool(debug))

    def _session_row(self, channel_id: str, cached: CachedState | None) -> Op[Any]:
        # The channel's debug switch comes along: every turn asks for it, and this saves it a read of its own. The
        # state comes only if it is not the cached one, judged in the same statement that reads the version.
        known = (cached.session_id, cached.version) if cached else (0, -1)
        return (yield row("SELECT sessions.id, CASE WHEN sessions.id = ? AND version = ? THEN NULL ELSE state END "
                          "AS state, version, guild_id, debug_set FROM sessions "
                          "LEFT JOIN channel_settings ON channel_settings.channel_id = sessions.channel_id "
                          "WHERE sessions.channel_id = ? AND active = 1", *known, channel_id))

    async def create_session(self, channel_id: str, guild_id: str | None, state: GameState) -> Session:
        text = state.model_dump_json()
        try:
            session_id = await self.driver.write(self._create_session(channel_id, guild_id, text))
        except Conflict:  # another process started one in this channel at the same moment
            raise GameAlreadyRunning() from None
        session = Session(session_id, channel_id, state, guild_id=guild_id)
        self.states.remember(channel_id, CachedState(session.id, session.version, state, text, guild_id))
        return session

    def _create_session(self, channel_id: str, guild_id: str | None, state: str) -> Op[int]:
        if (yield row("SELECT 1 FROM sessions WHERE channel_id = ? AND active = 1", channel_id)):
            raise GameAlreadyRunning()
        now = utcnow().isoformat()
        return (yield value("INSERT INTO sessions (channel_id, guild_id, state, active, created_at, updated_at) "
                            "VALUES (?, ?, ?, 1, ?, ?) RETURNING id",
                            channel_id, guild_id, state, now, now))

    @writes
    def end_session(self, session_id: int) -> Op[None]:
        # The version moves too: a turn still in flight elsewhere must not commit into an ended game.
        yield run("UPDATE sessions SET active = 0, version = version + 1, updated_at = ? WHERE id = ?",
                  utcnow().isoformat(), session_id)

    async def save_state(self, session_id: int, state: GameState, messages: list[Message] = (), *,
                         version: int | None = None) -> int:
        """Store a state change made outside a model turn (a new character, a rest, a summary), with its log lines.

        With `version`, only if nobody wrote the session since it was read (else StaleSession); returns the new version.
        """
        text = state.model_dump_json()  # here, not in the database's thread, which every channel's writes wait on
        try:
            new = await self.driver.write(self._save_state(session_id, text, messages, version))
        except BaseException:
            self.states.unsaved(session_id)
            raise
        self.states.saved(session_id, new, state, text)
        return new

    def _save_state(self, session_id: int, state: str, messages: list[Message], version: int | None) -> Op[int]:
        new = yield from self._write_state(session_id, state, version)
        for m in messages:
            m.id = yield from self._insert_message(session_id, m)
        return new

    @writes
    def add_messages(self, session_id: int, messages: list[Message]) -> Op[None]:
        """Log lines that change nothing in the game (a player's own dice roll): no state write, no version bump."""
        for m in messages:
            m.id = yield from self._insert_message(session_id, m)

    @writes
    def begin_turn(self, session_id: int, player_message: Message, rate: Rate | None = None, *,
                   queued: bool = False) -> Op[int]:
        """Store the player's words the moment their turn starts (pending), so a crash cannot lose them; `queued`:
        the moment they arrive, while they wait behind other turns (`start_turn` moves them on when their turn
        comes).

        With `rate`, the player's recent turns are counted in the same transaction, one player at a time, and
        `rate.refuse` may refuse this one (then nothing is stored): turns begun at the same instant in several
        channels cannot all slip under the limit."""
        m = player_message
        if rate is not None:
            if self.driver.dialect == "postgresql":  # SQLite's write lock already takes writers one at a time
                yield value("SELECT pg_advisory_xact_lock(hashtext(?))", f"turns:{m.author_id}")
            rate.refuse([r[0] for r in (yield rows(
                "SELECT created_at FROM messages WHERE author_id = ? AND instance IS NOT NULL AND created_at > ? "
                "ORDER BY created_at DESC LIMIT ?", m.author_id, rate.since, rate.turns))])
        m.status = "queued" if queued else "pending"
        m.id = yield from self._insert_waiting(session_id, m)
        return m.id

    @writes
    def start_turn(self, session_id: int, player_message: Message) -> Op[int]:
        """A queued message's turn begins: it moves to the end of the log (a new id, so the log reads in the order
        turns were played), pending. StaleSession if it is no longer queued (another process judged it lost)."""
        m = player_message
        if (yield run("DELETE FROM messages WHERE id = ? AND status = 'queued'", m.id)) != 1:
            raise StaleSession()
        m.status = "pending"
        m.id = yield from self._insert_waiting(session_id, m)
        return m.id

    def _insert_waiting(self, session_id: int, m: Message) -> Op[int]:
        _fit(m)
        return (yield value(
            "INSERT INTO messages (session_id, channel_id, turn_id, author_id, author_name, agent, npc_id, text, status, "
            "witnesses, created_at, instance) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            session_id, m.channel_id, m.author_id, m.author_name, m.agent.value, m.npc_id, m.text, m.status,
            jsonio.dumps(m.witnesses), m.created_at.isoformat(), self.instance))

    async def commit_turn(self, session_id: int, state: GameState, messages: list[Message], turn: TurnRecord,
                          calls: list[ToolCallRow], *, version: int | None = None,
                          replaces: LastTurn | None = None, vector: bytes | None = None) -> Committed:
        """The player's message, every state change, the tool-call log and the reply: all or nothing.

        A message already stored (pending, by begin_turn) is marked done; the others are added. With `version`, the
        turn commits only if nobody wrote the session since it was read; otherwise StaleSession and nothing changes.
        `replaces`: a retry's turn, taken back in the same write (it committed over what the old turn did). `vector`:
        the turn's embedding of the player's message, kept for the game's memory.
        """
        # What /undo puts back: the state this turn read (cached with its version, else read in the write); a retry's
        # turn read the state the old turn committed over.
        known = self.states.at(session_id, version)
        text, parts = dump(state, known if replaces is None or not replaces.committed else None)
        try:
            committed = await self.driver.write(self._commit_turn(
                session_id, text, messages, turn, calls, version,
                (known.json, known.guild_id) if known is not None else None, state.summary_upto, replaces, vector))
        except BaseException:
            self.states.unsaved(session_id)
            raise
        self.states.saved(session_id, committed.version, state, text, parts)
        return committed

    def _commit_turn(self, session_id: int, state: str, messages: list[Message], turn: TurnRecord,
                     calls: list[ToolCallRow], version: int | None, known: tuple[str, str | None] | None,
                     summary_upto: int, replaces: LastTurn | None, vector: bytes | None) -> Op[Committed]:
        if known is None:
            found = yield row("SELECT state, guild_id FROM sessions WHERE id = ?", session_id)
            known = (found["state"], found["guild_id"]) if found else (None, None)
        before, guild_id = known
        if replaces is not None and replaces.committed:
            before = replaces.turn.state_before  # undoing the new turn goes back past the old one too
        new = yield from self._write_state(session_id, state, version)
        if replaces is not None:
            yield from self._replace(session_id, replaces, utcnow().isoformat())
        turn_id = yield from self._insert_turn(session_id, turn, before)
        yield from self._prune_undo(session_id)
        if vector is not None:
            yield run("INSERT INTO memory_vectors (turn_id, session_id, vector) VALUES (?, ?, ?)", turn_id, session_id,
                      vector)
        yield from self._spent(guild_id, turn)
        for m in messages:
            m.turn_id = turn_id
            if m.id:
                # Who it spoke to and who heard it are settled now (a replayed turn may have moved the party).
                if (yield run("UPDATE messages SET status = 'ok', turn_id = ?, npc_id = ?, witnesses = ? "
                              "WHERE id = ? AND status = 'pending'", turn_id, m.npc_id, jsonio.dumps(m.witnesses), m.id)) != 1:
                    raise StaleSession()  # another process judged this turn interrupted meanwhile
                m.status = "ok"
            else:
                m.id = yield from self._insert_message(session_id, m)
        if calls:
            yield many("INSERT INTO tool_calls (turn_id, seq, name, args, ok, observation, persistence, meta) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       [(turn_id, i, c.name, jsonio.dumps(c.args), int(c.ok), c.observation, c.persistence,
                         jsonio.dumps(c.meta)) for i, c in enumerate(calls)])
        unsummarised = yield from self._count_messages(session_id, summary_upto)
        return Committed(turn_id, unsummarised, new)

    @writes
    def record_failed_turn(self, session_id: int, player_message: Message, turn: TurnRecord, *,
                           retry: bool = False) -> Op[int]:
        """Keep the player's words, marked failed, and why the turn failed; the state is not touched (the tokens its
        model calls used still count against the server's budget). A failed `retry` is marked taken back at once:
        the turn it tried to play again stays the last one, as it was."""
        turn_id = yield from self._insert_turn(session_id, turn)
        if retry:
            yield run("UPDATE turns SET undone_at = ? WHERE id = ?", utcnow().isoformat(), turn_id)
        yield from self._spent((yield value("SELECT guild_id FROM sessions WHERE id = ?", session_id)), turn)
        player_message.turn_id, player_message.status = turn_id, "failed"
        if player_message.id:
            yield run("UPDATE messages SET status = 'failed', turn_id = ? WHERE id = ?", turn_id, player_message.id)
        else:
            player_message.id = yield from self._insert_message(session_id, player_message)
        return turn_id

    def _write_state(self, session_id: int, state: str, version: int | None) -> Op[int]:
        now = utcnow().isoformat()
        if version is None:
            new = yield value("UPDATE sessions SET state = ?, version = version + 1, updated_at = ? WHERE id = ? "
                              "RETURNING version", state, now, session_id)
        else:
            new = yield value("UPDATE sessions SET state = ?, version = version + 1, updated_at = ? WHERE id = ? "
                              "AND version = ? AND active = 1 RETURNING version",
                              state, now, session_id, version)
            if new is None:
                raise StaleSession()
        return new or 0

    def _insert_turn(self, session_id: int, t: TurnRecord, state_before: str | None = None) -> Op[int]:
        """The turn's row, and what it committed over (what undo puts back) beside it."""
        turn_id = yield value(
            "INSERT INTO turns (session_id, seq, agent, npc_id, status, seed, error, model_calls, started_at, finished_at, "
            "sources, checks, feedback, suggestions) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            session_id, t.seq, t.agent.value, t.npc_id, t.status, t.seed, t.error, jsonio.dumps(t.model_calls),
            t.started_at.isoformat(), utcnow().isoformat(), jsonio.dumps(t.sources), jsonio.dumps(t.checks),
            None if t.feedback is None else jsonio.dumps(t.feedback), jsonio.dumps(t.suggestions))
        if state_before is not None:
            yield run("INSERT INTO undo_states (turn_id, session_id, state) VALUES (?, ?, ?)", turn_id, session_id,
                      state_before)
        return turn_id

    def _insert_message(self, session_id: int, m: Message) -> Op[int]:
        _fit(m)
        return (yield value(
            "INSERT INTO messages (session_id, channel_id, turn_id, author_id, author_name, agent, npc_id, text, status, "
            "witnesses, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            session_id, m.channel_id, m.turn_id, m.author_id, m.author_name, m.agent.value, m.npc_id, m.text, m.status,
            jsonio.dumps(m.witnesses), m.created_at.isoformat()))

    # -- limits ---------------------------------------------------------------------------------------------------

    def _spent(self, guild_id: str | None, turn: TurnRecord | None, tokens: int = 0) -> Op[None]:
        if guild_id is None:
            return
        if turn is not None:
            tokens += sum(c.get("input_tokens", 0) + c.get("output_tokens", 0) for c in turn.model_calls)
        yield run("INSERT INTO guild_usage (guild_id, day, tokens, turns) VALUES (?, ?, ?, ?) "
                  "ON CONFLICT(guild_id, day) DO UPDATE SET tokens = guild_usage.tokens + excluded.tokens, "
                  "turns = guild_usage.turns + excluded.turns",
                  guild_id, today(), tokens, 1 if turn is not None else 0)

    @writes
    def add_usage(self, session_id: int, tokens: int) -> Op[None]:
        """Tokens a game used outside a turn (a summary), counted against its server's budget."""
        yield from self._spent((yield value("SELECT guild_id FROM sessions WHERE id = ?", session_id)), None, tokens)

    # -- the log --------------------------------------------------------------------------------------------------

    async def messages(self, session_id: int, *, after_id: int = 0, limit: int = 50, include_failed: bool = False,
                       oldest: bool = False, before_id: int | None = None) -> list[Message]:
        """The newest `limit` messages after after_id (and before before_id; or, with `oldest`, the first `limit`),
        oldest first. A long read (a memory catching up, a transcript) runs off the event loop: ~27 ms for 2,000."""
        return await self.driver.read(self._messages(session_id, after_id, limit, include_failed, oldest, before_id),
                                      slow=limit > LONG_READ)

    def _messages(self, session_id: int, after_id: int, limit: int, include_failed: bool,
                  oldest: bool, before_id: int | None = None) -> Op[list[Message]]:
        status = "" if include_failed else "AND status = 'ok'"
        order = "ASC" if oldest else "DESC"
        below = "" if before_id is None else f"AND id < {int(before_id)}"
        found = yield rows(f"SELECT * FROM messages WHERE session_id = ? AND id > ? {below} {status} "
                           f"ORDER BY id {order} LIMIT ?", session_id, after_id, limit)
        return [message(r) for r in (found if oldest else reversed(found))]

    @reads
    def count_messages(self, session_id: int, after_id: int) -> Op[int]:
        return (yield from self._count_messages(session_id, after_id))

    def _count_messages(self, session_id: int, after_id: int) -> Op[int]:
        return (yield value("SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ? AND status = 'ok'",
                            session_id, after_id)) or 0
