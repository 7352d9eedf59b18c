"""The pre-flight suggestor against a labelled set: precision, recall and F1 per rule and overall, and speed.

Run: .venv/bin/python bench/suggestions.py [--half dev|test|all] [--show-misses]
Rules are tuned on the dev half (even entries) only; the test half (odd entries) is the held-out figure.
Targets (issue #9): micro F1 >= 0.8 over the whole set; p99 <= 1 ms for a 2,000-character message.

bench/suggestion_set.yaml holds player messages (written in other words than the rules use) with the tools a
careful GM would call. The game is the starter adventure at its start (party on Saltmere Quay, Ysolde there,
both quests offered); combat messages are played in a fight with two Giant Rats. The whole-set figures count
what `suggest` returns with the configured limit (3); the per-rule figures count each rule on its own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.characters import make_character  # noqa: E402
from engine.content import find_adventure  # noqa: E402
from engine.state import AgentType, GameState, Participant  # noqa: E402
from engine.suggestions import RULES, Situation, suggest  # noqa: E402

SET = Path(__file__).resolve().parent / "suggestion_set.yaml"
LIMIT = 3


def game(combat: bool) -> GameState:
    state = find_adventure(ROOT / "corpus", "saltmere-lantern").new_game(seed=1)
    state.characters["u1"] = make_character("u1", "Aria", "fighter")
    state.party.player_ids.append("u1")
    if combat:
        state.combat.active = True
        state.combat.round = 1
        state.combat.order = [
            Participant(id="u1", name="Aria", faction="player", initiative=15, ac=16),
            Participant(id="rat-1", name="Giant Rat 1", faction="enemy", initiative=12, ac=12, hp=7, max_hp=7,
                        attacks="Bite +4, 1d4+2"),
            Participant(id="rat-2", name="Giant Rat 2", faction="enemy", initiative=8, ac=12, hp=7, max_hp=7,
                        attacks="Bite +4, 1d4+2")]
    return state


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-misses", action="store_true", help="print every message whose suggestions differ")
    parser.add_argument("--half", choices=["dev", "test", "all"], default="all",
                        help="dev: the even entries rules are tuned on; test: the odd ones, held out")
    args = parser.parse_args()
    entries = yaml.safe_load(SET.read_text("utf-8"))
    if args.half != "all":
        entries = entries[0 if args.half == "dev" else 1::2]
    states = {False: game(False), True: game(True)}
    npc = states[False].npcs["ysolde-marrick"]
    tp = fp = fn = 0
    per_rule: dict[str, Counter] = {name: Counter() for name, _, _ in RULES}
    per_tool: dict[str, Counter] = {}
    misses = []
    for e in entries:
        agent = AgentType(e["agent"])
        state = states[agent is AgentType.COMBAT]
        who = npc if agent is AgentType.NPC else None
        expected = set(e["tools"])
        got = {s.tool for s in suggest(state, e["text"], agent, who, LIMIT)}
        tp += len(got & expected)
        fp += len(got - expected)
        fn += len(expected - got)
        for tool in got | expected:
            c = per_tool.setdefault(tool, Counter())
            c["tp"] += tool in got and tool in expected
            c["fp"] += tool in got and tool not in expected
            c["fn"] += tool in expected and tool not in got
        if got != expected:
            misses.append((e["text"], sorted(expected), sorted(got)))
        situation = Situation(state, e["text"].lower(), agent, who)
        for name, agents, fn_rule in RULES:
            if agent not in agents:
                continue
            for s in fn_rule(situation):
                per_rule[name]["tp" if s.tool in expected else "fp"] += 1
    print(f"{len(entries)} labelled messages ({args.half}); suggestions limited to {LIMIT} a message\n")
    print(f"{'rule':28} {'fired':>6} {'precision':>10}")
    for name, c in per_rule.items():
        fired = c["tp"] + c["fp"]
        print(f"{name:28} {fired:6d} {c['tp'] / fired if fired else 0:10.2f}")
    print(f"\n{'tool':22} {'precision':>10} {'recall':>8} {'F1':>6}")
    for tool, c in sorted(per_tool.items()):
        p, r, f = prf(c["tp"], c["fp"], c["fn"])
        print(f"{tool:22} {p:10.2f} {r:8.2f} {f:6.2f}")
    p, r, f = prf(tp, fp, fn)
    print(f"\nwhole set (micro): precision {p:.3f}, recall {r:.3f}, F1 {f:.3f}; target F1 >= 0.8: "
          f"{'met' if f >= 0.8 else 'MISSED'}")
    timings = []
    for e in entries:
        agent = AgentType(e["agent"])
        text = (e["text"] + " ") * (2000 // (len(e["text"]) + 1) + 1)
        text = text[:2000]
        for _ in range(3):
            started = time.perf_counter()
            suggest(states[agent is AgentType.COMBAT], text, agent, npc if agent is AgentType.NPC else None, LIMIT)
            timings.append(time.perf_counter() - started)
    timings.sort()
    p99 = timings[int(len(timings) * 0.99) - 1] * 1000
    print(f"2,000-character messages: p50 {statistics.median(timings) * 1000:.3f} ms, p99 {p99:.3f} ms, "
          f"max {timings[-1] * 1000:.3f} ms; target p99 <= 1 ms: {'met' if p99 <= 1 else 'MISSED'}")
    if args.show_misses:
        print("\nmessages whose suggestions differ (expected → got):")
        for text, want, got in misses:
            print(f"  {text[:90]!r}: {want} → {got}")


if __name__ == "__main__":
    main()
