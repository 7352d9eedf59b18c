"""What undo and retry read and write: the turns that can be taken back, and taking them back.

A committed turn keeps the state it committed over (in `undo_states`), which is what undo puts back; only the newest
UNDO_KEPT turns that can still be undone keep it (~20 KB each), so a long game's database grows by what it played,
not by a copy of the game for every turn."""

from __future__ import annotations

from ..basics import utcnow
from ..errors import StaleSession
from ..state import Message
from .records import LastTurn, UndoableTurn, message
from .sql import Op, many, reads, row, rows, run, value, writes

UNDO_KEPT = 20  # turns a game can take back (migration 11 prunes older games to the same number)


class UndoRecords:
    """Undo's records (a part of Store, kept in its own module)."""

    @reads
    def undoable_turns(self, session_id: int, n: int) -> Op[list[UndoableTurn]]:
        """The newest `n` committed turns not undone yet, newest first, with what each committed over."""
        found = yield rows(
            "SELECT turns.id, undo_states.state AS state_before, MIN(messages.id) AS first_message FROM turns "
            "LEFT JOIN undo_states ON undo_states.turn_id = turns.id LEFT JOIN messages ON messages.turn_id = turns.id "
            "WHERE turns.session_id = ? AND turns.status = 'ok' AND turns.undone_at IS NULL "
            "GROUP BY turns.id, undo_states.state ORDER BY turns.id DESC LIMIT ?", session_id, n)
        return [UndoableTurn(r["id"], r["state_before"], r["first_message"] or 0) for r in found]

    @reads
    def last_turn(self, session_id: int, *, besides: int | None = None) -> Op[LastTurn | None]:
        """The newest turn not undone (committed or failed), whose player spoke it, and whether anything was logged
        after it (then it is no longer the last thing that happened); `besides`: a log line that does not count (a
        retry's own words, stored while it waits)."""
        last = yield row(
            "SELECT turns.id, turns.status, MIN(m.id) AS first_id, MAX(m.id) AS last_id FROM turns "
            "JOIN messages m ON m.turn_id = turns.id WHERE turns.session_id = ? AND turns.undone_at IS NULL "
            "GROUP BY turns.id ORDER BY turns.id DESC LIMIT 1", session_id)
        if last is None:
            return None
        kept = yield value("SELECT state FROM undo_states WHERE turn_id = ?", last["id"])
        player = yield row("SELECT author_id, author_name, text FROM messages WHERE id = ?", last["first_id"])
        newer = yield value("SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ? AND id <> ? "
                            "AND status IN ('ok', 'pending', 'queued')", session_id, last["last_id"], besides or 0)
        return LastTurn(UndoableTurn(last["id"], kept, last["first_id"], last["last_id"]),
                        last["status"] == "ok", player["author_id"], player["author_name"], player["text"], newer > 0)

    @reads
    def lines_since(self, session_id: int, first_id: int) -> Op[list[Message]]:
        """Players' lines logged outside any turn from `first_id` on (their own rests, deals, spells, rolls): what an
        undo back to there takes back besides the turns."""
        found = yield rows("SELECT * FROM messages WHERE session_id = ? AND id >= ? AND turn_id IS NULL "
                           "AND status = 'ok' AND agent = 'player' ORDER BY id", session_id, first_id)
        return [message(r) for r in found]

    @writes
    def undo_turns(self, session_id: int, turns: list[UndoableTurn], *, version: int) -> Op[list[int]]:
        """Revert `turns` (newest first, as `undoable_turns` gave them): the state goes back to what the oldest
        committed over, and every message from its first on is kept in the log marked undone. Compare-and-set on
        the session version (StaleSession if someone wrote since it was read). Returns the undone message ids."""
        oldest = turns[-1]
        assert oldest.state_before is not None
        now = utcnow().isoformat()
        if (yield run("UPDATE sessions SET state = ?, version = version + 1, updated_at = ? WHERE id = ? "
                      "AND version = ? AND active = 1", oldest.state_before, now, session_id, version)) != 1:
            raise StaleSession()
        yield many("UPDATE turns SET undone_at = ? WHERE id = ?", [(now, t.id) for t in turns])
        # An undone turn is never put back, so what it committed over (and what memory kept of it) is not needed.
        yield many("DELETE FROM undo_states WHERE turn_id = ?", [(t.id,) for t in turns])
        yield many("DELETE FROM memory_vectors WHERE turn_id = ?", [(t.id,) for t in turns])
        undone = yield rows("UPDATE messages SET status = 'undone' WHERE session_id = ? AND id >= ? AND status = 'ok' "
                            "RETURNING id", session_id, oldest.first_message)
        return sorted(r[0] for r in undone)

    def _replace(self, session_id: int, old: LastTurn, now: str) -> Op[None]:
        """In a retry's commit: the turn it plays again is taken back, unless something took it back first."""
        if (yield run("UPDATE turns SET undone_at = ? WHERE id = ? AND session_id = ? AND undone_at IS NULL",
                      now, old.turn.id, session_id)) != 1:
            raise StaleSession()
        yield run("DELETE FROM undo_states WHERE turn_id = ?", old.turn.id)
        yield run("DELETE FROM memory_vectors WHERE turn_id = ?", old.turn.id)
        if old.committed:
            yield run("UPDATE messages SET status = 'undone' WHERE turn_id = ? AND status = 'ok'", old.turn.id)

    def _prune_undo(self, session_id: int) -> Op[None]:
        """Drop what turns past the newest UNDO_KEPT undoable ones committed over: no undo reaches them."""
        cutoff = yield value("SELECT id FROM turns WHERE session_id = ? AND status = 'ok' AND undone_at IS NULL "
                             "ORDER BY id DESC LIMIT 1 OFFSET ?", session_id, UNDO_KEPT)
        if cutoff is not None:
            yield run("DELETE FROM undo_states WHERE session_id = ? AND turn_id <= ?", session_id, cutoff)
