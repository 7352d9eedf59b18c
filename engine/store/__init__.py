"""The game's records: SQLite by default, PostgreSQL when several processes share them."""

from ..basics import utcnow
from .records import (HEARTBEAT, STALE_AFTER, Committed, LastTurn, Session, ToolCallRow, TurnRecord, UndoableTurn,
                      call_rows)
from .schema import MIGRATIONS
from .store import Store, is_postgres

__all__ = ["HEARTBEAT", "MIGRATIONS", "STALE_AFTER", "Committed", "LastTurn", "Session", "Store", "ToolCallRow",
           "TurnRecord", "UndoableTurn", "call_rows", "is_postgres", "utcnow"]
