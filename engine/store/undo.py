"""What undo and retry read and write: the turns that can be taken back, and taking them back."""

from __future__ import annotations

from ..basics import utcnow
from ..errors import StaleSession
from .records import LastTurn, UndoableTurn
from .sql import Op, many, reads, row, rows, run, value, writes


class UndoRecords:
    """Undo's records (a part of Store, kept in its own module)."""

    @reads
    def undoable_turns(self, session_id: int, n: int) -> Op[list[UndoableTurn]]:
        """The newest `n` committed turns not undone yet, newest first, with what each committed over."""
        found = yield rows(
            "SELECT turns.id, turns.state_before, MIN(messages.id) AS first_message FROM turns "
            "LEFT JOIN messages ON messages.turn_id = turns.id "
            "WHERE turns.session_id = ? AND turns.status = 'ok' AND turns.undone_at IS NULL "
            "GROUP BY turns.id ORDER BY turns.id DESC LIMIT ?", session_id, n)
        return [UndoableTurn(r["id"], r["state_before"], r["first_message"] or 0) for r in found]

    @reads
    def last_turn(self, session_id: int) -> Op[LastTurn | None]:
        """The newest turn not undone (committed or failed), whose player spoke it, and whether anything was logged
        after it (then it is no longer the last thing that happened)."""
        last = yield row(
            "SELECT turns.id, turns.status, turns.state_before, MIN(m.id) AS first_id, MAX(m.id) AS last_id FROM turns "
            "JOIN messages m ON m.turn_id = turns.id WHERE turns.session_id = ? AND turns.undone_at IS NULL "
            "GROUP BY turns.id ORDER BY turns.id DESC LIMIT 1", session_id)
        if last is None:
            return None
        player = yield row("SELECT author_id, author_name, text FROM messages WHERE id = ?", last["first_id"])
        newer = yield value("SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ? AND status IN ('ok', 'pending')",
                            session_id, last["last_id"])
        return LastTurn(UndoableTurn(last["id"], last["state_before"], last["first_id"]), last["status"] == "ok",
                        player["author_id"], player["author_name"], player["text"], newer > 0)

    @writes
    def undo_turns_failed(self, session_id: int, turn: UndoableTurn) -> Op[None]:
        """Mark a failed turn as retried: it changed nothing, so only the mark (its words stay marked failed)."""
        yield run("UPDATE turns SET undone_at = ? WHERE id = ? AND session_id = ? AND status = 'failed'",
                  utcnow().isoformat(), turn.id, session_id)

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
        undone = yield rows("UPDATE messages SET status = 'undone' WHERE session_id = ? AND id >= ? AND status = 'ok' "
                            "RETURNING id", session_id, oldest.first_message)
        return sorted(r[0] for r in undone)
