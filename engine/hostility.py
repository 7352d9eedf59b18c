"""Who is an enemy, the question a player's attack on anyone else asks first, and what it sets off.

A player's own attack or harmful spell (/attack, /cast) at someone who is no enemy in a fight (a shopkeeper, a
friendly NPC, another player's character, anyone while no fight is going on, an ally in one) is asked about
privately first, and refused unconfirmed. Confirmed, it happens as any attack does; a person so struck turns
hostile (someone you hit does not stay your friend), and the Game Master is told in the story, so the next turn
answers it: a fight (start_combat, naming who fights), flight, a call for the watch. The engine starts no fight by
itself: how the world answers violence is the story's to tell, and a fight started for the player would decide it.
The agents' own attacks and spells are the GM's to judge, and ask nothing.
"""

from __future__ import annotations

from .entities import NPC
from .errors import NeedsConfirming
from .state import Character, GameState, Participant

Target = Character | NPC | Participant


class ConfirmAttack(NeedsConfirming):
    """A player's attack or spell at someone who is no enemy, not confirmed by its player: the message is the
    question, `items` whom it would strike."""


def is_enemy(state: GameState, target: Target) -> bool:
    """An enemy in the fight going on: a foe of the combat's own, or an NPC who fights on the enemies' side."""
    combat = state.combat
    if not combat.active or isinstance(target, Character):
        return False
    if isinstance(target, Participant):
        return target.faction == "enemy"
    return any(p.id == target.id and p.faction == "enemy" for p in combat.order)


def require_consent(state: GameState, attacker: Character, targets: list[Target], doing: str) -> None:
    """Raise ConfirmAttack, asking `attacker`'s player before `doing` ("Attack", "Cast Fire Bolt at") to these targets,
    unless every one of them is an enemy in the fight."""
    asked = question(state, attacker, targets, doing)
    if asked is not None:
        raise ConfirmAttack(asked, items=[t.name for t in targets if not is_enemy(state, t)])


def question(state: GameState, attacker: Character, targets: list[Target], doing: str) -> str | None:
    """What to ask `attacker`'s player before `doing` ("Attack", "Cast Fire Bolt at") to these targets, or None when
    every one of them is an enemy in the fight."""
    others = [t for t in targets if not is_enemy(state, t)]
    if not others:
        return None
    why = "; ".join(_why(state, attacker, t) for t in others)
    turning = [t.name for t in others if isinstance(t, NPC) and t.attitude != "hostile"]
    after = f" ({_names(turning)} will turn hostile)" if turning else ""
    return f"{why[:1].upper()}{why[1:]}. {doing} {_names([t.name for t in others])} anyway? " \
           f"The Game Master plays out what follows{after}."


def _why(state: GameState, attacker: Character, t: Target) -> str:
    fighting = state.combat.active
    if t is attacker:
        return f"{t.name} is your own character"
    if isinstance(t, Character):
        return f"{t.name} is another player's character"
    if isinstance(t, Participant) or t.id in state.party.npc_ids:
        return f"{t.name} {'fights on your side' if fighting else 'travels with you'}"
    if not fighting:
        return f"{t.name} is hostile, but no fight is going on" if t.attitude == "hostile" \
            else f"{t.name} is no enemy of yours ({t.attitude}), and no fight is going on"
    return f"{t.name} is not in this fight ({t.attitude})"


def provoke(state: GameState, attacker: Character, targets: list[Target]) -> str | None:
    """After a confirmed attack: the NPCs struck who were no enemy turn hostile; returns the note that tells the
    Game Master, in the story, what happened and that it is theirs to answer (None: only enemies were struck)."""
    others = [t for t in targets if not is_enemy(state, t)]
    if not others:
        return None
    turned = []
    for t in others:
        if isinstance(t, NPC) and t.attitude != "hostile":
            turned.append(f"{t.name} ({t.attitude} until now)")
            t.attitude = "hostile"
    note = f"{attacker.name} attacked {_names([t.name for t in others])}, no enemy in a fight."
    if turned:
        note += f" Hostile now: {', '.join(turned)}."
    return (f"({note} The Game Master answers it on the next turn: a fight (start_combat, naming who fights), "
            "flight, a call for help, the law.)")


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
