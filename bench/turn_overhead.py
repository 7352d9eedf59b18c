"""Engine overhead per turn: the scripted model at zero latency, on a session with 200 earlier turns.

Run: .venv/bin/python bench/turn_overhead.py [--history 200] [--turns 300]
Each measured turn is a typical one: the model writes a roll tag, the engine stops it, runs the roll,
continues with the observation, and commits the turn (state, messages, tool log) to SQLite.
Target: p50 <= 15 ms on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.settings import configure_logging  # noqa: E402
from engine import Deps, Engine, ScriptedModel, Store, load_config  # noqa: E402
from engine.state import AgentType  # noqa: E402

REPLY = ["You lunge across the wet planks, reaching for the rope. <roll>1d20+2</roll> the rest is never sent",
         " Your fingers close on it just in time, and the boat swings back against the quay."]


async def main(history: int, turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with Store.open(Path(tmp) / "bench.db") as store:
            model = ScriptedModel(chunk_size=24)
            config = load_config()
            # keep the summarizer out of the measurement: it is a model call, not engine overhead
            config = config.model_copy(update={"turn": config.turn.model_copy(update={"summarize_after": 5000})})
            engine = Engine(Deps(store, {a: model for a in AgentType}, config, ROOT / "corpus", rng=random.Random(1)))
            await engine.start_game("bench")
            await engine.create_character("bench", "u1", "Aria", "fighter")
            for i in range(history):
                model.add(*REPLY)
                await engine.take_turn("bench", "u1", "bob", f"I try something clever, number {i}.")
            samples = []
            for i in range(turns):
                model.add(*REPLY)
                started = time.perf_counter()
                await engine.take_turn("bench", "u1", "bob", f"I grab the rope, attempt {i}.")
                samples.append((time.perf_counter() - started) * 1000)
            await engine.drain()
    samples.sort()
    p50 = statistics.median(samples)
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    print(f"turn overhead, scripted model at zero latency, {history} earlier turns, {turns} measured turns")
    print(f"  p50 {p50:.2f} ms   p99 {p99:.2f} ms   mean {statistics.fmean(samples):.2f} ms   max {samples[-1]:.2f} ms")
    print(f"  target p50 <= 15 ms: {'met' if p50 <= 15 else 'NOT met'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=200)
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    configure_logging("warning")
    asyncio.run(main(args.history, args.turns))
