"""How much the database grows a turn over a long game.

Run: .venv/bin/python bench/db_growth.py [--turns 1000]

One game of `--turns` turns with the scripted model on an on-disk SQLite database in WAL mode, as in production:
replies of a few hundred characters that cycle through 0, 1 and 3 tool tags, the 3-tag ones changing the state (a
roll, an item given, hit points lost or healed), every tenth turn a player's own roll between turns. The file is
measured (after a WAL checkpoint) after the first 100 turns and at the end, and the growth between is divided by the
turns between, so the one-off cost of a new game and its first pages is left out. Per table, SQLite's dbstat says
what each holds at the end.

Target (issue #24): <= 4 KB of growth per turn over a 1,000-turn game.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.settings import configure_logging  # noqa: E402
from engine import Deps, Engine, ScriptedModel, Store, load_config  # noqa: E402
from engine.basics import AgentType  # noqa: E402

SCENE = ("The tide turns grey and the gulls fall silent over the harbour. Somewhere a bell answers the wind, and the "
         "quay smells of tar and old rope. A fisherman mends his net by the steps and does not look up as you pass. ")
REPLIES = [
    [SCENE + "Nothing stirs on the water but the mist."],
    ["You lunge across the wet planks, reaching for the rope. <roll>1d20+2</roll>",
     " Your fingers close on it just in time, and the boat swings back against the quay. " + SCENE],
    ["You pry the crate open. <roll reason=\"Aria's strength\">1d20+2</roll>",
     " The lid gives, and inside lies a coil of rope. <modify_inventory item=\"rope\" quantity=\"1\"/>",
     " A nail bites your palm as you lift it out. <update_hp target=\"Aria\" amount=\"1\" kind=\"{kind}\"/>",
     " You wrap the hand and sling the rope over your shoulder. " + SCENE],
]


def size(path: Path) -> int:
    """The database file's size once the write-ahead log is folded into it."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def tables(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        try:
            found = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
        except sqlite3.OperationalError:  # a SQLite built without dbstat
            return {}
    return dict(found)


async def main(turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        configure_logging("info", Path(tmp) / "bench.log")
        db = Path(tmp) / "bench.db"
        async with Store.open(db) as store:
            model = ScriptedModel(chunk_size=24)
            config = load_config()
            config = config.model_copy(update={"turn": config.turn.model_copy(update={"summarize_after": 5000})})
            engine = Engine(Deps(store, {a: model for a in AgentType}, config, ROOT / "corpus", rng=random.Random(1)))
            await engine.start_game("bench")
            await engine.create_character("bench", "u1", "Aria", "fighter")
            marks: dict[int, int] = {}
            for i in range(turns):
                parts = [p.replace("{kind}", "damage" if i % 2 else "healing") for p in REPLIES[i % 3]]
                model.add(*parts)
                await engine.take_turn("bench", "u1", "bob", f"I grab the rope and look around, attempt {i}.")
                if i % 10 == 9:
                    await engine.record_roll("bench", "u1", "bob", engine.roll("1d20+3"), "perception")
                if i + 1 in (100, turns):
                    marks[i + 1] = size(db)
            await engine.drain()
        per_turn = (marks[turns] - marks[100]) / (turns - 100)
        print(f"database growth over a {turns}-turn game (SQLite, WAL checkpointed), from turn 100 to {turns}:")
        print(f"  {per_turn / 1024:.2f} KB a turn   (file {marks[turns] / 1024:.0f} KB at the end)   "
              f"target <= 4 KB: {'met' if per_turn <= 4096 else 'MISSED'}")
        for name, pages in tables(db).items():
            print(f"  {name:32s} {pages / 1024:8.0f} KB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args()
    if args.turns <= 100:
        raise SystemExit("--turns must be over 100 (growth is measured from turn 100)")
    asyncio.run(main(args.turns))
