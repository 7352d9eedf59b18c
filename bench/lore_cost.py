"""What lore and the game's memory cost a turn: the same turns played with them on and off, side by side.

Run: .venv/bin/python bench/lore_cost.py [--history 60] [--turns 60] [--rounds 3]

Two engines share nothing but the process: one with the shipped corpus ingested into a fresh lore index (the
passages searched every turn, the game's memory written after every turn and recalled once the history window
is full), one with no index. Both play the scripted model at zero latency on an on-disk SQLite database in WAL
mode, with info logging to a file, as bench/turn_overhead.py does. After `--history` turns each (so recall has
something older than the window to find), blocks of turns are played alternately on each engine; each block ends
by waiting for its background work (the memory write), so a block's CPU is all of its turns' work.

Printed: CPU per turn (every thread of the process: onnxruntime's included) and wall time per turn, with lore on
and off, and their ratio. Target (issue #27): CPU per turn with lore and memory on <= 2x the same turn without.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.runtime import settle_heap  # noqa: E402
from bot.settings import configure_logging  # noqa: E402
from engine import Deps, Engine, ScriptedModel, Store, load_config  # noqa: E402
from engine.basics import AgentType  # noqa: E402
from engine.lore.index import LoreIndex  # noqa: E402

# Players' lines that touch the shipped corpus (people, places, the plot) and some that do not.
LINES = ["I ask around the quay about the lighthouse keeper.", "I order a mug of Wrack Stout and listen.",
         "What does the harbormaster know about the wreckers?", "I walk up to the lighthouse on Gannet Rock.",
         "I search the tide pools below the cliff.", "I tell Odile about the green glow we saw last night.",
         "I check my pack and count my coins.", "I look at the great lens and the empty lamp room.",
         "Who rings the harbor bell in the fog?", "I sharpen my sword by the fire and wait for dawn."]
REPLY = ["The wind drops and the gulls settle on the rail. <roll>1d20+2</roll> the rest is never sent",
         " Nobody answers, but the lamp in the chandlery window flickers twice, as if someone were listening."]


def cpu() -> float:
    return time.process_time()  # user + system time of every thread of this process


async def block(engine: Engine, model: ScriptedModel, turns: int, start: int) -> tuple[float, float]:
    """CPU and wall seconds per turn for `turns` turns, their background work included."""
    used, began = cpu(), time.perf_counter()
    for i in range(start, start + turns):
        model.add(*REPLY)
        result = await engine.take_turn("bench", "u1", "bob", f"{LINES[i % len(LINES)]} ({i})")
        if not result.reply:
            raise SystemExit(f"turn {i} failed")
    await engine.drain()
    return (cpu() - used) / turns, (time.perf_counter() - began) / turns


async def table(stack: contextlib.AsyncExitStack, tmp: Path, name: str, lore: LoreIndex | None
                ) -> tuple[Engine, ScriptedModel]:
    store = await stack.enter_async_context(Store.open(tmp / f"{name}.db"))
    model = ScriptedModel(chunk_size=24)
    config = load_config()
    # The summary and the grounding agents (referee, persona) are model calls of their own, not the turn's work.
    quiet = {a: config.agent(a).model_copy(update={"enabled": False})
             for a in (AgentType.REFEREE, AgentType.PERSONA, AgentType.PLANNER)}
    config = config.model_copy(update={"turn": config.turn.model_copy(update={"summarize_after": 5000}),
                                       "agents": {**config.agents, **quiet}})
    engine = Engine(Deps(store, {a: model for a in AgentType}, config, ROOT / "corpus", lore=lore,
                         rng=random.Random(1)))
    await engine.start_game("bench")
    await engine.create_character("bench", "u1", "Aria", "fighter")
    return engine, model


async def measure(tmp: Path, history: int, turns: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    configure_logging("info", tmp / "bench.log")
    index = LoreIndex(tmp / "lore")
    began = time.perf_counter()
    report = index.ingest(ROOT / "corpus")
    print(f"ingest of the shipped corpus: {report.chunks_total} chunks in {time.perf_counter() - began:.1f} s "
          f"(model load included)")
    figures: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
    async with contextlib.AsyncExitStack() as stack:
        tables = {"on": await table(stack, tmp, "on", index), "off": await table(stack, tmp, "off", None)}
        for engine, model in tables.values():
            await block(engine, model, history, 0)
        settle_heap()
        for r in range(rounds):  # alternately first, so neither always plays on a machine the other just warmed
            for name in ("on", "off") if r % 2 == 0 else ("off", "on"):
                engine, model = tables[name]
                figures[name].append(await block(engine, model, turns, history + r * turns))
    return figures


async def main(history: int, turns: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        figures = await measure(Path(folder), history, turns, rounds)
    cpu_on, cpu_off = (statistics.median(c for c, _ in figures[k]) * 1000 for k in ("on", "off"))
    wall_on, wall_off = (statistics.median(w for _, w in figures[k]) * 1000 for k in ("on", "off"))
    print(f"{rounds} rounds of {turns} turns per engine, after {history} turns each; medians of the rounds")
    print(f"  lore and memory on:  CPU {cpu_on:.1f} ms a turn   wall {wall_on:.1f} ms a turn")
    print(f"  lore and memory off: CPU {cpu_off:.1f} ms a turn   wall {wall_off:.1f} ms a turn")
    ratio = cpu_on / cpu_off
    print(f"  ratio {ratio:.1f}x   target <= 2x: {'met' if ratio <= 2 else 'MISSED'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=60)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.history, args.turns, args.rounds))
