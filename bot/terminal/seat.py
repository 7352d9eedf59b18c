"""Who plays at this keyboard, in which game, and where their screen is: what the terminal's commands act with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable

from engine import Engine
from engine.state import GameState


@dataclass
class Seat:
    engine: Engine
    channel: str
    user_id: str
    user_name: str
    out: Callable[[str], None] = print
    color: bool = False  # the screen takes colour codes: bold, italics, table headings
    ask: Callable[[str], Awaitable[str]] | None = None  # a question answered at the keyboard (None: a script)

    async def state(self) -> GameState:
        return await self.engine.state(self.channel)
