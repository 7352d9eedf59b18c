"""Which agent answers a message: an NPC addressed by @Name, the combat agent, or the narrator."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import BadInput
from .basics import AgentType
from .entities import NPC
from .state import GameState

_MENTION = re.compile(r"(?<![\w<])@(?=\w)")


@dataclass(frozen=True)
class Route:
    agent: AgentType
    npc: NPC | None = None


def mentioned_npc(state: GameState, text: str) -> NPC | None:
    """The first NPC named right after an '@', by full name, id or first name (longest match wins)."""
    lowered = text.lower()
    for m in _MENTION.finditer(lowered):
        after = lowered[m.end():]
        best: tuple[int, NPC] | None = None
        for npc in state.npcs.values():
            for alias in {npc.name.lower(), npc.id, npc.name.lower().split()[0]}:
                if after.startswith(alias) and not after[len(alias):len(alias) + 1].isalnum():
                    if best is None or len(alias) > best[0]:
                        best = (len(alias), npc)
        if best is not None:
            return best[1]
    return None


def route(state: GameState, text: str) -> Route:
    """Pick the agent for a player's message; an @NPC who is elsewhere is a clear error."""
    npc = mentioned_npc(state, text)
    if npc is not None:
        if npc not in state.present_npcs():
            raise BadInput(f"{npc.name} is not here.")
        if npc.hp == 0:
            raise BadInput(f"{npc.name} is unconscious and cannot answer.")
        return Route(AgentType.NPC, npc)
    if state.combat.active:
        return Route(AgentType.COMBAT)
    return Route(AgentType.NARRATIVE)
