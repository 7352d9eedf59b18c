"""Sessions, message logs and turn logs in one SQLite file (aiosqlite, WAL, numbered migrations).

Several processes may share one database: each session has a version, every write of its state is a
compare-and-set on it, and a player's message is stored (pending) the moment its turn starts, marked with the
process answering it, so a crash loses nothing and another process can tell an orphan from a turn in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import aiosqlite
import structlog
from pydantic import ValidationError

from .errors import ConfigError, GameAlreadyRunning, GameError, StaleSession
from .state import AgentType, GameState, Message, utcnow

log = structlog.get_logger(__name__)

_OURS: set[str] = set()  # instance ids of the stores this process opened
HEARTBEAT = 15.0  # seconds between a process's signs of life in the instances table
STALE_AFTER = 60.0  # seconds without one before its pending turns count as interrupted


async def _run_script(db: aiosqlite.Connection, script: str) -> None:
    # Not executescript: it commits the open transaction first, and a migration must be all or nothing.
    for statement in filter(str.strip, script.split(";")):
        await db.execute(statement)


async def _m1_initial(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            channel_id TEXT NOT NULL,
            guild_id TEXT,
            state TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX sessions_one_active ON sessions(channel_id) WHERE active = 1;
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id INTEGER NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            agent TEXT NOT NULL,
            npc_id TEXT,
            status TEXT NOT NULL,
            seed INTEGER NOT NULL,
            error TEXT,
            model_calls TEXT NOT NULL DEFAULT '[]',
            started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id INTEGER NOT NULL REFERENCES sessions(id),
            channel_id TEXT NOT NULL,
            turn_id INTEGER REFERENCES turns(id),
            author_id TEXT NOT NULL,
            author_name TEXT NOT NULL,
            agent TEXT NOT NULL,
            npc_id TEXT,
            text TEXT NOT NULL,
            status TEXT NOT NULL,
            witnesses TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL
        );
        CREATE INDEX messages_by_session ON messages(session_id, id);
        CREATE TABLE tool_calls (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            turn_id INTEGER NOT NULL REFERENCES turns(id),
            seq INTEGER NOT NULL,
            name TEXT NOT NULL,
            args TEXT NOT NULL,
            ok INTEGER NOT NULL,
            observation TEXT NOT NULL,
            persistence TEXT NOT NULL
        );
        CREATE INDEX tool_calls_by_turn ON tool_calls(turn_id);
    """)


async def _m2_channel_settings(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        CREATE TABLE channel_settings (
            channel_id TEXT PRIMARY KEY,
            debug INTEGER NOT NULL DEFAULT 0
        )
    """)


async def _m3_versions_and_pending_turns(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE messages ADD COLUMN instance TEXT;
        CREATE TABLE instances (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            started_at TEXT NOT NULL,
            heartbeat_at TEXT NOT NULL
        );
        CREATE INDEX messages_pending ON messages(status) WHERE status = 'pending'
    """)


async def _m4_lore(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        ALTER TABLE channel_settings ADD COLUMN sources INTEGER;  -- NULL: the config's default
        ALTER TABLE turns ADD COLUMN sources TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE tool_calls ADD COLUMN meta TEXT NOT NULL DEFAULT '{}'
    """)


async def _m5_verification(db: aiosqlite.Connection) -> None:
    await _run_script(db, "ALTER TABLE turns ADD COLUMN checks TEXT NOT NULL DEFAULT '[]'")


async def _m6_feedback(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        ALTER TABLE turns ADD COLUMN feedback TEXT;
        ALTER TABLE turns ADD COLUMN suggestions TEXT NOT NULL DEFAULT '[]'
    """)


async def _m7_debug_never_set(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        ALTER TABLE channel_settings ADD COLUMN debug_set INTEGER;  -- NULL: never set here (the config decides)
        UPDATE channel_settings SET debug_set = 1 WHERE debug = 1
    """)


async def _m8_undo(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        ALTER TABLE turns ADD COLUMN state_before TEXT;
        ALTER TABLE turns ADD COLUMN undone_at TEXT
    """)  # state_before: what the turn committed over (NULL before this migration); undone_at: when it was reverted


