"""The pre-flight tool suggestor: cheap heuristics that remind an agent which tools fit the player's message."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Callable

import structlog

from .state import NPC, AgentType, GameState
from .tools import TOOLS
from .tools.combat import participant_hp

log = structlog.get_logger(__name__)

N, C, P = AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC


@dataclass(frozen=True)
class Suggestion:
    tool: str
    reason: str
    confidence: float
    args: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        label = "highly recommended" if self.confidence >= 0.8 else "recommended" if self.confidence >= 0.5 else "optional"
        args = " ".join(f'{k}="{v}"' for k, v in self.args.items())
        example = f" e.g. <{self.tool} {args}/>" if args else ""
        return f"- {self.tool} ({label}): {self.reason}.{example}"


@dataclass(frozen=True)
class Situation:
    state: GameState
    text: str  # the player's message, lowercased
    agent: AgentType
    npc: NPC | None


Rule = Callable[[Situation], list[Suggestion]]
RULES: list[tuple[str, frozenset[AgentType], Rule]] = []


def rule(*agents: AgentType) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES.append((fn.__name__, frozenset(agents), fn))
        return fn
    return register


def _has(text: str, pattern: str) -> bool:
    return re.search(pattern, text) is not None


def _near(text: str, first: re.Pattern[str], then: re.Pattern[str], gap: int = 60) -> bool:
    """Whether a match of `first` is followed within `gap` characters, in the same sentence, by one of `then`.

    Two linear scans merged, not one pattern with a gap: a message full of verbs and no noun would make
    that pattern backtrack at every verb (a 2,000-character message took up to 40 ms)."""
    ends = [m.end() for m in first.finditer(text)]
    if not ends:
        return False
    stops = [m.start() for m in _SENTENCE_STOP.finditer(text)]
    i = 0
    for m in then.finditer(text):
        while i + 1 < len(ends) and ends[i + 1] <= m.start():
            i += 1
        end = ends[i]
        if end <= m.start() and m.start() - end <= gap and bisect_left(stops, end) == bisect_left(stops, m.start()):
            return True  # close enough, and no sentence ends between them
    return False


_SENTENCE_STOP = re.compile(r"[.!?]")
_CONSUME = re.compile(r"\b(?:drink|quaff|gulp|down|use|apply|eat)\b")
_CONSUMABLE = re.compile(r"\b(?:potion|elixir|salve|draught|ration)s?\b")


@rule(N)
def consume_item(s: Situation) -> list[Suggestion]:
    if _near(s.text, _CONSUME, _CONSUMABLE):
        return [Suggestion("update_hp", "the player uses a healing item: roll it, then heal", 0.85, {"kind": "healing"}),
                Suggestion("modify_inventory", "the item is used up", 0.85, {"quantity": "-1"})]
    return []


@rule(N, P)
def trade(s: Situation) -> list[Suggestion]:
    if _has(s.text, r"\b(buy|pay|purchase|sell|bribe|tip|spend|hand over|give|trade|pick up|take|grab|loot|pocket|keep)\b"):
        return [Suggestion("modify_inventory", "something changes hands: items or coin must move in the inventory", 0.75)]
    return []


@rule(N, P)
def accept_quest(s: Situation) -> list[Suggestion]:
    offered = [q for q in s.state.quests.values() if q.status == "offered" and (s.npc is None or q.giver == s.npc.id)]
    if offered and _has(s.text, r"\b(accept|agree|we'?ll do it|i'?ll do it|we'?ll help|i'?ll help|count me in|deal|yes|we will)\b"):
        return [Suggestion("start_quest", f"the party seems to accept '{offered[0].title}'", 0.8, {"quest": offered[0].id})]
    return []


@rule(N, P)
def report_progress(s: Situation) -> list[Suggestion]:
    active = [q for q in s.state.quests.values() if q.status == "active" and any(not o.done for o in q.objectives)]
    if active and _has(s.text, r"\b(we found|i found|we know|found out|we defeated|we killed|it was|done|finished|brought|returned|here is|here's)\b"):
        quest = active[0]
        todo = next(o for o in quest.objectives if not o.done)
        return [Suggestion("complete_objective", f"the party may have finished a step of '{quest.title}'", 0.55,
                           {"quest": quest.id, "objective": todo.id})]
    return []


@rule(N)
def travel(s: Situation) -> list[Suggestion]:
    if not _has(s.text, r"\b(go|head|walk|travel|return|enter|leave|move|run|row|cross|climb down|descend)\b"):
        return []
    here = s.state.location()
    for exit_ in here.exits:
        there = s.state.locations[exit_.to]
        words = [w for w in re.findall(r"[a-z']+", there.name.lower()) if w not in ("the", "of", "a")]
        if any(w in s.text for w in words) or exit_.to.replace("-", " ") in s.text:
            open_ = here.exit_open(exit_)
            reason = f"the player heads for {there.name}" + ("" if open_ else ", but that way is not open yet")
            return [Suggestion("change_location", reason, 0.8 if open_ else 0.3, {"location": there.id})]
    return []


@rule(N)
def rest(s: Situation) -> list[Suggestion]:
    if _has(s.text, r"\b(long rest|sleep|make camp|camp for the night|rest for the night|turn in)\b"):
        return [Suggestion("long_rest", "the party settles down for the night", 0.85)]
    if _has(s.text, r"\b(short rest|catch (my|our) breath|rest for an hour|take a break|bind (my|our) wounds)\b"):
        return [Suggestion("short_rest", "a short rest spends hit dice to heal", 0.85)]
    return []


@rule(N, C, P)
def ability_check(s: Situation) -> list[Suggestion]:
    if _has(s.text, r"\b(climb|jump|leap|sneak|hide|persuade|convince|lie|bluff|intimidate|pick the lock|swim|balance|"
                    r"search|examine|inspect|investigate|listen|track|roll|attack|hit|strike|swing|stab|shoot|cast)\b"):
        return [Suggestion("roll", "the outcome is uncertain: roll the check or attack", 0.7)]
    return []


@rule(N)
def secrets_here(s: Situation) -> list[Suggestion]:
    hidden = [x for x in s.state.location().secrets if not x.discovered]
    if hidden and _has(s.text, r"\b(search|examine|inspect|investigate|look for|check|feel|tap|study|hidden|secret)\b"):
        return [Suggestion("discover_secret", "a secret here can be found if the check succeeds", 0.5, {"secret": hidden[0].id})]
    return []


@rule(P)
def npc_secret(s: Situation) -> list[Suggestion]:
    if s.npc is None:
        return []
    untold = [x for loc in s.state.locations.values() for x in loc.secrets if x.id in s.npc.knows_secrets and not x.discovered]
    if untold and _has(s.text, r"\b(secret|hidden|tell me|what do you know|truth|where|who)\b"):
        return [Suggestion("discover_secret", "you know a secret they ask about; reveal it only if you choose to tell",
                           0.5, {"secret": untold[0].id})]
    return []


@rule(P)
def join_party(s: Situation) -> list[Suggestion]:
    if s.npc and s.npc.id not in s.state.party.npc_ids and _has(s.text, r"\b(join us|come with us|travel with us|come along|join the party)\b"):
        return [Suggestion("add_to_party", "they ask you to travel with them; call it only if you agree", 0.6, {"npc": s.npc.id})]
    return []


@rule(N, C)
def damage(s: Situation) -> list[Suggestion]:
    if _has(s.text, r"\b(\d+)\s*(damage|hp)\b|\b(hurt|wound|fall|slip|burn|poison|bitten|stabbed|crack)\b"):
        return [Suggestion("update_hp", "hit points change: apply the damage", 0.7, {"kind": "damage"})]
    return []


@rule(N)
def start_fight(s: Situation) -> list[Suggestion]:
    here = [e for e in s.state.encounters.values() if e.location == s.state.current_location]
    if _has(s.text, r"\b(attack|fight|charge|ambush|draw my|draw our|kill|strike first)\b"):
        args = {"encounter": here[0].id} if here else {}
        return [Suggestion("start_combat", "a fight is starting: roll initiative", 0.8 if here else 0.5, args)]
    return []


@rule(C)
def combat_flow(s: Situation) -> list[Suggestion]:
    combat = s.state.combat
    if not combat.active:
        return []
    standing = [p for p in combat.order if p.faction == "enemy" and participant_hp(s.state, p)[0] > 0]
    if not standing:
        return [Suggestion("end_combat", "no enemy is left standing", 0.95)]
    return [Suggestion("next_turn", "after this combatant acts, pass the turn on", 0.9)]


def suggest(state: GameState, message: str, agent: AgentType, npc: NPC | None = None, limit: int = 4) -> list[Suggestion]:
    """The best suggestions for this agent, one per tool, highest confidence first."""
    situation = Situation(state, message.lower(), agent, npc)
    best: dict[str, Suggestion] = {}
    for name, agents, fn in RULES:
        if agent not in agents:
            continue
        try:
            found = fn(situation)
        except Exception:  # advisory only: a broken rule must never cost a turn
            log.warning("suggestion_rule_failed", rule=name, exc_info=True)
            continue
        for s in found:
            if agent in TOOLS[s.tool].agents and (s.tool not in best or s.confidence > best[s.tool].confidence):
                best[s.tool] = s
    return sorted(best.values(), key=lambda s: -s.confidence)[:limit]


HINTS_HEADING = "## Tools that may fit this message (hints, not orders: use your judgment)"


def format_suggestions(suggestions: list[Suggestion]) -> str:
    if not suggestions:
        return ""
    return HINTS_HEADING + "\n" + "\n".join(s.line() for s in suggestions)
