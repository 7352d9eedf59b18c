"""Engine overhead per turn: the scripted model at zero latency, on a session with 200 earlier turns.

Run: .venv/bin/python bench/turn_overhead.py [--history 200] [--turns 300] [--stream]
Each measured turn is a typical one: the model writes a roll tag, the engine stops it, runs the roll,
continues with the observation, and commits the turn (state, messages, tool log) to SQLite.
Target: p50 <= 15 ms on a 2-core machine.
--stream measures what streaming adds: turns alternate between no listener and the terminal's renderer
(Markdown, wrapping, colour codes, written to nowhere), told the visible reply after every model chunk.
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
from bot.terminal.session import Stream  # noqa: E402
from engine import Deps, Engine, ScriptedModel, Store, load_config  # noqa: E402
from engine.state import AgentType  # noqa: E402

REPLY = ["You lunge across the wet planks, reaching for the rope. <roll>1d20+2</roll> the rest is never sent",
         " Your fingers close on it just in time, and the boat swings back against the quay."]


def figures(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


async def main(history: int, turns: int, stream: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with Store.open(Path(tmp) / "bench.db") as store:
            model = ScriptedModel(chunk_size=8 if stream else 24)  # providers' chunks are a few tokens each
            config = load_config()
            # keep the summarizer out of the measurement: it is a model call, not engine overhead
            config = config.model_copy(update={"turn": config.turn.model_copy(update={"summarize_after": 5000})})
            engine = Engine(Deps(store, {a: model for a in AgentType}, config, ROOT / "corpus", rng=random.Random(1)))
            await engine.start_game("bench")
            await engine.create_character("bench", "u1", "Aria", "fighter")
            for i in range(history):
                model.add(*REPLY)
                await engine.take_turn("bench", "u1", "bob", f"I try something clever, number {i}.")
            samples: list[float] = []
            streamed: list[float] = []
            for i in range(turns):
                model.add(*REPLY)
                show = Stream(lambda _: None, ansi=True).show if stream and i % 2 else None
                started = time.perf_counter()
                await engine.take_turn("bench", "u1", "bob", f"I grab the rope, attempt {i}.", show=show)
                (streamed if show else samples).append((time.perf_counter() - started) * 1000)
            await engine.drain()
    if stream:
        (p50, p99), (s50, s99) = figures(samples), figures(streamed)
        print(f"streaming cost, {len(samples)} turns without a listener and {len(streamed)} with the terminal's "
              f"renderer, alternating, {len(REPLY[0] + REPLY[1]) // 8} model chunks per turn")
        print(f"  without: p50 {p50:.2f} ms   p99 {p99:.2f} ms")
        print(f"  with:    p50 {s50:.2f} ms   p99 {s99:.2f} ms   (+{s50 - p50:.2f} ms at p50)")
        return
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
    parser.add_argument("--stream", action="store_true", help="measure what streaming to the terminal adds")
    args = parser.parse_args()
    configure_logging("warning")
    asyncio.run(main(args.history, args.turns, args.stream))
