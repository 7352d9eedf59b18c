"""Many busy channels on one process: turns through the real provider SDK against a loopback model server
(bench/llm_server.py, its own process) that answers every request after a fixed latency.

Run: .venv/bin/python bench/channels.py [--channels 200] [--turns 5] [--latency 1.0] [--provider openai|anthropic]
                                        [--db sqlite|postgresql] [--processes 1] [--no-lore]

Every turn is one roll tag: the first generation stops at the tag, the engine rolls, and a second generation
finishes the reply, so a turn is two model calls. The database is an on-disk SQLite file in WAL mode (or, with
--db postgresql, a real PostgreSQL server started from the pgserver wheel) and the log is written at info level
to a file, as in production. The game is played as shipped: the shipped corpus is ingested first into a lore index
that every turn searches, and the game's memory is written and recalled (`--no-lore` plays without an index, as
this benchmark did before issue #27). The players' lines vary, as players' do; the grounding agents (referee,
persona, planner), which are model calls of their own, are off, as are summaries.

--processes N runs N bot processes on one database, each with its own share of the channels (as shards would),
started together; afterwards every channel's saved game is checked: as many committed turns as were played,
and the state's turn counter agrees (no update lost between processes).

Printed:
- throughput against ideal: the same turns played by one channel alone, times the number of channels (turns in
  different channels share nothing but the process, so they should overlap completely);
- event-loop lag: a ticker that wants to wake every 20 ms records how late it wakes (Discord's heartbeats
  and its 3-second interaction deadline need a loop that answers);
- turn latency p50/p99/max against the one-channel turn, which says how long channels waited on each other.
Targets (issue #10): >= 90% of ideal, lag max <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.runtime import settle_heap  # noqa: E402
from bot.settings import configure_logging  # noqa: E402
from engine import Deps, Engine, Store, load_config  # noqa: E402
from engine.agents import AGENTS  # noqa: E402
from engine.basics import AgentType  # noqa: E402
from engine.lore.index import LoreIndex  # noqa: E402
from engine.providers import ProviderKeys, build_models, close_models  # noqa: E402


class Collections:
    """Time the garbage collector spends, per generation, while installed."""

    def __init__(self) -> None:
        self.count, self.seconds, self._started = [0, 0, 0], [0.0, 0.0, 0.0], 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.count[info["generation"]] += 1
            self.seconds[info["generation"]] += time.perf_counter() - self._started

    def __enter__(self) -> "Collections":
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)

    def __str__(self) -> str:
        return ", ".join(f"gen{g} {n}× {1000 * s:.0f} ms" for g, (n, s) in enumerate(zip(self.count, self.seconds)))


class Ticker:
    """Wakes every `period` seconds and records how late each wake-up was."""

    def __init__(self, period: float = 0.02) -> None:
        self.period, self.late = period, [0.0]
        self.cpu = 0.0  # the process's CPU seconds while the channels played
        self.database_cpu: float | None = None  # PostgreSQL's processes' CPU seconds meanwhile (--db postgresql)
        self.collections: Collections | None = None
        self.embedding_skipped: int | None = None  # turns the embedder was too busy for (they searched by words)
        self.threads: dict[str, float] = {}  # CPU seconds by thread name while the channels played
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + self.period
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            now = loop.time()
            self.late.append(max(0.0, now - due))
            due = max(due + self.period, now)

    def __enter__(self) -> "Ticker":
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "llm_server.py"), "--latency", str(latency)],
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line.startswith("port "):
        server.kill()
        raise SystemExit(f"the model server did not start: {line!r}")
    return server, f"http://127.0.0.1:{int(line.split()[1])}"


LINES = ["I ask around the quay about the lighthouse keeper", "I order a mug of Wrack Stout and listen",
         "What does the harbormaster know about the wreckers?", "I walk up to the lighthouse on Gannet Rock",
         "I search the tide pools below the cliff", "I tell Odile about the green glow we saw last night",
         "I check my pack and count my coins", "I look at the great lens and the empty lamp room",
         "Who rings the harbor bell in the fog?", "I grab the rope and haul the boat in"]


async def play(channels: int, turns: int, url: str, provider: str, db: Path | str,
               profile: str | None = None, first: int = 0, prefix: str = "",
               lore_dir: Path | None = None) -> tuple[float, list[float], Ticker]:
    keys = (ProviderKeys(openai_api_key="bench", openai_base_url=url + "/v1", timeout=120) if provider == "openai"
            else ProviderKeys(anthropic_api_key="bench", anthropic_base_url=url, timeout=120))
    config = load_config()
    config = config.model_copy(update={
        "agents": {a: config.agent(a).model_copy(update={"model": "bench-model", "provider": provider}) for a in AGENTS},
        # a summary is another model call, made in the background: not part of a turn
        "turn": config.turn.model_copy(update={"summarize_after": 5000})})
    for agent in (AgentType.REFEREE, AgentType.PERSONA, AgentType.PLANNER):  # model calls of their own
        config.agents[agent] = config.agent(agent).model_copy(update={"enabled": False})
    models = build_models(config, keys)
    async with Store.open(db) as store:
        lore = LoreIndex(lore_dir) if lore_dir is not None else None
        engine = Engine(Deps(store, models, config, ROOT / "corpus", lore=lore, rng=random.Random(1)))
        ids = [f"bench-{prefix}{provider}-{n}" for n in range(first, first + channels)]
        for cid in ids:
            await engine.start_game(cid)
            await engine.create_character(cid, "u1", "Aria", "fighter")
        latencies: list[float] = []
        settle_heap()  # as the bot does once it has started

        async def channel(cid: str) -> None:
            for t in range(turns):
                started = time.perf_counter()
                line = LINES[(int(cid.rsplit("-", 1)[1]) + t) % len(LINES)]
                await engine.take_turn(cid, "u1", "bob", f"{line}, attempt {t}.")
                latencies.append(time.perf_counter() - started)

        profiler = None
        if profile:
            import cProfile
            profiler = cProfile.Profile()
            profiler.enable()
        with Ticker() as ticker, Collections() as collections:
            before = postgres_cpu() if isinstance(db, str) else None
            threads = thread_cpu()
            started, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(channel(cid) for cid in ids))
            wall = time.perf_counter() - started
            ticker.cpu = time.process_time() - cpu
            after = thread_cpu()
            ticker.threads = {name: t - threads.get(name, 0.0) for name, t in after.items() if t - threads.get(name, 0.0) > 0}
            if before is not None:  # a backend started meanwhile counts whole
                ticker.database_cpu = sum(t - before.get(pid, 0.0) for pid, t in postgres_cpu().items())
        ticker.collections = collections
        if lore is not None:
            ticker.embedding_skipped = lore.queries.skipped
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)
        await engine.drain()
        await close_models(models)
    return wall, latencies, ticker


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of this process's threads, summed by kind (Linux): where the CPU of a turn goes. Python's
    threads by their name's stem (the event loop is MainThread); the others are the libraries' own (onnxruntime's
    pool, Chroma's)."""
    import os
    import re
    import threading
    named = {t.native_id: re.sub(r"[-_ ]?\d+.*$", "", t.name) or t.name for t in threading.enumerate()}
    found: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            name = named.get(int(task.name), "library threads")
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            found[name] = found.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            continue
    return found


