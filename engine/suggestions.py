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
_NOT_YET = re.compile(r"(?:'ll|\bwill|\bwould|\bcould|\bshould|\bif|\bswear|\bpromise)\s+(?:\w+\s+){0,2}$")


def _act(text: str, pattern: str) -> str:
    """The first match of `pattern` the player does now (not one promised, supposed or asked about)."""
    for m in re.finditer(pattern, text):
        if not _NOT_YET.search(text[max(0, m.start() - 30):m.start()]):
            return m.group(0)
    return ""


def _question(text: str) -> bool:
    return text.rstrip().endswith("?")


_CONSUME = re.compile(r"\b(?:drink|drinks|drank|quaff|gulp|glug|chug|chugging|chuggin|sip|swallow|down|use|apply|eat|"
                      r"gnaw|munch|nibble|pour)\b")
_CONSUMABLE = re.compile(r"\b(?:potions?|potoin|elixirs?|salves?|draughts?|rations?|vials?|antitoxin|hardtack|jerky)\b")
_HEALING = re.compile(r"\b(?:heal|healing|cure|restorative)\b")


@rule(N, C)
def consume_item(s: Situation) -> list[Suggestion]:
    if not _near(s.text, _CONSUME, _CONSUMABLE, gap=40):
        return []
    used = [Suggestion("modify_inventory", "the item is used up", 0.85, {"quantity": "-1"})]
    if _HEALING.search(s.text):
        used = [Suggestion("update_hp", "the player uses a healing item: roll it, then heal", 0.85, {"kind": "healing"}),
                *used, Suggestion("roll", "roll the healing", 0.8)]
    return used


_TRADE = (r"\b(?:buy|buys|bought|purchase|sell|sells|pay|pays|paid|bribe|spend|hand over|hand (?:him|her|them|the)|"
          r"press(?:es)? (?:a|the|two|some) \w* ?coins?|trade|swap|barter|loot|pocket|scoop|tuck|toss|stash|pick up|"
          r"grab|nick|pinch|steal|lift (?:the|a|his|her) \w* ?(?:purse|pouch|coin)|snatch|pry|prise|scatter|drop)\b")
_THEFT = r"\b(?:nick|pinch|steal|pickpocket|lift (?:the|a|his|her) \w* ?(?:purse|pouch))\b"


@rule(N, C, P)
def trade(s: Situation) -> list[Suggestion]:
    said = _act(s.text, _TRADE)
    if not said or re.search(r"\b(?:give up|take (?:a|the) (?:hint|moment|breather|break|look))\b", s.text):
        return []
    found = [Suggestion("modify_inventory", "something changes hands: items or coin must move in the inventory", 0.75)]
    if _has(s.text, _THEFT) or _has(s.text, r"\b(?:haggle|bargain)\b"):
        found.append(Suggestion("roll", "a sleight-of-hand or persuasion check decides it", 0.7))
    return found


_ACCEPTING = (r"\b(?:accept|we accept|agree|we'?ll do it|i'?ll do it|we'?ll help|i'?ll help|count (?:me|us) in|deal|"
              r"we'?re in|you'?ve got yourself|we'?ll get (?:it|your|the)|we'?ll find|you have (?:my|our) word|"
              r"i give you my word|consider it done|sold|we'?ll take (?:the|your) (?:job|offer|work))\b")


@rule(N, P)
def accept_quest(s: Situation) -> list[Suggestion]:
    offered = [q for q in s.state.quests.values() if q.status == "offered" and (s.npc is None or q.giver == s.npc.id)]
    if offered and _has(s.text, _ACCEPTING) and not _has(s.text, r"\byou swear\b"):
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


_GOING = (r"\b(?:go|goes|going|head|heads|heading|walk|travel|return|enter|leave|move|run|row|cross|climb down|descend|"
          r"make for|swing by|pop into|nip into|duck into|step into|set off|climb up to|trudge|trudging|stroll|wander)\b")
_ALIASES = {"tavern": ("tavern", "pub", "inn", "bar", "alehouse"), "cottage": ("cottage", "keeper's daughter", "brisa"),
            "lighthouse": ("lighthouse", "gannet rock", "the light")}


