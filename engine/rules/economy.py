"""The action economy of a turn in a fight (SRD 5.1, CC-BY-4.0): on its turn a combatant has one action, one bonus
action and its movement, and one reaction a round (back at the start of its turn). The Attack action is one attack, or
more with Extra Attack; Action Surge gives one more action; a bonus-action spell leaves only a cantrip of one action
for the rest of the turn; the off hand's light weapon attacks as a bonus action after the Attack action with a light
weapon; an opportunity attack (or Shield) is a reaction, taken on someone else's turn.

What a combatant has done this turn is `Participant.acted` (cleared when its turn begins): "action:attack",
"action:cast", "attack", "bonus:…", "reaction", "Action Surge", "light" (the Attack action was with a light melee
weapon). `take` checks and records one thing; it raises BadInput, recording nothing, when the turn has none left."""

from __future__ import annotations

from typing import Literal

from ..errors import BadInput
from ..state import Character, Participant

Cost = Literal["action", "bonus action", "reaction", "none"]


def attacks_per_action(ch: Character) -> int:
    """Extra Attack: two attacks from 5th level for barbarians, fighters, monks, paladins and rangers; a fighter's
    three at 11th and four at 20th."""
    if ch.char_class == "fighter":
        return 4 if ch.level >= 20 else 3 if ch.level >= 11 else 2 if ch.level >= 5 else 1
    if ch.char_class in ("barbarian", "monk", "paladin", "ranger") and ch.level >= 5:
        return 2
    return 1


def spell_cost(casting_time: str) -> Cost:
    text = casting_time.lower()
    return "bonus action" if "bonus" in text else "reaction" if "reaction" in text else "action"


def actions_left(p: Participant) -> int:
    return 1 + p.acted.count("Action Surge") - sum(1 for a in p.acted if a.startswith("action:"))


def _bonus_free(p: Participant) -> bool:
    return not any(a.startswith("bonus:") for a in p.acted)


def attack(p: Participant, ch: Character, *, light: bool, offhand: bool = False) -> str:
    """One weapon attack on the character's turn: within an Attack action already taken (Extra Attack), or a new
    Attack action; the off hand's as a bonus action. Returns what it used ("" within an action already taken)."""
    if offhand:
        if not light:
            raise BadInput("Two-weapon fighting needs a light weapon in the off hand.")
        if "light" not in p.acted:
            raise BadInput(f"{ch.name} attacks with the off hand only after taking the Attack action with a light "
                           "melee weapon this turn.")
        if not _bonus_free(p):
            raise BadInput(f"{ch.name} has used this turn's bonus action.")
        p.acted.append("bonus:offhand")
        return "bonus action"
    taken = p.acted.count("action:attack") * attacks_per_action(ch)
    if p.acted.count("attack") < taken:
        p.acted.append("attack")
        return ""
    if actions_left(p) <= 0:
        raise BadInput(f"{ch.name} has no action left this turn" + (
            f" (the Attack action's {taken} attack{'s' if taken != 1 else ''} are made)" if taken else "") + ".")
    p.acted += ["action:attack", "attack"] + (["light"] if light else [])
    return "action"


def cast(p: Participant, ch: Character, cost: Cost, level: int) -> str:
    """A spell on the character's turn (a reaction's any time): its cost, and the SRD's rule that a bonus-action spell
    leaves only a cantrip of one action for the same turn."""
    bonus_spell = "bonus:spell" in p.acted
    if cost == "reaction":
        return reaction(p, ch)
    if cost == "bonus action":
        if not _bonus_free(p):
            raise BadInput(f"{ch.name} has used this turn's bonus action.")
        if any(a == "action:cast-leveled" for a in p.acted):
            raise BadInput(f"{ch.name} cast a spell of 1st level or higher with this turn's action: no bonus-action "
                           "spell now (the SRD).")
        p.acted.append("bonus:spell")
        return "bonus action"
    if bonus_spell and level > 0:
        raise BadInput(f"{ch.name} cast a bonus-action spell this turn: only a cantrip with its action now (the SRD).")
    if actions_left(p) <= 0:
        raise BadInput(f"{ch.name} has no action left this turn.")
    p.acted.append("action:cast-leveled" if level > 0 else "action:cast")
    return "action"


def reaction(p: Participant, ch: Character | Participant) -> str:
    if "reaction" in p.acted:
        raise BadInput(f"{ch.name} has used their reaction this round (it comes back at the start of their turn).")
    p.acted.append("reaction")
    return "reaction"


def other(p: Participant, ch: Character, cost: Cost, what: str) -> str:
    """Anything else that costs an action or a bonus action (a feature, a grapple)."""
    if cost == "action":
        if actions_left(p) <= 0:
            raise BadInput(f"{ch.name} has no action left this turn for {what}.")
        p.acted.append(f"action:{what}")
    elif cost == "bonus action":
        if not _bonus_free(p):
            raise BadInput(f"{ch.name} has used this turn's bonus action; {what} needs it.")
        p.acted.append(f"bonus:{what}")
    elif cost == "reaction":
        return reaction(p, ch)
    return cost if cost != "none" else ""


def summary(p: Participant, ch: Character | None) -> str:
    """"action used (2/2 attacks), bonus action free, reaction free" for the tracker."""
    attacks = p.acted.count("attack")
    per = attacks_per_action(ch) if ch is not None else 1
    left = actions_left(p)
    action = "action free" if left > 0 and not any(a.startswith("action:") for a in p.acted) else \
        f"{left} action{'s' if left != 1 else ''} left" if left > 0 else "action used"
    if "action:attack" in p.acted and per > 1:
        action += f" ({attacks}/{per * p.acted.count('action:attack')} attacks)"
    bonus = "bonus action free" if _bonus_free(p) else "bonus action used"
    return f"{action}, {bonus}, reaction {'used' if 'reaction' in p.acted else 'free'}"


__all__ = ["Cost", "actions_left", "attack", "attacks_per_action", "cast", "other", "reaction", "spell_cost", "summary"]
