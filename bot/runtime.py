"""The engine and its store, built in one place for every front end, and drained when the front end stops."""

from __future__ import annotations

import gc
import random
from contextlib import asynccontextmanager
from typing import AsyncIterator, Mapping

from engine import Deps, Engine, EngineConfig, ModelClient, Store
from engine.lore.index import LoreIndex
from engine.providers import close_models
from engine.basics import AgentType

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


# The collector's thresholds once the bot runs: a young pass every 20,000 new container objects instead of 700.
# A turn allocates thousands (a parsed game state alone is ~460 of them), so the defaults ran ~700 young passes,
# ~65 middle and ~5 full ones (~180 ms each, every channel stalled meanwhile) per 1,000 turns at 200 busy channels,
# ~2 s of CPU in all; with these, 9 young passes and nothing else (bench/channels.py prints the figures). Plain
# data is freed by reference counting whatever the thresholds: the collector is only for cycles.
COLLECT_EVERY = (20_000, 20, 20)


def settle_heap() -> None:
    """What start-up loaded (modules, SDKs, schemas) lives as long as the process: moved out of the garbage
    collector's reach, so its full passes walk only what games create. Measured: a full pass stalled a turn (and
    so every channel) for ~60 ms; frozen, the worst turn of bench/turn_overhead.py is ~10 ms. Then the collector
    runs less often (COLLECT_EVERY)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECT_EVERY)
