"""The engine and its store, built in one place for every front end, and drained when the front end stops."""

from __future__ import annotations

import gc
import random
from contextlib import asynccontextmanager
from typing import AsyncIterator, Mapping

from engine import Deps, Engine, EngineConfig, ModelClient, Store
from engine.lore.index import LoreIndex
from engine.providers import close_models
from engine.state import AgentType

from .settings import Settings


@asynccontextmanager
async def running_engine(settings: Settings, config: EngineConfig, models: Mapping[AgentType, ModelClient],
                         rng: random.Random | None = None) -> AsyncIterator[Engine]:
    """An Engine over the settings' database and corpus; background work (summaries) finishes before it closes."""
    if settings.debug is not None:  # LOREKEEPER_DEBUG: the last word on debug mode, below actions, channels, agents
        config = config.model_copy(update={"turn": config.turn.model_copy(update={"debug": settings.debug})})
    async with Store.open(settings.database) as store:
        # The lore index opens cheaply (its chunk list and BM25); Chroma and the embedding model load at first search.
        lore = LoreIndex(settings.lore_path, chroma_host=settings.chroma_host)
        engine = Engine(Deps(store, models, config, settings.corpus, lore=lore, rng=rng or random.Random()))
        settle_heap()
        try:
            yield engine
        finally:
            try:
                await engine.drain()  # a summary still being written is kept, not cut off
            finally:
                await close_models(models)


def settle_heap() -> None:
    """What start-up loaded (modules, SDKs, schemas) lives as long as the process: moved out of the garbage
    collector's reach, so its full passes walk only what games create. Measured: a full pass stalled a turn (and
    so every channel) for ~60 ms; frozen, the worst turn of bench/turn_overhead.py is ~10 ms."""
    gc.collect()
    gc.freeze()
