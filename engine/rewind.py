"""Going back: /undo puts a channel's game back as it was before its last turns; /retry's checks (a part of Engine)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from .core import Core
from .errors import BadInput
from .state import GameState
from .store import LastTurn, Session

log = structlog.get_logger(__name__)

MAX_UNDO = 20


def _same_players(now: GameState, before_json: str, verb: str) -> None:
    """Refuse to put back a state from before a character joined the game or a player joined or left the party:
    those write no log line, and going back would quietly undo them along with the turns."""
    before = GameState.model_validate_json(before_json)
    joined = [c.name for owner, c in now.characters.items() if owner not in before.characters]
    moved = [now.characters[owner].name for owner in set(now.party.player_ids) ^ set(before.party.player_ids)
             if owner in now.characters and owner in before.characters]
    if joined:
        raise BadInput(f"{' and '.join(sorted(joined))} joined the game after that, so it can no longer be {verb}: "
                       f"going back would take {'them' if len(joined) > 1 else 'that character'} out of the game.")
    if moved:
        raise BadInput(f"{' and '.join(sorted(moved))} joined or left the party after that, so it can no longer be "
                       f"{verb} (going back would undo that too).")


@dataclass(frozen=True)
class Undone:
    turns: int
    messages: int  # log lines now marked undone
    state: GameState  # the state the game is back at


class Rewind(Core):
    """Undo, and what a retry checks first, on Engine."""

    async def undo(self, channel_id: str, n: int = 1) -> Undone:
        """Revert the channel's last `n` committed turns: the state goes back to what the oldest of them started
        from, byte for byte, and their log lines (and anything after) stay in the log marked undone."""
        if not 1 <= n <= MAX_UNDO:
            raise BadInput(f"Undo takes 1 to {MAX_UNDO} turns.")
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            turns = await self.deps.store.undoable_turns(session.id, n)
            if not turns:
                raise BadInput("There is no turn to undo in this game.")
            if len(turns) < n:
                raise BadInput(f"Only {len(turns)} turn{'s' if len(turns) > 1 else ''} of this game can be undone.")
            if any(t.state_before is None for t in turns):
                raise BadInput("That turn was played before this version of Lorekeeper kept what undo needs; "
                               "it cannot be undone.")
            _same_players(session.state, turns[-1].state_before or "{}", "undone")
            undone = await self.deps.store.undo_turns(session.id, turns, version=session.version)
        self._forget(session.id, [t.id for t in turns])
        log.info("turns_undone", channel_id=channel_id, turns=len(turns), messages=len(undone))
        return Undone(len(turns), len(undone), GameState.model_validate_json(turns[-1].state_before or "{}"))

    async def check_retry(self, channel_id: str, author_id: str, *, admin: bool = False) -> None:
        """What would refuse a retry, before a front end shows anything (refusals can then stay private)."""
        session = await self.session(channel_id)
        await self._retryable(session, author_id, admin)
        await self.deps.store.enforce_limits(self.deps.config.limits, author_id, session.guild_id, rate=False)

    async def _retryable(self, session: Session, author_id: str, admin: bool) -> LastTurn:
        last = await self.deps.store.last_turn(session.id)
        if last is None:
            raise BadInput("There is no turn to retry in this game yet.")
        if last.author_id != author_id and not admin:
            raise BadInput(f"Only {last.author_name} can retry the last turn (it was theirs).")
        if last.newer:
            raise BadInput("Something happened after that turn, so it can no longer be retried.")
        if last.committed and last.turn.state_before is None:
            raise BadInput("That turn was played before this version of Lorekeeper kept what retry needs.")
        if last.committed:
            _same_players(session.state, last.turn.state_before or "{}", "retried")
        return last

    def _forget(self, session_id: int, turn_ids: list[int]) -> None:
        if self.deps.lore is not None:
            memory, game = self.deps.lore.memory, self.deps.store.game_key(session_id)
            self._later(f"forget:{session_id}", asyncio.to_thread(memory.forget, game, turn_ids))