@rule(N)
def travel(s: Situation) -> list[Suggestion]:
    if not _act(s.text, _GOING) or _question(s.text):
        return []
    here = s.state.location()
    for exit_ in here.exits:
        there = s.state.locations[exit_.to]
        words = [w for w in re.findall(r"[a-z']+", there.name.lower()) if w not in ("the", "of", "a")]
        about = " ".join([there.name, *there.description.split()[:8]]).lower()  # what it is, not what it faces
        aliases = [a for key, names in _ALIASES.items() if key in about for a in names]
        if any(re.search(rf"\b{re.escape(w)}\b", s.text) for w in words + aliases) or exit_.to.replace("-", " ") in s.text:
            open_ = here.exit_open(exit_)
            reason = f"the player heads for {there.name}" + ("" if open_ else ", but that way is not open yet")
            return [Suggestion("change_location", reason, 0.8 if open_ else 0.3, {"location": there.id})]
    return []


@rule(N)
def rest(s: Situation) -> list[Suggestion]:
    if _has(s.text, r"\b(?:long rest|sleep|shut-eye|make camp|bed down|camp for the night|rest for the night|turn in|"
                    r"eight hours|fall asleep|doze off|kip)\b"):
        return [Suggestion("long_rest", "the party settles down for the night", 0.85)]
    if _has(s.text, r"\b(?:short rest|catch (?:my|our) breath|breather|rest (?:up )?for an hour|take a break|take five|"
                    r"bind (?:my|our) wounds|hit dice)\b"):
        return [Suggestion("short_rest", "a short rest spends hit dice to heal", 0.85)]
    return []


_CHECK = (r"\b(?:climb|shimmy|shinny|jump|leap|sneak|tail|shadow|hide|persuade|convince|sweet-talk|lie|bluff|deceive|"
          r"intimidate|haggle|bargain|pick the lock|lockpick|force|swim|paddle|wade|balance|search|investigate|track|"
          r"insight|perception|squint|spot|arm-wrestle|wrestle|grapple|pin|shove|save|saving throw|"
          r"(?:str|dex|con|int|wis|cha|strength|dexterity|constitution|intelligence|wisdom|charisma) (?:save|check))\b")


@rule(N, C, P)
def ability_check(s: Situation) -> list[Suggestion]:
    if s.agent is AgentType.NPC and not _has(s.text, r"\b(?:persuade|convince|intimidate|insight|deceive|lie)\b"):
        return []
    if _act(s.text, _CHECK) and not _has(s.text, r"\broll my eyes\b"):
        return [Suggestion("roll", "the outcome is uncertain: roll the check", 0.7)]
    return []


_SEARCHING = (r"\b(?:search|examine|inspect|investigate|knock on|tap|feel along|look behind|look under|check behind|"
              r"flip through|listen for|pry at)\b")


@rule(N)
def secrets_here(s: Situation) -> list[Suggestion]:
    hidden = [x for x in s.state.location().secrets if not x.discovered]
    if hidden and _has(s.text, _SEARCHING):
        return [Suggestion("discover_secret", "a secret here can be found if the check succeeds", 0.5, {"secret": hidden[0].id}),
                Suggestion("roll", "searching is a check", 0.6)]
    return []


@rule(P)
def npc_secret(s: Situation) -> list[Suggestion]:
    if s.npc is None:
        return []
    untold = [x for loc in s.state.locations.values() for x in loc.secrets if x.id in s.npc.knows_secrets and not x.discovered]
    asked = set(re.findall(r"[a-z]{5,}", s.text))
    plainly = _has(s.text, r"\b(?:secrets?|hiding|hide from us|keeping from us)\b")
    for secret in untold:  # when asked plainly, or about what the secret is about (not at every "who" or "where")
        if plainly or asked & set(re.findall(r"[a-z]{5,}", secret.text.lower())) - {"where", "which", "there", "their", "about"}:
            return [Suggestion("discover_secret", "you know a secret they ask about; reveal it only if you choose to tell",
                               0.5, {"secret": secret.id})]
    return []


@rule(P)
def join_party(s: Situation) -> list[Suggestion]:
    if s.npc and s.npc.id not in s.state.party.npc_ids and _has(
            s.text, r"\b(?:join us|come with us|travel with us|come along|join the party|walk with us|guide us)\b"):
        return [Suggestion("add_to_party", "they ask you to travel with them; call it only if you agree", 0.6, {"npc": s.npc.id})]
    return []


