"""The engine and its store, built in one place for every front end, and drained when the front end stops."""

from __future__ import annotations

import asyncio
import gc
import random
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator, Callable, Mapping

import structlog

from engine import Deps, Engine, EngineConfig, GameError, ModelClient, Store
from engine.lore.index import LoreIndex
from engine.providers import close_models
from engine.basics import AgentType
from engine.bestiary import bestiary

from .settings import Settings

log = structlog.get_logger(__name__)


@asynccontextmanager
async def running_engine(settings: Settings, config: EngineConfig, models: Mapping[AgentType, ModelClient],
                         rng: random.Random | None = None, say: Callable[[str], None] | None = None,
                         progress: bool = False) -> AsyncIterator[Engine]:
    """An Engine over the settings' database and corpus, its lore index brought up to date first (unless
    LOREKEEPER_LORE_INDEX=off; `say` tells what was done, `progress` shows a bar while embedding); background work
    (summaries) finishes before it closes."""
    if settings.debug is not None:  # LOREKEEPER_DEBUG: the last word on debug mode, below actions, channels, agents
        config = config.model_copy(update={"turn": config.turn.model_copy(update={"debug": settings.debug})})
    async with Store.open(settings.database) as store:
        # The lore index opens cheaply (its chunk list and BM25); Chroma and the embedding model load at first search.
        lore = LoreIndex(settings.lore_path, chroma_host=settings.chroma_host)
        if settings.lore_index == "auto":
            await asyncio.to_thread(index_lore, lore, settings.corpus, say or _log, progress)
        engine = Engine(Deps(store, models, config, settings.corpus, lore=lore, rng=rng or random.Random()))
        # The SRD bestiary (334 stat blocks, ~0.2 s to read and check) is read now, not in the first fight's turn.
        await asyncio.to_thread(bestiary)
        settle_heap()
        try:
            yield engine
        finally:
            try:
                await engine.drain()  # a summary still being written is kept, not cut off
            finally:
                await close_models(models)


def _log(text: str) -> None:
    log.info("lore_index", said=text)


def index_lore(lore: LoreIndex, corpus: Path, say: Callable[[str], None], progress: bool) -> None:
    """Bring the lore index in line with the corpus as a game starts: the first start embeds it all, later ones
    only what changed. A failure is said in one sentence and the game goes on without the lore that failed."""
    if not corpus.is_dir():
        say(f"No corpus folder at {corpus} (LOREKEEPER_CORPUS): the game plays without lore.")
        return
    first = not len(lore)
    if first:
        say("Indexing the lore for the first time (10-15 seconds on two cores; later starts only read what changed) ...")
    started = time.perf_counter()
    try:
        report = lore.ingest(corpus, progress=progress)
    except GameError as exc:
        say(f"The lore could not be indexed ({exc.message}); the game plays without what is missing. "
            f"`lorekeeper lore ingest` says more.")
        return
    except Exception as exc:  # Chroma's own failures (a full disk, a server gone) are not ours to name one by one
        log.warning("lore_index_failed", exc_info=True)
        say(f"The lore could not be indexed ({type(exc).__name__}: {exc}); the game plays without what is "
            f"missing. `lorekeeper lore ingest` says more.")
        return
    if report.changed or report.removed:
        say(f"Lore indexed in {time.perf_counter() - started:.1f} s: {report.summary()}")
    elif report.problems:
        say(f"The lore has {len(report.problems)} problem(s) (`lorekeeper lore ingest` lists them); "
            f"what could be read is in use.")


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
