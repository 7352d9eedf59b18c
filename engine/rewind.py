"""Going back: /undo puts a channel's game back as it was before its last turns; /retry's checks (a part of Engine)."""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from . import recall
from .core import Core
from .errors import BadInput, NeedsConfirming
from .state import GameState, Message
from .store import LastTurn, Session
from .store.undo import UNDO_KEPT
from .turn import going_back

log = structlog.get_logger(__name__)

MAX_UNDO = UNDO_KEPT  # turns one undo may take back: the store keeps what that many turns committed over


@dataclass(frozen=True)
class Undone:
    turns: int
    messages: int  # log lines now marked undone
    state: GameState  # the state the game is back at


class Rewind(Core):
    """Undo, and what a retry checks first, on Engine."""

    async def undo(self, channel_id: str, n: int = 1, *, seen: int = 0) -> Undone:
        """Revert the channel's last `n` committed turns: the state goes back to what the oldest of them started
        from, byte for byte, and their log lines (and anything after) stay in the log marked undone.

        What players did themselves since (a rest, a deal, a spell, a roll) goes back too: unless the caller already
        showed those `seen` lines and was told to go on, NeedsConfirming lists them and nothing is undone."""
        if not 1 <= n <= MAX_UNDO:
            raise BadInput(f"Undo takes 1 to {MAX_UNDO} turns.")
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            turns = await self.deps.store.undoable_turns(session.id, n)
            if not turns:
                raise BadInput("There is no turn to undo in this game.")
            if len(turns) < n:
                raise BadInput(f"Only {len(turns)} turn{'s' if len(turns) > 1 else ''} of this game can be undone.")
            if turns[-1].state_before is None:  # the store keeps it for the newest MAX_UNDO turns only
                kept = sum(1 for t in turns if t.state_before is not None)
                raise BadInput(f"Undo keeps what the last {MAX_UNDO} turns changed, so only {kept} turn"
                               f"{'s' if kept != 1 else ''} of this game can be undone now.")
            going_back(session.state, turns[-1].state_before or "{}", "undone")
            also = await self.deps.store.lines_since(session.id, turns[-1].first_message)
            if len(also) != seen:
                raise NeedsConfirming(_also(also, changed=bool(seen)), items=[m.text for m in also])
            undone = await self.deps.store.undo_turns(session.id, turns, version=session.version)
        self._forget(session.id, [t.id for t in turns])
        log.info("turns_undone", channel_id=channel_id, turns=len(turns), messages=len(undone))
        return Undone(len(turns), len(undone), GameState.model_validate_json(turns[-1].state_before or "{}"))

    async def check_retry(self, channel_id: str, author_id: str, *, admin: bool = False) -> None:
        """What would refuse a retry, before a front end shows anything (refusals can then stay private): a retry is
        a new turn for the limits."""
        session = await self.session(channel_id)
        await self._retryable(session, author_id, admin)
        await self.deps.store.enforce_limits(self.deps.config.limits, author_id, session.guild_id)

    async def _retryable(self, session: Session, author_id: str, admin: bool) -> LastTurn:
        last = await self.deps.store.last_turn(session.id)
        if last is None:
            raise BadInput("There is no turn to retry in this game yet.")
        if last.author_id != author_id and not admin:
            raise BadInput(f"Only {last.author_name} can retry the last turn (it was theirs).")
        if last.newer:
            raise BadInput("Something happened after that turn, so it can no longer be retried.")
        if last.committed and last.turn.state_before is None:
            raise BadInput("That turn is too old to retry.")
        if last.committed:
            going_back(session.state, last.turn.state_before or "{}", "retried")
        return last

    def _forget(self, session_id: int, turn_ids: list[int]) -> None:
        recall.forget(self.deps, session_id, turn_ids)

def _also(lines: list[Message], *, changed: bool) -> str:
    """What an undo would take back besides the turns, as the question put to whoever asked for it."""
    shown = [" ".join(m.text.split()) for m in lines[:10]]
    listed = "\n".join(f"- {t if len(t) <= 140 else t[:139] + '…'}" for t in shown)
    more = f"\n- and {len(lines) - 10} more" if len(lines) > 10 else ""
    return (("More was done since you were asked. " if changed else "")
            + f"Undoing that also takes back what was done since, outside the story's turns:\n{listed}{more}")
