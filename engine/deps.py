"""What the engine works with (store, models, config, lore, dice), built once by a front end and passed down."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable, Mapping

from .config import EngineConfig
from .lore.index import LoreIndex
from .models import ModelClient
from .basics import AgentType
from .store import Store


@dataclass
class Deps:
    """Everything the engine uses, built once by the front end (bot/runtime.py) and passed in."""

    store: Store
    models: Mapping[AgentType, ModelClient]
    config: EngineConfig
    corpus_dir: Path
    lore: LoreIndex | None = None  # the lore index, when there is one (`lorekeeper lore ingest`)
    rng: random.Random = field(default_factory=random.Random)  # new sessions' seeds and table rolls
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
