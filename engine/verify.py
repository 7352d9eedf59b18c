"""Post-flight verification: does the story the agent told match what its tools did?

After the agent's reply and before commit, plain state-aware rules compare the narration with the tool calls
of the turn: coins or items changing hands with no modify_inventory, wounds or healing with no update_hp, a
quest taken on with no start_quest, a journey with no change_location, a creature slain that still has hit
points, a hit narrated after a missed attack, damage that differs from the damage rolled, a failed tool call
the prose pretends worked. Modes (`[turn] verify`): off; flag (each miss is recorded with the turn); correct
(one corrective continuation asks the agent to make the missing call or revise the narration, on the same
working copy, counting against the turn's round cap; the turn still commits whole).

Every rule is a plain function of one `Check`, linear in the reply's length, and tested on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from .basics import AgentType
from .state import GameState
from .tools import ToolCall


@dataclass(frozen=True)
class Check:
    before: GameState  # the state the turn started from
    after: GameState  # the working copy, as the turn would commit it
    reply: str  # what players would read
    calls: list[ToolCall]
    agent: AgentType

    def called(self, name: str) -> bool:
        return any(c.name == name and c.ok for c in self.calls)

    @property
    def text(self) -> str:
        return self.reply.lower()


@dataclass(frozen=True)
class Miss:
    rule: str
    message: str  # to the agent, in the correction request: what is wrong and what would fix it
    evidence: str = ""  # the words of the reply that gave it away

    def as_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "message": self.message, "evidence": self.evidence}


Rule = Callable[[Check], "Miss | None"]
RULES: list[tuple[str, Rule]] = []


def rule(fn: Rule) -> Rule:
    RULES.append((fn.__name__, fn))
    return fn


def _find(pattern: re.Pattern[str], text: str) -> str:
    m = pattern.search(text)
    return m.group(0) if m else ""


# Words are anchored and bounded ({0,40} gaps): every pattern is linear in the reply.
_EXCHANGE = re.compile(
    r"\b(?:you|she|he|they|[a-z]+)\s+(?:hands?|gives?|passes?|slides?|tosses?|sells?|sold|buys?|bought|pays?|paid|"
    r"pockets?|pocketed|loots?|looted|takes? the (?:coins?|gold|purse)|counts? out)\b[^.!?]{0,40}"
    r"\b(?:coins?|gold|silver|copper|gp|sp|cp|pp|purse|potions?|rope|dagger|sword|key|map|ring|items?|"
    r"[a-z]+ pieces?)\b", re.I)
_DRINK = re.compile(r"\b(?:drinks?|drank|quaffs?|downs?|gulps?)\b[^.!?]{0,30}\b(?:potion|elixir|draught|vial)\b", re.I)
_WOUND = re.compile(r"\b(?:takes?|suffers?|deals?|dealing)\s+(\d+)\s+(?:points? of\s+)?(?:\w+\s+)?damage\b", re.I)
_HEAL = re.compile(r"\b(?:regains?|recovers?|heals?(?:\s+for)?)\s+(\d+)\s+(?:hit points?|hp)\b", re.I)
_ACCEPT = re.compile(r"\b(?:you|the party|they)\s+(?:accepts?|agrees? to|take on|takes on|sign on)\b[^.!?]{0,40}"
                     r"\b(?:quest|job|task|offer|request|help)\b", re.I)
_SLAIN = re.compile(r"\b(dies|is slain|is killed|falls dead|lies dead|breathes (?:its|his|her) last)\b", re.I)
_HIT = re.compile(r"\b(?:hits?|strikes?|wounds?|connects?|bites? into|cuts? into|slashes|pierces)\b", re.I)


_NOT_YET = re.compile(r"(?:'ll|\bwill|\bwould|\bcould|\bcan|\bshall|\bmight|\bto|\bif|\boffers?|\bpromises?)"
                      r"\s+(?:\w+\s+)?$", re.I)


def _done_deed(pattern: re.Pattern[str], text: str) -> str:
    """The first match told as done, not promised, offered or supposed ("I'll pay you forty gold" is not a payment)."""
    for m in pattern.finditer(text):
        words = m.group(0).split(None, 1)  # the pattern's first word may be the modal itself ("will sell …")
        lead = text[max(0, m.start() - 20):m.start()] + (words[0] + " " if len(words) > 1 else "")
        if not _NOT_YET.search(lead):
            return m.group(0)
    return ""


@rule
def exchange_without_inventory(c: Check) -> Miss | None:
    """Coins or things change hands in the story, but no modify_inventory call (nor a purchase, a sale or loot the
    engine handed out) changed a purse or a pack."""
    said = _done_deed(_EXCHANGE, c.reply) or _done_deed(_DRINK, c.reply)
    if not said or any(c.called(name) for name in ("modify_inventory", "buy", "sell")) or _looted(c):
        return None
    return Miss("exchange_without_inventory",
                f'The narration says "{said}", but no modify_inventory call moved the coins or items. Call it '
                "for each item or coin type (buy or sell for a shop's goods), or say it did not happen.", said)


def _looted(c: Check) -> bool:
    return any(call.ok and "Loot: " in call.observation for call in c.calls)


@rule
def hp_without_update(c: Check) -> Miss | None:
    """Damage or healing with a number in the story, but no update_hp or attack call."""
    said = _find(_WOUND, c.reply) or _find(_HEAL, c.reply)
    if not said or c.called("update_hp") or c.called("attack"):
        return None
    return Miss("hp_without_update", f'The narration says "{said}", but no update_hp (or attack) call applied it.',
                said)


@rule
def quest_without_start(c: Check) -> Miss | None:
    """The party takes on an offered quest in the story, but start_quest was not called."""
    offered = [q for q in c.before.quests.values() if q.status == "offered"]
    said = _find(_ACCEPT, c.reply)
    if not offered or not said or c.called("start_quest"):
        return None
    ids = ", ".join(q.id for q in offered)
    return Miss("quest_without_start", f'The narration says "{said}", but no start_quest call was made '
                                       f"(offered: {ids}).", said)


@rule
def travel_without_change_location(c: Check) -> Miss | None:
    """The party arrives somewhere in the story (a place named by its exits), but its location did not change."""
    if c.called("change_location") or c.after.current_location != c.before.current_location:
        return None
    here = c.before.location()
    text = c.text
    for e in here.exits:
        place = c.before.locations.get(e.to)
        if place is None:
            continue
        name = place.name.lower()
        at = text.find(name)
        if at < 0:
            continue
        lead = text[max(0, at - 40):at]
        if re.search(r"\b(?:you|the party|we)\s+(?:arrive|step|walk|head|go|make your way|enter|reach|climb|descend)"
                     r"[a-z ]{0,20}\b(?:at|into|in|to|up to|down to|inside)?\s*(?:the\s+)?$", lead):
            return Miss("travel_without_change_location",
                        f"The narration takes the party to {place.name}, but no change_location call moved it "
                        f'(location="{place.id}").', text[max(0, at - 40):at + len(name)])
    return None


@rule
def slain_but_standing(c: Check) -> Miss | None:
    """The story kills a combatant whose hit points are above zero."""
    if not c.after.combat.active and not c.before.combat.active:
        return None
    text = c.text
    for p in c.after.combat.order:
        if p.hp is None or p.hp <= 0:
            continue
        at = text.find(p.name.lower())
        while at >= 0:
            said = _find(_SLAIN, text[at:at + len(p.name) + 40])
            if said:
                return Miss("slain_but_standing", f"The narration says {p.name} {said}, but {p.name} still has "
                                                  f"{p.hp} HP: apply the damage (attack or update_hp) or revise.",
                            f"{p.name} {said}")
            at = text.find(p.name.lower(), at + 1)
    return None


@rule
def hit_after_miss(c: Check) -> Miss | None:
    """An attack the engine resolved as a miss, narrated as a hit (with no later hit on that target)."""
    for n, call in enumerate(c.calls):
        if call.name != "attack" or not call.ok or ", miss" not in call.observation:
            continue
        target = str(call.args.get("target", "")).lower()
        later_hit = any(x.name == "attack" and x.ok and ", miss" not in x.observation
                        and str(x.args.get("target", "")).lower() == target for x in c.calls[n + 1:])
        if later_hit or not target:
            continue
        text = c.text
        at = text.find(target)
        window = text[max(0, at - 60):at + len(target) + 60] if at >= 0 else ""
        said = _find(_HIT, window)
        if said and not re.search(r"\b(?:miss|misses|missed|glances? off|goes wide|whistles past|fails?)\b", window):
            return Miss("hit_after_miss", f"The attack on {call.args.get('target')} missed, but the narration says "
                                          f'it "{said}"s. Narrate the miss.', said)
    return None


@rule
def damage_not_rolled(c: Check) -> Miss | None:
    """A damage number in the story that no tool produced this turn."""
    dealt = {int(x) for call in c.calls if call.ok and call.name in ("attack", "update_hp")
             for x in re.findall(r"takes (\d+) damage", call.observation)}
    dealt |= {int(x) for call in c.calls if call.ok and call.name == "attack"
              for x in re.findall(r"damage [^→]*→ (\d+)", call.observation)}
    if not dealt:
        return None
    for m in _WOUND.finditer(c.reply):
        if int(m.group(1)) not in dealt:
            return Miss("damage_not_rolled", f'The narration says "{m.group(0)}", but the damage this turn was '
                                             f"{', '.join(str(d) for d in sorted(dealt))}.", m.group(0))
    return None


@rule
def failed_call_pretended(c: Check) -> Miss | None:
    """A state-changing tool failed and was not retried, yet the story tells it as done."""
    for call in c.calls:
        if call.ok or call.name not in ("modify_inventory", "buy", "sell", "update_hp", "start_quest", "change_location"):
            continue
        if c.called(call.name):
            continue  # it was done right later in the turn
        probe = {"modify_inventory": _EXCHANGE, "buy": _EXCHANGE, "sell": _EXCHANGE, "update_hp": _WOUND,
                 "start_quest": _ACCEPT}.get(call.name)
        said = _find(probe, c.reply) if probe else ""
        if call.name == "change_location":
            said = _find(re.compile(r"\b(?:you|the party)\s+(?:arrive|enter|reach)\b[^.!?]{0,30}", re.I), c.reply)
        if said:
            return Miss("failed_call_pretended", f"{call.name} failed ({call.observation[:160]}), but the narration says "
                                                 f'"{said}". Say what really happened, or fix the call.', said)
    return None


def verify(before: GameState, after: GameState, reply: str, calls: list[ToolCall], agent: AgentType) -> list[Miss]:
    """Every rule's finding for one reply (the NPC agent's too: it trades and hands over items)."""
    check = Check(before, after, reply, calls, agent)
    found = []
    for _, fn in RULES:
        miss = fn(check)
        if miss is not None:
            found.append(miss)
    return found


def correction_request(misses: list[Miss]) -> str:
    lines = "\n".join(f"- {m.message}" for m in misses)
    return ("[Engine check] Your narration and the game state disagree:\n" + lines + "\n"
            "Make the missing tool calls now, or rewrite your reply so it tells only what happened. Then give the "
            "whole reply again, as players should read it.")


@dataclass
class Verification:
    misses: list[Miss] = field(default_factory=list)
    outcome: str = "clean"  # clean, flagged, corrected, uncorrected, skipped

    def as_record(self) -> list[dict[str, str]]:
        return [m.as_dict() | {"outcome": self.outcome} for m in self.misses]