@rule(N, C)
def damage(s: Situation) -> list[Suggestion]:
    if _has(s.text, r"\b(\d+)\s*(?:damage|hp)\b|\b(?:hurt|wound|poison|bitten|stabbed|lose my grip|fall off|fall into|"
                    r"drop onto|slip off|trap|spikes)\b"):
        return [Suggestion("update_hp", "hit points change: apply the damage", 0.7, {"kind": "damage"})]
    if _has(s.text, r"\b(?:lay on hands|healer's kit|cure wounds|healing word|tend (?:to )?(?:his|her|their) wounds)\b"):
        return [Suggestion("update_hp", "healing: apply it", 0.75, {"kind": "healing"})]
    return []


@rule(N)
def start_fight(s: Situation) -> list[Suggestion]:
    here = [e for e in s.state.encounters.values() if e.location == s.state.current_location]
    if _has(s.text, r"\b(?:fight the urge|kill for|draw my cloak|draw (?:a|my) breath)\b"):
        return []
    if _act(s.text, r"\b(?:attack|fight|charge|ambush|deck (?:him|her)|punch|swing at|draw steel|draw (?:my|our) "
                    r"(?:sword|swords|blade|blades|weapons?)|kill|strike first)\b"):
        args = {"encounter": here[0].id} if here else {}
        return [Suggestion("start_combat", "a fight is starting: roll initiative", 0.8 if here else 0.5, args)]
    return []


_STRIKE = (r"\b(?:attack|swing|stab|slash|shoot|shooting|fire|hurl|throw|stomp|smack|bash|punch|kick|cleave|hack|"
           r"thrust|lunge|bring .{0,20}? down|rapier|longsword|shortsword|shortbow|longbow|crossbow|dagger|handaxe|"
           r"warhammer|axe|mace|spear|arrow|bolt)\b")


@rule(C)
def strike(s: Situation) -> list[Suggestion]:
    if _question(s.text) or not _has(s.text, _STRIKE):
        return []
    return [Suggestion("attack", "an attack: the engine rolls it against the target's AC", 0.85)]


@rule(N)
def light_and_open(s: Situation) -> list[Suggestion]:
    if _act(s.text, r"\b(?:relight|light the (?:lamps?|torch|brazier|beacon)|open the (?:door|gate|grate|hatch)|unlock|"
                    r"lower the|raise the|ring the bell|(?:wait|sit tight) (?:\w+ ){0,6}(?:tide|low water))\b"):
        return [Suggestion("update_location_state", "something here changes state (lit, opened, the tide)", 0.6)]
    return []


_LORE_QUESTION = (r"\b(?:who built|when was|tell me about the|what are the|history of|legend|stories|old wars|"
                  r"what is the \w+ (?:of|on)|who founded)\b")


@rule(N)
def ask_lore(s: Situation) -> list[Suggestion]:
    if _has(s.text, _LORE_QUESTION):
        return [Suggestion("search_lore", "a question about the world's history or lore: look it up", 0.6)]
    return []


_ASK_ABOUT = re.compile(r"\b(?:what'?s ([a-z]+)'?s deal|who is ([a-z]+)|tell me about ([a-z]+)|"
                        r"what do (?:we|i) know about ([a-z]+))")


@rule(N)
def ask_about_npc(s: Situation) -> list[Suggestion]:
    firsts = {npc.name.split()[0].lower(): npc for npc in s.state.npcs.values()}
    for m in _ASK_ABOUT.finditer(s.text):  # one scan, whatever the number of NPCs
        npc = firsts.get(next(g for g in m.groups() if g))
        if npc is not None:
            return [Suggestion("get_npc", f"what the party knows of {npc.name}", 0.6, {"npc": npc.id})]
    return []


@rule(C)
def combat_flow(s: Situation) -> list[Suggestion]:
    combat = s.state.combat
    if not combat.active:
        return []
    standing = [p for p in combat.order if p.faction == "enemy" and participant_hp(s.state, p)[0] > 0]
    if not standing:
        return [Suggestion("end_combat", "no enemy is left standing", 0.95)]
    if _question(s.text):
        return []  # a question about the fight is not a combatant's action: the turn does not pass
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
