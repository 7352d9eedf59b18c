"""An off-script campaign: 300 scripted turns that make 20 people, 10 places and 15 things in play and refer back
to each of them 50-250 turns later, through the tools.

Run: .venv/bin/python bench/off_script.py [--turns 300]

The scripted GM makes each addition with create_npc / create_location / create_item, then, a set number of turns
later (50 to 250), uses it: get_npc on the person, change_location to the place (and back), modify_inventory with
the thing (picked up where it lay, or taken from whoever carries it). Printed: how many references resolved (every
tool call ok) and the prompt's size (system prompt, per-turn context and history, in characters) at turn 30 and at
the last turn. Targets (issue #25): every reference resolves; the prompt at turn 300 <= 1.2x turn 30.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import Deps, Engine, ScriptedModel, Store, load_config  # noqa: E402
from engine.basics import AgentType  # noqa: E402

NAMES = ["Gil Marsh", "Nell Tarrow", "Odo Brack", "Wenna Hale", "Cobb Ashdown", "Perrin Vale", "Isolde Crane",
         "Hob Fenwick", "Marta Quill", "Tomas Reedy", "Bess Holloway", "Fenn Carrow", "Ada Lune", "Rook Salter",
         "Jory Wend", "Mab Corrie", "Silas Keel", "Una Drift", "Wat Mallory", "Edda Stone"]
PLACES = ["Smugglers Cove", "Old Salt Mill", "Gull Rock", "Widow's Walk", "Net Lofts", "Chapel of Tides",
          "Drowned Orchard", "Kelp Beds", "Signal Hill", "Brackwater Fen"]
THINGS = ["Cursed Ring", "Sea Chart", "Brass Spyglass", "Drowned Bell", "Oilskin Map", "Whalebone Flute",
          "Coral Key", "Tide Clock", "Lantern Lens Shard", "Smuggler's Ledger", "Salt Idol", "Pearl Comb",
          "Iron Compass", "Kraken Scale", "Storm Glass"]


def prompt_size(request) -> int:
    return len(request.system) + len(request.context) + sum(len(m.content) for m in request.messages)


async def run(turns: int) -> None:
    model = ScriptedModel()
    config = load_config()
    quiet = {a: config.agent(a).model_copy(update={"enabled": False})
             for a in (AgentType.REFEREE, AgentType.PERSONA, AgentType.PLANNER)}
    config = config.model_copy(update={"turn": config.turn.model_copy(update={"summarize_after": 100_000}),
                                       "agents": {**config.agents, **quiet}})
    rng = random.Random(5)
    plan: dict[int, list[str]] = {}  # turn → tags to write that turn
    later: dict[int, list[tuple[str, str]]] = {}  # turn → (kind, name) to refer back to
    made_turns = sorted(rng.sample(range(5, turns - 60), len(NAMES) + len(PLACES) + len(THINGS)))
    kinds = [("npc", n) for n in NAMES] + [("location", p) for p in PLACES] + [("item", t) for t in THINGS]
    rng.shuffle(kinds)
    for at, (kind, name) in zip(made_turns, kinds):
        if kind == "npc":
            tag = f'<create_npc name="{name}" role="townsfolk" description="Someone the party met on turn {at}."/>'
        elif kind == "location":
            tag = f'<create_location name="{name}" exits="saltmere-quay" description="A place found on turn {at}."/>'
        else:
            tag = f'<create_item name="{name}" value="5 gp" carried_by="Aria" description="Found on turn {at}."/>'
        plan.setdefault(at, []).append(tag)
        window = list(range(at + 50, min(at + 250, turns - 1) + 1))
        rng.shuffle(window)  # a turn whose tools are not yet full (tool_quota bounds a turn's calls)
        back = next(t for t in window if len(later.get(t, [])) < 2)
        later.setdefault(back, []).append((kind, name))
    with tempfile.TemporaryDirectory() as tmp:
        async with Store.open(Path(tmp) / "g.db") as store:
            engine = Engine(Deps(store, {a: model for a in AgentType}, config, ROOT / "corpus", rng=random.Random(1)))
            await engine.start_game("c")
            await engine.create_character("c", "u1", "Aria", "fighter")
            resolved, references, failed, sizes = 0, 0, [], {}
            for turn in range(turns):
                tags = list(plan.get(turn, []))
                refs = later.get(turn, [])
                for kind, name in refs:
                    if kind == "npc":
                        tags.append(f'<get_npc npc="{name}"/>')
                    elif kind == "location":
                        tags += [f'<change_location location="{name}"/>', '<change_location location="saltmere-quay"/>']
                    else:
                        tags.append(f'<modify_inventory item="{name}" quantity="-1" character="Aria"/>')
                model.add(*tags, "The fog drifts over the quay as the day goes on.")
                result = await engine.take_turn("c", "u1", "p", f"I go about my business (day {turn}).")
                if turn in (29, turns - 1):
                    sizes[turn + 1] = prompt_size(model.requests[-1])
                calls = {c.name: c for c in result.calls}
                for kind, name in refs:
                    references += 1
                    tool = {"npc": "get_npc", "location": "change_location", "item": "modify_inventory"}[kind]
                    ok = all(c.ok for c in result.calls if c.name == tool)
                    resolved += ok
                    if not ok:
                        failed.append(f"turn {turn}: {kind} {name}: {calls[tool].observation[:120]}")
                bad = [c for c in result.calls if not c.ok]
                if bad and not refs:
                    failed += [f"turn {turn}: {c.name}: {c.observation[:120]}" for c in bad]
            state = await engine.state("c")
            made = {k: sum(1 for e in held.values() if e.made is not None)
                    for k, held in (("npcs", state.npcs), ("locations", state.locations), ("items", state.items))}
    print(f"{turns} turns; made in play: {made['npcs']} people, {made['locations']} places, {made['items']} things")
    print(f"references back (50-250 turns later): {resolved} of {references} resolved through tools; target all: "
          f"{'met' if resolved == references and not failed else 'MISSED'}")
    for line in failed[:10]:
        print("  failed:", line)
    first, last = sizes[30], sizes[turns]
    print(f"prompt size: turn 30 {first:,} characters, turn {turns} {last:,} ({last / first:.2f}x); target <= 1.2x: "
          f"{'met' if last <= 1.2 * first else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    asyncio.run(run(parser.parse_args().turns))


if __name__ == "__main__":
    main()