def cpu_seconds(pid: int) -> float | None:
    """A process's CPU time so far (Linux), to tell the server's share of the machine from ours."""
    import os
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def postgres_cpu() -> dict[int, float]:
    """CPU seconds so far of every PostgreSQL process on this machine (Linux), by pid: the database server shares
    the cores with the bot here, as it would not in a deployment."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    seconds = cpu_seconds(int(entry.name))
                    if seconds is not None:
                        found[int(entry.name)] = seconds
            except OSError:
                continue
    return found


class Database:
    """Where the runs keep their games: SQLite files in a temporary folder, or databases on a PostgreSQL server."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind, self.folder, self.server = kind, folder, None
        if kind == "postgresql":
            import pgserver
            self.server = pgserver.get_server(folder / "postgres", cleanup_mode="stop")

    def named(self, name: str) -> Path | str:
        if self.server is None:
            return self.folder / f"{name}.db"
        self.server.psql(f"CREATE DATABASE {name};")
        return self.server.get_uri(name)

    def close(self) -> None:
        if self.server is not None:
            self.server.cleanup()


async def main(args: argparse.Namespace) -> None:
    server, url = start_server(args.latency)
    own_cpu = time.process_time()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            configure_logging("info", Path(tmp) / "bench.log")
            database = Database(args.db, Path(tmp))
            lore_dir = None
            if args.lore:
                lore_dir, began = Path(tmp) / "lore", time.perf_counter()
                report = LoreIndex(lore_dir).ingest(ROOT / "corpus")
                print(f"lore: the shipped corpus ingested ({report.chunks_total} chunks, "
                      f"{time.perf_counter() - began:.1f} s); memory written and recalled every turn")
            try:
                one, one_latencies, _ = await play(1, args.turns, url, args.provider, database.named("one"),
                                                   lore_dir=lore_dir)
                if args.processes > 1:
                    return await processes(args, url, database.named("many"), one, server.pid, lore_dir)
                wall, latencies, ticker = await play(args.channels, args.turns, url, args.provider,
                                                     database.named("many"), args.profile, lore_dir=lore_dir)
            finally:
                database.close()
        server_cpu = cpu_seconds(server.pid)
    finally:
        server.terminate()
        server.wait(5)
    total = args.channels * args.turns
    ideal = one  # every channel's turns, fully overlapped, take as long as one channel's
    latencies.sort()
    late = sorted(ticker.late)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"{args.channels} channels × {args.turns} turns, 1 tag per turn, model latency {args.latency:.1f} s, "
          f"{args.provider} SDK against a loopback server, {args.db}, lore {'on' if args.lore else 'off'}")
    print(f"  wall {wall:.1f} s for {total} turns ({total / wall:.1f} turns/s); one channel alone: {one:.1f} s "
          f"for {args.turns} turns")
    print(f"  throughput {100 * ideal / wall:.1f}% of ideal (target >= 90%)")
    print(f"  event-loop lag: max {1000 * late[-1]:.0f} ms, p99 {1000 * late[min(len(late) - 1, int(len(late) * .99))]:.0f} ms "
          f"(target max <= 100 ms)")
    own = time.process_time() - own_cpu
    print(f"  CPU while the channels played: {ticker.cpu:.1f} s ({1000 * ticker.cpu / total:.1f} ms a turn); "
          f"garbage collector: {ticker.collections}")
    print("  CPU by thread: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in
                                        sorted(ticker.threads.items(), key=lambda kv: -kv[1])))
    if ticker.embedding_skipped is not None:
        print(f"  turns embedded: {total - ticker.embedding_skipped} of {total} (the rest searched by their words: "
              f"the embedder was busy)")
    if ticker.database_cpu is not None:
        print(f"  PostgreSQL's processes meanwhile (same machine): {ticker.database_cpu:.1f} s of CPU "
              f"({1000 * ticker.database_cpu / total:.1f} ms a turn)")
    print(f"  CPU: engine process {own:.1f} s" + (f", model server {server_cpu:.1f} s" if server_cpu is not None else "")
          + f" (both runs; 2 cores give {2 * (wall + one):.0f} s in that time)")
    print(f"  turn latency: p50 {statistics.median(latencies):.2f} s, p99 {p99:.2f} s, max {latencies[-1]:.2f} s "
          f"(alone: p50 {statistics.median(one_latencies):.2f} s)")