async def _m9_server_settings(db: aiosqlite.Connection) -> None:
    await _run_script(db, """
        CREATE TABLE server_settings (
            guild_id TEXT PRIMARY KEY,
            settings TEXT NOT NULL,  -- JSON, as engine.server_settings.ServerSettings writes it
            updated_at TEXT NOT NULL
        )
    """)


MIGRATIONS: list[tuple[int, str, Callable[[aiosqlite.Connection], Any]]] = [
    (1, "initial", _m1_initial),
    (2, "channel_settings", _m2_channel_settings),
    (3, "versions_and_pending_turns", _m3_versions_and_pending_turns),
    (4, "lore_sources_and_tool_meta", _m4_lore),
    (5, "verification", _m5_verification),
    (6, "tool_feedback_and_suggestions", _m6_feedback),
    (7, "debug_never_set", _m7_debug_never_set),
    (8, "undo", _m8_undo),
    (9, "server_settings", _m9_server_settings),
]


@dataclass
class Session:
    id: int
    channel_id: str
    state: GameState
    version: int = 0  # bumped by every write of the state; writes compare it first


@dataclass
class TurnRecord:
    seq: int
    agent: AgentType
    npc_id: str | None
    status: str
    seed: int
    started_at: datetime
    error: str | None = None
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # chunk ids of the lore the reply cited
    checks: list[dict[str, str]] = field(default_factory=list)  # the verifier's misses and what became of them
    feedback: dict[str, Any] | None = None  # the agent's debug-mode tool feedback, parsed (or marked malformed)
    suggestions: list[dict[str, Any]] = field(default_factory=list)  # the pre-flight hints the agent was given


@dataclass
class UndoableTurn:
    id: int
    state_before: str | None  # the state JSON it committed over (None: committed before undo existed)
    first_message: int  # the id of its first log line (the player's words)


@dataclass
class LastTurn:
    turn: UndoableTurn
    committed: bool  # False: it failed, and changed nothing
    author_id: str
    author_name: str
    text: str  # the player's words
    newer: bool  # something was logged after it


@dataclass
class ToolCallRow:
    name: str
    args: dict[str, Any]
    ok: bool
    observation: str
    persistence: str
    meta: dict[str, Any] = field(default_factory=dict)


