"""The game's memory in play: each turn's exchange is remembered with the embedding the turn made of the player's
message (stored with the turn), and recalled by words and that vector. This process's view of a game
(engine/lore/memory.py) is loaded from the store when first searched and topped up from it before every recall, so
turns played by another process, or before a restart, are found as well; what was undone anywhere is never recalled.
Turns stored without a vector (games from before, a turn whose embedder was too busy) are embedded in the
background and found by their words meanwhile."""

from __future__ import annotations

import asyncio
from itertools import groupby
from typing import TYPE_CHECKING

import structlog

from .agents import speaker_line
from .basics import AgentType
from .deps import Deps
from .lore.memory import MAX_DOC_CHARS, Exchange, Memory
from .lore.queries import QUERY_TOKENS
from .state import GameState, Message

if TYPE_CHECKING:
    import numpy as np

log = structlog.get_logger(__name__)

INLINE = 20  # exchanges added on the event loop; more (a game loaded whole) are tokenised in a thread
BACKFILL_BATCH = 32


def stored(vector: np.ndarray | None) -> bytes | None:
    """A turn's vector as the store keeps it: float16, 768 bytes."""
    import numpy as np

    return None if vector is None else np.asarray(vector, dtype=np.float16).tobytes()


def exchanges(rows: list[tuple[Message, bytes | None]], state: GameState) -> list[Exchange]:
    """The store's lines grouped into exchanges, one a turn, labelled as history labels them."""
    import numpy as np

    out = []
    for turn_id, group in groupby(rows, key=lambda r: r[0].turn_id):
        lines = list(group)
        messages = [m for m, _ in lines]
        vector = next((v for _, v in lines if v is not None), None)
        out.append(Exchange(
            turn_id=turn_id or 0, first_id=min(m.id for m in messages),
            npc_id=next((m.npc_id for m in messages if m.npc_id), "") or "",
            witnesses=frozenset(w for m in messages for w in m.witnesses),
            text="\n".join(speaker_line(m, state) for m in messages)[:MAX_DOC_CHARS],
            said=next((m.text for m in messages if m.agent is AgentType.PLAYER), ""),
            vector=None if vector is None else np.frombuffer(vector, dtype=np.float16).astype(np.float32)))
    return out


async def catch_up(deps: Deps, session_id: int, state: GameState) -> str:
    """Bring this process's view of the game up to what the store holds; returns the game's key."""
    assert deps.lore is not None
    memory, game = deps.lore.memory, deps.store.game_key(session_id)
    upto = memory.known(game)
    rows = await deps.store.exchanges(session_id, after_turn=upto or 0)
    if rows or upto is None:
        fresh = exchanges(rows, state)
        if len(fresh) > INLINE:
            await asyncio.to_thread(memory.add, game, fresh)
        else:
            memory.add(game, fresh)
    return game


async def recall(deps: Deps, session_id: int, state: GameState, query: str, vector: np.ndarray | None, k: int, *,
                 npc_id: str | None = None, before_id: int | None = None) -> list[Memory]:
    """The exchanges of this game that best match the query, that the reader may know of and that still stand."""
    assert deps.lore is not None
    game = await catch_up(deps, session_id, state)
    found = deps.lore.memory.recall(game, query, vector, k, npc_id=npc_id, before_id=before_id)
    standing = await deps.store.played(session_id, [m.turn_id for m in found])
    return [m for m in found if m.turn_id in standing]


async def remember(deps: Deps, session_id: int, state: GameState) -> int:
    """After a commit: the game's new exchanges into this process's view (if it holds the game), and vectors made
    for those that have none; returns how many were embedded."""
    assert deps.lore is not None
    memory, game = deps.lore.memory, deps.store.game_key(session_id)
    if memory.known(game) is None:
        return 0  # not searched here yet: it is loaded whole when it is
    await catch_up(deps, session_id, state)
    return await backfill(deps, session_id, game)


async def backfill(deps: Deps, session_id: int, game: str) -> int:
    """Embed (a batch at a time, in a thread) the player's words of exchanges stored without a vector, while no
    turn waits for the embedder: under load they stay found by their words alone, and the CPU goes to the turns."""
    import numpy as np

    assert deps.lore is not None
    memory, made = deps.lore.memory, 0
    missing = memory.unembedded(game)
    for at in range(0, len(missing), BACKFILL_BATCH):
        if not deps.lore.queries.idle:
            log.info("memory_embedding_deferred", game=game, left=len(missing) - at)
            break
        batch = missing[at:at + BACKFILL_BATCH]
        vectors = await asyncio.to_thread(deps.lore.embedder.embed, [e.said for e in batch], QUERY_TOKENS)
        await deps.store.save_vectors(session_id, {e.turn_id: stored(v) for e, v in zip(batch, vectors)})
        memory.set_vectors(game, {e.turn_id: v.astype(np.float16).astype(np.float32) for e, v in zip(batch, vectors)})
        made += len(batch)
    if made:
        log.info("memory_embedded", game=game, exchanges=made)
    return made


def forget(deps: Deps, session_id: int, turn_ids: list[int]) -> None:
    """Undone turns out of this process's view (the store dropped their vectors in the undo itself)."""
    if deps.lore is not None:
        deps.lore.memory.forget(deps.store.game_key(session_id), turn_ids)


__all__ = ["backfill", "catch_up", "exchanges", "forget", "recall", "remember", "stored"]