async def processes(args: argparse.Namespace, url: str, db: Path | str, one: float, server_pid: int,
                    lore_dir: Path | None) -> None:
    """N processes on one database, disjoint channels; then every channel's saved game is checked."""
    import json

    share = args.channels // args.processes
    started = time.perf_counter()
    children = [await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--child", json.dumps({"db": str(db), "url": url, "first": i * share,
                                                        "channels": share, "prefix": f"p{i}-",
                                                        "lore": str(lore_dir) if lore_dir else None}),
        "--turns", str(args.turns), "--provider", args.provider, stdout=asyncio.subprocess.PIPE)
        for i in range(args.processes)]
    reports = []
    for child in children:
        out, _ = await child.communicate()
        if child.returncode != 0:
            raise SystemExit(f"a bot process failed (exit {child.returncode})")
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
    elapsed = time.perf_counter() - started
    async with Store.open(db) as store:
        lost = 0
        for i in range(args.processes):
            for n in range(i * share, (i + 1) * share):
                session = await store.load_session(f"bench-p{i}-{args.provider}-{n}")
                committed = [t for t in await store.turns(session.id) if t["status"] == "ok"]
                lost += (session.state.turn != args.turns) + (len(committed) != args.turns)
    total = share * args.processes * args.turns
    wall = max(r["wall"] for r in reports)
    print(f"{args.processes} processes × {share} channels × {args.turns} turns on one {args.db} database, "
          f"model latency {args.latency:.1f} s, {args.provider} SDK")
    for i, r in enumerate(reports):
        print(f"  process {i}: {r['turns']} turns in {r['wall']:.1f} s, {100 * one / r['wall']:.1f}% of ideal, "
              f"loop lag max {r['lag_max_ms']:.0f} ms, turn p50 {r['p50']:.2f} s, CPU {r['cpu']:.1f} s")
    print(f"  together: {total} turns in {wall:.1f} s ({total / wall:.1f} turns/s; {elapsed:.1f} s with start-up)")
    print(f"  saved games checked: {share * args.processes} channels, "
          f"{'no update lost' if not lost else f'{lost} MISMATCHES (lost or extra turns)'}")


async def child(spec: str, args: argparse.Namespace) -> None:
    import json

    given = json.loads(spec)
    with tempfile.TemporaryDirectory() as tmp:
        configure_logging("info", Path(tmp) / "bench.log")
        cpu = time.process_time()
        wall, latencies, ticker = await play(given["channels"], args.turns, given["url"], args.provider, given["db"],
                                             first=given["first"], prefix=given["prefix"],
                                             lore_dir=Path(given["lore"]) if given.get("lore") else None)
    print(json.dumps({"wall": wall, "turns": len(latencies), "lag_max_ms": 1000 * max(ticker.late),
                      "p50": statistics.median(latencies), "cpu": time.process_time() - cpu}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--provider", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--profile", help="write a cProfile of the timed part (the many channels) to this file")
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--processes", type=int, default=1, help="bot processes sharing the database")
    parser.add_argument("--no-lore", dest="lore", action="store_false",
                        help="play without a lore index or game memory (the game as shipped has both)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    asyncio.run(child(arguments.child, arguments) if arguments.child else main(arguments))
