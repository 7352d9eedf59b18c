"""The numbered migrations, one SQL script each, written for SQLite and translated for PostgreSQL: both
databases hold the same tables, columns and indexes, and record the same versions."""

from __future__ import annotations

import re

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "initial", """
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
        CREATE INDEX tool_calls_by_turn ON tool_calls(turn_id)
    """),
    (2, "channel_settings", """
        CREATE TABLE channel_settings (
            channel_id TEXT PRIMARY KEY,
            debug INTEGER NOT NULL DEFAULT 0
        )
    """),
    (3, "versions_and_pending_turns", """
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
    """),
    (4, "lore_sources_and_tool_meta", """
        ALTER TABLE channel_settings ADD COLUMN sources INTEGER;  -- NULL: the config's default
        ALTER TABLE turns ADD COLUMN sources TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE tool_calls ADD COLUMN meta TEXT NOT NULL DEFAULT '{}'
    """),
    (5, "verification", "ALTER TABLE turns ADD COLUMN checks TEXT NOT NULL DEFAULT '[]'"),
    (6, "tool_feedback_and_suggestions", """
        ALTER TABLE turns ADD COLUMN feedback TEXT;
        ALTER TABLE turns ADD COLUMN suggestions TEXT NOT NULL DEFAULT '[]'
    """),
    (7, "debug_never_set", """
        ALTER TABLE channel_settings ADD COLUMN debug_set INTEGER;  -- NULL: never set here (the config decides)
        UPDATE channel_settings SET debug_set = 1 WHERE debug = 1
    """),
    # state_before: what the turn committed over (NULL before this migration); undone_at: when it was reverted
    (8, "undo", """
        ALTER TABLE turns ADD COLUMN state_before TEXT;
        ALTER TABLE turns ADD COLUMN undone_at TEXT
    """),
    (9, "server_settings", """
        CREATE TABLE server_settings (
            guild_id TEXT PRIMARY KEY,
            settings TEXT NOT NULL,  -- JSON, as engine.server_settings.ServerSettings writes it
            updated_at TEXT NOT NULL
        )
    """),
    # A server's model tokens and turns per UTC day (its daily budget); a user's recent turns are the player
    # messages that began one (begin_turn marks them with the process answering: instance is set).
    (10, "limits", """
        CREATE TABLE guild_usage (
            guild_id TEXT NOT NULL,
            day TEXT NOT NULL,
            tokens INTEGER NOT NULL DEFAULT 0,
            turns INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (guild_id, day)
        );
        CREATE INDEX messages_turns_by_author ON messages(author_id, created_at) WHERE instance IS NOT NULL
    """),
    # Undo keeps the state a turn committed over only for the newest turns it can take back (store/undo.py), in a
    # table of its own: a 20 KB value in a turn's row took a page of its own that stayed (nearly empty) once the
    # value was dropped. The copies older games kept are dropped, and turns.state_before is no longer written. A
    # game's turns and a turn's lines get indexes, so undo and retry read a few rows, not every turn of every game.
    # A message waiting behind other turns is stored as it arrives ('queued'), and found with the pending ones
    # after a crash.
    (11, "undo_keeps_what_it_needs", """
        CREATE TABLE undo_states (
            turn_id INTEGER PRIMARY KEY REFERENCES turns(id),
            session_id INTEGER NOT NULL REFERENCES sessions(id),
            state TEXT NOT NULL
        );
        CREATE INDEX undo_states_by_session ON undo_states(session_id, turn_id);
        INSERT INTO undo_states (turn_id, session_id, state)
            SELECT id, session_id, state_before FROM (
                SELECT id, session_id, state_before,
                       ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY id DESC) AS n
                FROM turns WHERE status = 'ok' AND undone_at IS NULL) AS newest
            WHERE n <= 20 AND state_before IS NOT NULL;
        UPDATE turns SET state_before = NULL WHERE state_before IS NOT NULL;
        CREATE INDEX turns_by_session ON turns(session_id, id);
        CREATE INDEX messages_by_turn ON messages(turn_id);
        CREATE INDEX messages_waiting ON messages(status) WHERE status IN ('pending', 'queued')
    """),
    # The game's memory (engine/recall.py): each committed turn's one embedding of the player's message, stored with
    # the turn (float16, 768 bytes), so memory costs no embedding of its own and lives with the game it remembers.
    (12, "memory_vectors", """
        CREATE TABLE memory_vectors (
            turn_id INTEGER PRIMARY KEY REFERENCES turns(id),
            session_id INTEGER NOT NULL REFERENCES sessions(id),
            vector BLOB NOT NULL
        )
    """),
    # Debug mode's report names undiscovered secrets: it goes privately to the admin who turned it on, not the channel.
    (13, "debug_reader", """
        ALTER TABLE channel_settings ADD COLUMN debug_by TEXT  -- the user id of the admin who turned debug on
    """),
]

MIGRATIONS_TABLE = ("CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                    "applied_at TEXT NOT NULL)")


def for_postgres(sql: str) -> str:
    """SQLite's DDL in PostgreSQL's terms: identity keys, 64-bit integers (seeds and ids outgrow 32 bits), bytes."""
    sql = sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    return re.sub(r"\bBLOB\b", "BYTEA", re.sub(r"\bINTEGER\b", "BIGINT", sql))
