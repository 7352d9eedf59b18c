"""What the store hands back: sessions, turn records and log rows, the same from either database."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .. import jsonio
from ..basics import AgentType, utcnow
from ..state import GameState, Message

OURS: set[str] = set()  # instance ids of the stores this process opened
HEARTBEAT = 15.0  # seconds between a process's signs of life in the instances table
STALE_AFTER = 60.0  # seconds without one before its pending turns count as interrupted


@dataclass
class Session:
    id: int
    channel_id: str
    state: GameState
    version: int = 0  # bumped by every write of the state; writes compare it first
    guild_id: str | None = None  # the Discord server it is played in (None: the terminal)
    debug: bool | None = None  # the channel's debug switch as the session was read (None: never set there)


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
class Committed:
    turn_id: int
    unsummarised: int  # log lines after the summary's last one, this turn's included: when to summarise again
    version: int = 0  # the session's version after the turn


@dataclass
class UndoableTurn:
    id: int
    state_before: str | None  # the state JSON it committed over (None: too old for undo to keep it)
    first_message: int  # the id of its first log line (the player's words)
    last_message: int = 0  # the id of its last log line (its reply)


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


def call_rows(calls: list[Any]) -> list[ToolCallRow]:
    return [ToolCallRow(c.name, c.args, c.ok, c.observation, c.persistence, getattr(c, "meta", {})) for c in calls]


def tool_call(r: Any) -> ToolCallRow:
    return ToolCallRow(r["name"], jsonio.loads(r["args"]), bool(r["ok"]), r["observation"], r["persistence"],
                       jsonio.loads(r["meta"]))


def message(r: Any) -> Message:
    return Message(id=r["id"], channel_id=r["channel_id"], turn_id=r["turn_id"], author_id=r["author_id"],
                   author_name=r["author_name"], agent=AgentType(r["agent"]), npc_id=r["npc_id"], text=r["text"],
                   status=r["status"], witnesses=jsonio.loads(r["witnesses"]),
                   created_at=datetime.fromisoformat(r["created_at"]))


def alive(r: Any) -> bool:
    """Whether the process that took a pending turn may still be answering it."""
    if r["heartbeat_at"] is None:
        return False  # no such process registered any more
    if datetime.fromisoformat(r["heartbeat_at"]) < utcnow() - timedelta(seconds=STALE_AFTER):
        return False
    if r["host"] == socket.gethostname():
        if r["pid"] == os.getpid():
            # Our own pid: one of this process's stores, or an earlier process that had the same pid (in a
            # container the bot is often pid 1 at every start).
            return r["instance"] in OURS
        try:
            os.kill(r["pid"], 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True
