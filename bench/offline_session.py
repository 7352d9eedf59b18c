"""A scripted 10-turn session with the offline game master: does every declared purchase, quest acceptance,
potion and journey change the game state, and how long does a turn take?

Run: .venv/bin/python bench/offline_session.py [--provider local] [--two-step on|off] [--show]
One player (Aria, a fighter who starts wounded) plays ten messages through the real engine in the starter
adventure, one after the other, as at a table. After each turn the state is compared with what the message
declared (coin spent, quest taken, potion drunk and HP regained, place reached; plain talk changes nothing).
Temperature 0, so runs compare. Prints each turn, the checks passed, and the median and slowest turn.
--show prints each reply in full (otherwise its first line).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bot.settings import configure_logging  # noqa: E402
from engine import Deps, Engine, GameError, Store  # noqa: E402
from engine.state import GameState  # noqa: E402
from tool_coverage import configured  # noqa: E402

CHANNEL = "session"
Check = Callable[[GameState, GameState], bool]


def purse(state: GameState) -> int:
    return state.characters["u1"].currency.total_cp()


def potions(state: GameState) -> int:
    item = state.characters["u1"].item("healing potion")
    return item.quantity if item else 0


def at(place: str) -> Check:
    return lambda before, after: after.current_location == place


def paid(before: GameState, after: GameState) -> bool:
    return purse(after) < purse(before)


def quest_taken(before: GameState, after: GameState) -> bool:
    return after.quests["relight-the-lantern"].status == "active"


def drank(before: GameState, after: GameState) -> bool:
    return potions(after) == potions(before) - 1 and after.characters["u1"].hp > before.characters["u1"].hp


def unchanged(before: GameState, after: GameState) -> bool:
    """Plain talk: no coin, item, place, quest or hit point moves."""
    b, a = before.characters["u1"], after.characters["u1"]
    return (a.inventory == b.inventory and a.currency == b.currency and a.hp == b.hp
            and after.current_location == before.current_location
            and [q.status for q in after.quests.values()] == [q.status for q in before.quests.values()])


@dataclass
class Step:
    message: str
    kind: str  # what the message declares: travel, purchase, quest, potion, talk
    check: Check


SESSION = [
    Step("I walk over to the Brine Cup tavern.", "travel", at("brine-cup-tavern")),
    Step("@Odile I'll take a room for the night. Here are two gold pieces.", "purchase", paid),
    Step("What does the taproom look like tonight?", "talk", unchanged),
    Step("I buy a bowl of fish stew from Odile and pay her 5 copper.", "purchase", paid),
    Step("I head back out to the quay.", "travel", at("saltmere-quay")),
    Step("@Ysolde We accept. We will find the lantern and bring it back.", "quest", quest_taken),
    Step("I drink my healing potion.", "potion", drank),
    Step("I go to the Keeper's Cottage.", "travel", at("keepers-cottage")),
    Step("Who lives here? I knock politely.", "talk", unchanged),
    Step("I walk back down to the quay.", "travel", at("saltmere-quay")),
]
_LABEL = re.compile(r"^\s*\[?([A-Z][\w' ]{1,40})\]?:")


def speaks_as_someone(reply: str, state: GameState) -> str | None:
    """A narrator's reply that opens with a speaker's label: the narrator speaking as an NPC or a player."""
    m = _LABEL.match(reply)
    if m is None:
        return None
    name = m.group(1).strip()
    names = [n.name for n in state.npcs.values()] + [c.name for c in state.characters.values()]
    return name if any(name.split()[0] in n for n in names) else None


async def play(provider: str, two_step: bool | None, show: bool) -> None:
    config, models = configured(provider, True, "flag", two_step)
    rows, seconds = [], []
    with tempfile.TemporaryDirectory() as tmp:
        async with Store.open(Path(tmp) / "session.db") as store:
            engine = Engine(Deps(store, models, config, ROOT / "corpus", rng=random.Random(7)))
            await engine.start_game(CHANNEL)
            await engine.create_character(CHANNEL, "u1", "Aria", "fighter")
            session = await engine.session(CHANNEL)
            session.state.characters["u1"].hp = 4  # she comes ashore wounded: the potion has work to do
            await store.save_state(session.id, session.state)
            for n, step in enumerate(SESSION, start=1):
                before = await engine.state(CHANNEL)
                started = time.perf_counter()
                try:
                    result = await engine.take_turn(CHANNEL, "u1", "sam", step.message)
                    reply, calls, agent = result.reply, [c.name for c in result.calls if c.ok], result.agent.value
                except GameError as exc:
                    reply, calls, agent = f"turn failed: {exc.message[:80]}", [], "-"
                seconds.append(time.perf_counter() - started)
                await engine.drain()
                after = await engine.state(CHANNEL)
                ok = step.check(before, after)
                voiced = speaks_as_someone(reply, after) if agent == "narrative" else None
                rows.append((step, ok))
                first = reply if show else (reply.strip().splitlines() or [""])[0][:90]
                print(f"{n:>2}. [{step.kind:8}] {'ok  ' if ok else 'MISS'} {seconds[-1]:5.1f}s {agent:9} "
                      f"{', '.join(calls) or '-':40} {step.message}")
                print(f"      ↳ {first}" + (f"   (narrator spoke as {voiced})" if voiced else ""))
    declared = [(s, ok) for s, ok in rows if s.kind != "talk"]
    talk = [(s, ok) for s, ok in rows if s.kind == "talk"]
    print(f"\nprovider={provider}, two-step {'default' if two_step is None else ('on' if two_step else 'off')}: "
          f"declared changes made {sum(ok for _, ok in declared)}/{len(declared)} "
          f"(travel, purchase, quest, potion); talk turns that changed nothing {sum(ok for _, ok in talk)}/{len(talk)}")
    print(f"turn seconds: median {statistics.median(seconds):.1f}, slowest {max(seconds):.1f}, "
          f"total {sum(seconds):.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="local", choices=["local", "anthropic", "openai"])
    parser.add_argument("--two-step", choices=["on", "off"])
    parser.add_argument("--show", action="store_true", help="print each reply in full")
    args = parser.parse_args()
    configure_logging("error")
    asyncio.run(play(args.provider, None if args.two_step is None else args.two_step == "on", args.show))
