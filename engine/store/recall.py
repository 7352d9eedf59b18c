"""What the game's memory reads and writes: committed exchanges with the vectors their turns made (engine/recall.py)."""

from __future__ import annotations

from typing import Any

from ..state import Message
from .records import message
from .sql import Op, many, reads, rows, writes


class MemoryRecords:
    """The memory's records (a part of Store, kept in its own module)."""

    async def exchanges(self, session_id: int, after_turn: int = 0, limit: int = 5000
                        ) -> list[tuple[Message, bytes | None]]:
        """The committed lines of the game's turns after `after_turn` (at most `limit` turns' worth, oldest first),
        each with its turn's vector (None where the turn made none). A whole game's is read off the event loop."""
        driver: Any = self.driver  # type: ignore[attr-defined]
        return await driver.read(self._exchanges(session_id, after_turn, limit), slow=after_turn == 0)

    def _exchanges(self, session_id: int, after_turn: int, limit: int) -> Op[list[tuple[Message, bytes | None]]]:
        found = yield rows(
            "SELECT messages.*, memory_vectors.vector FROM messages "
            "LEFT JOIN memory_vectors ON memory_vectors.turn_id = messages.turn_id "
            "WHERE messages.session_id = ? AND messages.turn_id > ? AND messages.status = 'ok' "
            "AND messages.turn_id IN (SELECT id FROM turns WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?) "
            "ORDER BY messages.id", session_id, after_turn, session_id, after_turn, limit)
        return [(message(r), None if r["vector"] is None else bytes(r["vector"])) for r in found]

    @reads
    def played(self, session_id: int, turn_ids: list[int]) -> Op[set[int]]:
        """Which of these turns still stand (not undone, by this process or another)."""
        if not turn_ids:
            return set()
        marks = ", ".join("?" for _ in turn_ids)
        found = yield rows(f"SELECT id FROM turns WHERE session_id = ? AND id IN ({marks}) AND undone_at IS NULL",
                           session_id, *turn_ids)
        return {r[0] for r in found}

    @writes
    def save_vectors(self, session_id: int, vectors: dict[int, bytes]) -> Op[None]:
        """Vectors made later for turns that had none (a game from before memory kept them; a busy embedder)."""
        yield many("INSERT INTO memory_vectors (turn_id, session_id, vector) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                   [(turn_id, session_id, vector) for turn_id, vector in vectors.items()])