class Store:
    """One concrete store over one SQLite file; write transactions are serialised by a lock."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        self.db = db
        self.path = path
        self._write = asyncio.Lock()
        where = "memory" if str(path) == ":memory:" else str(Path(path).resolve())
        self._key = hashlib.sha1(where.encode()).hexdigest()[:10] if where != "memory" else uuid.uuid4().hex[:10]
        self.instance = uuid.uuid4().hex  # this process's (this store's) id, on the turns it answers
        _OURS.add(self.instance)
        self._heartbeat: asyncio.Task[None] | None = None

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path | str) -> AsyncIterator["Store"]:
        path = Path(path)
        if path.is_dir():
            raise ConfigError(f"The database path {path} is a directory; give a file name (e.g. {path / 'lorekeeper.db'}).")
        connecting = aiosqlite.connect(path, isolation_level=None)
        try:
            if str(path) != ":memory:":
                path.parent.mkdir(parents=True, exist_ok=True)
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
            await _use_wal(db)
            await db.execute("PRAGMA synchronous=NORMAL")
            await db.execute("PRAGMA foreign_keys=ON")
            store = cls(db, path)
            await store.migrate()
            await store._register()
            try:
                yield store
            finally:
                await store._unregister()
        except aiosqlite.DatabaseError as exc:
            raise ConfigError(f"The database {path} cannot be used: {exc}.") from exc
        finally:
            await db.close()

    async def migrate(self) -> list[int]:
        await self.db.execute("CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
        async with self.db.execute("SELECT version FROM migrations") as cur:
            done = {row[0] async for row in cur}
        newest = max((v for v, _, _ in MIGRATIONS), default=0)
        if done and max(done) > newest:
            raise ConfigError(f"The database {self.path} was written by a newer Lorekeeper (schema {max(done)}); upgrade to use it.")
        applied = []
        for version, name, migration in MIGRATIONS:
            if version in done:
                continue
            async with self.transaction():
                # Checked again under the write lock: another process may have just applied it.
                async with self.db.execute("SELECT 1 FROM migrations WHERE version = ?", (version,)) as cur:
                    if await cur.fetchone():
                        continue
                await migration(self.db)
                await self.db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (version, name, utcnow().isoformat()))
            applied.append(version)
            log.info("migration_applied", version=version, name=name)
        return applied

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._write:
            try:
                await self.db.execute("BEGIN IMMEDIATE")
                yield self.db
                await asyncio.shield(self.db.commit())
            except BaseException:
                # Shielded: a cancelled task must not leave the connection inside an open transaction.
                # (The rollback queues behind a BEGIN still running in aiosqlite's thread.)
                with contextlib.suppress(aiosqlite.Error):
                    await asyncio.shield(self.db.rollback())
                raise

    # -- this process, among others sharing the database ---------------------------------------------------------

    async def _register(self) -> None:
        now = utcnow().isoformat()
        async with self.transaction() as db:
            await db.execute("INSERT INTO instances (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
                             (self.instance, socket.gethostname(), os.getpid(), now, now))
        self._heartbeat = asyncio.create_task(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT)
            try:
                async with self.transaction() as db:
                    await db.execute("UPDATE instances SET heartbeat_at = ? WHERE id = ?", (utcnow().isoformat(), self.instance))
            except aiosqlite.Error as exc:  # a busy database now is no reason to stop beating
                log.warning("heartbeat_failed", error=str(exc))

    async def _unregister(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        with contextlib.suppress(aiosqlite.Error):
            async with self.transaction() as db:
                await db.execute("DELETE FROM instances WHERE id = ?", (self.instance,))

    async def recover_interrupted(self, where: Callable[[str], bool] = lambda channel_id: True) -> list[Message]:
        """Turns whose process is gone (crashed, killed) before answering, in the channels `where` accepts (a front end
        takes those it can tell players about): marked interrupted, and returned, once."""
        async with self.transaction() as db:
            async with db.execute(
                    "SELECT messages.*, instances.host, instances.pid, instances.heartbeat_at FROM messages "
                    "LEFT JOIN instances ON instances.id = messages.instance WHERE messages.status = 'pending'") as cur:
                rows = await cur.fetchall()
            orphans = [r for r in rows if r["instance"] != self.instance and where(r["channel_id"]) and not _alive(r)]
            for r in orphans:
                await db.execute("UPDATE messages SET status = 'interrupted' WHERE id = ?", (r["id"],))
            gone = {r["instance"] for r in orphans if r["instance"]}
            for instance in gone:
                await db.execute("DELETE FROM instances WHERE id = ? AND heartbeat_at < ?",
                                 (instance, (utcnow() - timedelta(seconds=STALE_AFTER)).isoformat()))
        for r in orphans:
            log.warning("turn_interrupted", channel_id=r["channel_id"], message_id=r["id"])
        return [_message(r) for r in orphans]

    async def cancel_pending(self, channel_id: str) -> int:
        """This process's turns in a channel that its player stopped (Ctrl-C): their words kept, marked failed."""
        async with self.transaction() as db:
            cur = await db.execute("UPDATE messages SET status = 'failed' WHERE status = 'pending' AND channel_id = ? "
                                   "AND instance = ?", (channel_id, self.instance))
            return cur.rowcount

    # -- sessions -------------------------------------------------------------------------------------------------

    def game_key(self, session_id: int) -> str:
        """A name for one game that no game of another database shares (their lore folder may be the same)."""
        return f"{self._key}-s{session_id}"

    async def load_session(self, channel_id: str) -> Session | None:
        async with self.db.execute("SELECT id, state, version FROM sessions WHERE channel_id = ? AND active = 1",
                                   (channel_id,)) as cur:
            row = await cur.fetchone()
        if row is None:
            return None
        try:
            state = GameState.model_validate_json(row["state"])
        except ValidationError as exc:
            log.error("session_unreadable", channel_id=channel_id, error=str(exc))
            raise GameError("This channel's saved game cannot be read. A server admin can start over with /gm-admin reset.") from exc
        return Session(row["id"], channel_id, state, row["version"])

    async def create_session(self, channel_id: str, guild_id: str | None, state: GameState) -> Session:
        now = utcnow().isoformat()
        async with self.transaction() as db:
            async with db.execute("SELECT 1 FROM sessions WHERE channel_id = ? AND active = 1", (channel_id,)) as cur:
                if await cur.fetchone():
                    raise GameAlreadyRunning()
            cur = await db.execute("INSERT INTO sessions (channel_id, guild_id, state, active, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)",
                                   (channel_id, guild_id, state.model_dump_json(), now, now))
            return Session(cur.lastrowid or 0, channel_id, state)

    async def end_session(self, session_id: int) -> None:
        async with self.transaction() as db:
            # The version moves too: a turn still in flight elsewhere must not commit into an ended game.
            await db.execute("UPDATE sessions SET active = 0, version = version + 1, updated_at = ? WHERE id = ?",
                             (utcnow().isoformat(), session_id))

    async def save_state(self, session_id: int, state: GameState, messages: list[Message] = (), *,
                         version: int | None = None) -> int:
        """Store a state change made outside a model turn (a new character, a rest, a summary), with its log lines.

        With `version`, only if nobody wrote the session since it was read (else StaleSession); returns the new version.
        """
        async with self.transaction() as db:
            new = await self._write_state(db, session_id, state, version)
            for m in messages:
                m.id = await self._insert_message(db, session_id, m)
            return new

    async def add_messages(self, session_id: int, messages: list[Message]) -> None:
        """Log lines that change nothing in the game (a player's own dice roll): no state write, no version bump."""
        async with self.transaction() as db:
            for m in messages:
                m.id = await self._insert_message(db, session_id, m)

    async def begin_turn(self, session_id: int, player_message: Message) -> int:
        """Store the player's words the moment their turn starts (pending), so a crash cannot lose them."""
        player_message.status = "pending"
        async with self.transaction() as db:
            cur = await db.execute(
                "INSERT INTO messages (session_id, channel_id, turn_id, author_id, author_name, agent, npc_id, text, status, "
                "witnesses, created_at, instance) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
                (session_id, player_message.channel_id, player_message.author_id, player_message.author_name,
                 player_message.agent.value, player_message.npc_id, player_message.text, json.dumps(player_message.witnesses),
                 player_message.created_at.isoformat(), self.instance))
            player_message.id = cur.lastrowid or 0
            return player_message.id

    async def commit_turn(self, session_id: int, state: GameState, messages: list[Message], turn: TurnRecord,
                          calls: list[ToolCallRow], *, version: int | None = None) -> int:
        """The player's message, every state change, the tool-call log and the reply: all or nothing.

        A message already stored (pending, by begin_turn) is marked done; the others are added. With `version`, the
        turn commits only if nobody wrote the session since it was read; otherwise StaleSession and nothing changes.
        """
        async with self.transaction() as db:
            async with db.execute("SELECT state FROM sessions WHERE id = ?", (session_id,)) as cur:
                row = await cur.fetchone()
            before = row[0] if row else None  # what the turn commits over: what /undo puts back
            await self._write_state(db, session_id, state, version)
            turn_id = await self._insert_turn(db, session_id, turn, before)
            for m in messages:
                m.turn_id = turn_id
                if m.id:
                    # Who it spoke to and who heard it are settled now (a replayed turn may have moved the party).
                    cur = await db.execute("UPDATE messages SET status = 'ok', turn_id = ?, npc_id = ?, witnesses = ? "
                                           "WHERE id = ? AND status = 'pending'",
                                           (turn_id, m.npc_id, json.dumps(m.witnesses), m.id))
                    if cur.rowcount != 1:  # another process judged this turn interrupted meanwhile
                        raise StaleSession()
                    m.status = "ok"
                else:
                    m.id = await self._insert_message(db, session_id, m)
            await db.executemany(
                "INSERT INTO tool_calls (turn_id, seq, name, args, ok, observation, persistence, meta) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(turn_id, i, c.name, json.dumps(c.args), int(c.ok), c.observation, c.persistence, json.dumps(c.meta))
                 for i, c in enumerate(calls)])
            return turn_id

    async def record_failed_turn(self, session_id: int, player_message: Message, turn: TurnRecord) -> int:
        """Keep the player's words, marked failed, and why the turn failed; the state is not touched."""
        async with self.transaction() as db:
            turn_id = await self._insert_turn(db, session_id, turn)
            player_message.turn_id, player_message.status = turn_id, "failed"
            if player_message.id:
                await db.execute("UPDATE messages SET status = 'failed', turn_id = ? WHERE id = ?", (turn_id, player_message.id))
            else:
                player_message.id = await self._insert_message(db, session_id, player_message)
            return turn_id

    async def _write_state(self, db: aiosqlite.Connection, session_id: int, state: GameState, version: int | None) -> int:
        now = utcnow().isoformat()
        if version is None:
            await db.execute("UPDATE sessions SET state = ?, version = version + 1, updated_at = ? WHERE id = ?",
                             (state.model_dump_json(), now, session_id))
        else:
            cur = await db.execute(
                "UPDATE sessions SET state = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ? AND active = 1",
                (state.model_dump_json(), now, session_id, version))
            if cur.rowcount != 1:
                raise StaleSession()
        async with db.execute("SELECT version FROM sessions WHERE id = ?", (session_id,)) as cur:
            row = await cur.fetchone()
        return row[0] if row else 0

    async def _insert_turn(self, db: aiosqlite.Connection, session_id: int, t: TurnRecord,
                           state_before: str | None = None) -> int:
        cur = await db.execute(
            "INSERT INTO turns (session_id, seq, agent, npc_id, status, seed, error, model_calls, started_at, finished_at, "
            "sources, checks, feedback, suggestions, state_before) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, t.seq, t.agent.value, t.npc_id, t.status, t.seed, t.error, json.dumps(t.model_calls),
             t.started_at.isoformat(), utcnow().isoformat(), json.dumps(t.sources), json.dumps(t.checks),
             None if t.feedback is None else json.dumps(t.feedback), json.dumps(t.suggestions), state_before))
        return cur.lastrowid or 0

    async def undoable_turns(self, session_id: int, n: int) -> list[UndoableTurn]:
        """The newest `n` committed turns not undone yet, newest first, with what each committed over."""
        async with self.db.execute(
                "SELECT turns.id, turns.state_before, MIN(messages.id) AS first_message FROM turns "
                "LEFT JOIN messages ON messages.turn_id = turns.id "
                "WHERE turns.session_id = ? AND turns.status = 'ok' AND turns.undone_at IS NULL "
                "GROUP BY turns.id ORDER BY turns.id DESC LIMIT ?", (session_id, n)) as cur:
            return [UndoableTurn(r["id"], r["state_before"], r["first_message"] or 0) for r in await cur.fetchall()]

    async def last_turn(self, session_id: int) -> LastTurn | None:
        """The newest turn not undone (committed or failed), whose player spoke it, and whether anything was logged
        after it (then it is no longer the last thing that happened)."""
        async with self.db.execute(
                "SELECT turns.id, turns.status, turns.state_before, MIN(m.id) AS first, MAX(m.id) AS last FROM turns "
                "JOIN messages m ON m.turn_id = turns.id WHERE turns.session_id = ? AND turns.undone_at IS NULL "
                "GROUP BY turns.id ORDER BY turns.id DESC LIMIT 1", (session_id,)) as cur:
            row = await cur.fetchone()
        if row is None:
            return None
        async with self.db.execute("SELECT author_id, author_name, text FROM messages WHERE id = ?", (row["first"],)) as cur:
            player = await cur.fetchone()
        async with self.db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ? AND status IN ('ok', 'pending')",
                                   (session_id, row["last"])) as cur:
            newer = (await cur.fetchone())[0]
        return LastTurn(UndoableTurn(row["id"], row["state_before"], row["first"]), row["status"] == "ok",
                        player["author_id"], player["author_name"], player["text"], newer > 0)

    async def undo_turns_failed(self, session_id: int, turn: UndoableTurn) -> None:
        """Mark a failed turn as retried: it changed nothing, so only the mark (its words stay marked failed)."""
        async with self.transaction() as db:
            await db.execute("UPDATE turns SET undone_at = ? WHERE id = ? AND session_id = ? AND status = 'failed'",
                             (utcnow().isoformat(), turn.id, session_id))

    async def undo_turns(self, session_id: int, turns: list[UndoableTurn], *, version: int) -> list[int]:
        """Revert `turns` (newest first, as `undoable_turns` gave them): the state goes back to what the oldest
        committed over, and every message from its first on is kept in the log marked undone. Compare-and-set on
        the session version (StaleSession if someone wrote since it was read). Returns the undone message ids."""
        oldest = turns[-1]
        assert oldest.state_before is not None
        async with self.transaction() as db:
            now = utcnow().isoformat()
            cur = await db.execute(
                "UPDATE sessions SET state = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ? "
                "AND active = 1", (oldest.state_before, now, session_id, version))
            if cur.rowcount != 1:
                raise StaleSession()
            await db.executemany("UPDATE turns SET undone_at = ? WHERE id = ?", [(now, t.id) for t in turns])
            async with db.execute("SELECT id FROM messages WHERE session_id = ? AND id >= ? AND status = 'ok'",
                                  (session_id, oldest.first_message)) as cur:
                undone = [r[0] for r in await cur.fetchall()]
            await db.execute("UPDATE messages SET status = 'undone' WHERE session_id = ? AND id >= ? AND status = 'ok'",
                             (session_id, oldest.first_message))
            return undone

    async def _insert_message(self, db: aiosqlite.Connection, session_id: int, m: Message) -> int:
        cur = await db.execute(
            "INSERT INTO messages (session_id, channel_id, turn_id, author_id, author_name, agent, npc_id, text, status, witnesses, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, m.channel_id, m.turn_id, m.author_id, m.author_name, m.agent.value, m.npc_id, m.text, m.status,
             json.dumps(m.witnesses), m.created_at.isoformat()))
        return cur.lastrowid or 0

    async def messages(self, session_id: int, *, after_id: int = 0, limit: int = 50, include_failed: bool = False,
                       oldest: bool = False) -> list[Message]:
        """The newest `limit` messages after after_id (or, with `oldest`, the first `limit`), oldest first."""
        status = "" if include_failed else "AND status = 'ok'"
        order = "ASC" if oldest else "DESC"
        async with self.db.execute(
                f"SELECT * FROM messages WHERE session_id = ? AND id > ? {status} ORDER BY id {order} LIMIT ?",
                (session_id, after_id, limit)) as cur:
            rows = await cur.fetchall()
        return [_message(r) for r in (rows if oldest else reversed(rows))]

    async def count_messages(self, session_id: int, after_id: int) -> int:
        async with self.db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ? AND status = 'ok'",
                                   (session_id, after_id)) as cur:
            row = await cur.fetchone()
        return row[0] if row else 0

    async def turns(self, session_id: int) -> list[dict[str, Any]]:
        async with self.db.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY id", (session_id,)) as cur:
            rows = await cur.fetchall()
        return [dict(r) | {"model_calls": json.loads(r["model_calls"]), "sources": json.loads(r["sources"]),
                           "checks": json.loads(r["checks"]), "suggestions": json.loads(r["suggestions"]),
                           "feedback": None if r["feedback"] is None else json.loads(r["feedback"])} for r in rows]

    async def turns_for_analysis(self, channel_id: str | None = None, since: datetime | None = None
                                 ) -> list[dict[str, Any]]:
        """Every turn (of one channel, or all; since a moment, or ever), with its tool calls, for `analyze`."""
        where, params = [], []
        if channel_id is not None:
            where.append("sessions.channel_id = ?")
            params.append(channel_id)
        if since is not None:
            where.append("turns.started_at >= ?")
            params.append(since.isoformat())
        clause = ("WHERE " + " AND ".join(where)) if where else ""
        async with self.db.execute(
                f"SELECT turns.*, sessions.channel_id FROM turns JOIN sessions ON sessions.id = turns.session_id "
                f"{clause} ORDER BY turns.id", params) as cur:
            rows = [dict(r) for r in await cur.fetchall()]
        calls: dict[int, list[ToolCallRow]] = {}
        if rows:
            async with self.db.execute(
                    f"SELECT tool_calls.* FROM tool_calls JOIN turns ON turns.id = tool_calls.turn_id "
                    f"JOIN sessions ON sessions.id = turns.session_id {clause} ORDER BY tool_calls.turn_id, seq",
                    params) as cur:
                for r in await cur.fetchall():
                    calls.setdefault(r["turn_id"], []).append(
                        ToolCallRow(r["name"], json.loads(r["args"]), bool(r["ok"]), r["observation"], r["persistence"],
                                    json.loads(r["meta"])))
        for r in rows:
            r.update(model_calls=json.loads(r["model_calls"]), checks=json.loads(r["checks"]),
                     suggestions=json.loads(r["suggestions"]), calls=calls.get(r["id"], []))
        return rows

    async def tool_calls(self, turn_id: int) -> list[ToolCallRow]:
        async with self.db.execute("SELECT * FROM tool_calls WHERE turn_id = ? ORDER BY seq", (turn_id,)) as cur:
            rows = await cur.fetchall()
        return [ToolCallRow(r["name"], json.loads(r["args"]), bool(r["ok"]), r["observation"], r["persistence"],
                            json.loads(r["meta"])) for r in rows]


    async def debug(self, channel_id: str) -> bool | None:
        """This channel's debug switch: on, off, or None when nobody set it here (then the config decides)."""
        async with self.db.execute("SELECT debug_set FROM channel_settings WHERE channel_id = ?", (channel_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None or row[0] is None else bool(row[0])

    async def sources(self, channel_id: str) -> bool | None:
        """Whether this channel shows a "Sources" line under replies; None: the config's default."""
        async with self.db.execute("SELECT sources FROM channel_settings WHERE channel_id = ?", (channel_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None or row[0] is None else bool(row[0])

    async def set_sources(self, channel_id: str, on: bool) -> None:
        async with self.transaction() as db:
            await db.execute("INSERT INTO channel_settings (channel_id, debug, sources) VALUES (?, 0, ?) "
                             "ON CONFLICT(channel_id) DO UPDATE SET sources = excluded.sources", (channel_id, int(on)))

    async def server_settings(self, guild_id: str) -> str | None:
        """A server's settings as stored (JSON), or None when its admins never chose any."""
        async with self.db.execute("SELECT settings FROM server_settings WHERE guild_id = ?", (guild_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None else row[0]

    async def set_server_settings(self, guild_id: str, settings: str) -> None:
        async with self.transaction() as db:
            await db.execute("INSERT INTO server_settings (guild_id, settings, updated_at) VALUES (?, ?, ?) "
                             "ON CONFLICT(guild_id) DO UPDATE SET settings = excluded.settings, "
                             "updated_at = excluded.updated_at", (guild_id, settings, utcnow().isoformat()))

    async def set_debug(self, channel_id: str, on: bool) -> None:
        async with self.transaction() as db:
            await db.execute("INSERT INTO channel_settings (channel_id, debug, debug_set) VALUES (?, ?, ?) "
                             "ON CONFLICT(channel_id) DO UPDATE SET debug = excluded.debug, debug_set = excluded.debug_set",
                             (channel_id, int(on), int(on)))

    async def telemetry(self, session_id: int) -> dict[str, Any]:
        """Counts from the turn log: turns, tool calls by tool, model usage."""
        turns = await self.turns(session_id)
        async with self.db.execute(
                "SELECT name, SUM(ok), COUNT(*) FROM tool_calls JOIN turns ON turns.id = tool_calls.turn_id "
                "WHERE turns.session_id = ? GROUP BY name ORDER BY COUNT(*) DESC", (session_id,)) as cur:
            tools = {row[0]: {"ok": row[1], "calls": row[2]} for row in await cur.fetchall()}
        calls = [c for t in turns for c in t["model_calls"]]
        latencies = sorted(c["latency_ms"] for c in calls)
        async with self.db.execute(
                "SELECT ok, meta FROM tool_calls JOIN turns ON turns.id = tool_calls.turn_id "
                "WHERE turns.session_id = ? AND name IN ('get_lore_slice', 'search_lore', 'recall')", (session_id,)) as cur:
            lore = [(bool(row[0]), json.loads(row[1])) for row in await cur.fetchall()]
        lookups = [m for ok, m in lore if ok]
        cacheable = [m for m in lookups if "cache_hit" in m]
        lore_latency = sorted(m["latency_ms"] for m in lookups if "latency_ms" in m)
        return {
            "turns": len(turns), "failed_turns": sum(t["status"] == "failed" for t in turns),
            "tools": tools, "model_calls": len(calls),
            "input_tokens": sum(c["input_tokens"] for c in calls), "output_tokens": sum(c["output_tokens"] for c in calls),
            "cache_read_tokens": sum(c["cache_read_tokens"] for c in calls),
            "latency_ms_p50": latencies[len(latencies) // 2] if latencies else None,
            "by_agent": {a: sum(t["agent"] == a for t in turns) for a in sorted({t["agent"] for t in turns})},
            "lore": {
                "calls": len(lore), "denied": sum(1 for ok, m in lore if not ok and m.get("denied")),
                "tokens_returned": sum(m.get("tokens", 0) for m in lookups),
                "cache_hit_ratio": round(sum(1 for m in cacheable if m["cache_hit"]) / len(cacheable), 3) if cacheable else None,
                "latency_ms_p50": lore_latency[len(lore_latency) // 2] if lore_latency else None,
                "turns_citing": sum(1 for t in turns if t["sources"]),
            },
        }


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


def _alive(row: aiosqlite.Row) -> bool:
    """Whether the process that took a pending turn may still be answering it."""
    if row["heartbeat_at"] is None:
        return False  # no such process registered any more
    if datetime.fromisoformat(row["heartbeat_at"]) < utcnow() - timedelta(seconds=STALE_AFTER):
        return False
    if row["host"] == socket.gethostname():
        if row["pid"] == os.getpid():
            # Our own pid: one of this process's stores, or an earlier process that had the same pid (in a
            # container the bot is often pid 1 at every start).
            return row["instance"] in _OURS
        try:
            os.kill(row["pid"], 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True


def _message(r: aiosqlite.Row) -> Message:
    return Message(id=r["id"], channel_id=r["channel_id"], turn_id=r["turn_id"], author_id=r["author_id"],
                   author_name=r["author_name"], agent=AgentType(r["agent"]), npc_id=r["npc_id"], text=r["text"],
                   status=r["status"], witnesses=json.loads(r["witnesses"]), created_at=datetime.fromisoformat(r["created_at"]))


def call_rows(calls: list[Any]) -> list[ToolCallRow]:
    return [ToolCallRow(c.name, c.args, c.ok, c.observation, c.persistence, getattr(c, "meta", {})) for c in calls]

