"""Conditions set and lifted by the agents: the SRD's conditions on anyone (a character, an NPC, a combatant), with
an optional duration in a fight (some of the holder's turns, or until a save it repeats at the end of each turn
succeeds), which next_turn counts down and rolls (engine/tools/combat.py); a fight's end lifts what it timed."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..basics import Ability
from ..errors import ToolError
from ..rules.checks import check, creature_save_roll
from ..entities import NPC
from ..rules import effects, life
from ..rules.conditions import DESCRIPTIONS, exhaustion, exhaustion_word, hp_maximum
from ..state import Character, GameState, Participant, Timed
from .hitpoints import resolve_hp_target
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool

CONDITIONS = tuple(sorted(DESCRIPTIONS))


class ConditionArgs(Args):
    target: str = Field(min_length=1, max_length=60)
    condition: Literal[CONDITIONS]  # type: ignore[valid-type]
    remove: bool = False
    rounds: int | None = Field(None, ge=1, le=100)  # in a fight: it ends after this many of the holder's turns
    save: Ability | None = None  # in a fight: the holder repeats this save at the end of each of its turns
    dc: int | None = Field(None, ge=1, le=40)

    @model_validator(mode="after")
    def _save_needs_dc(self) -> "ConditionArgs":
        if (self.save is None) != (self.dc is None):
            raise ValueError("a repeated save needs both save (the ability) and dc")
        return self


@tool(example='<set_condition target="Goblin 1" condition="frightened" save="wisdom" dc="13"/>; '
              '<set_condition target="Aria" condition="poisoned" rounds="10"/>; '
              '<set_condition target="Aria" condition="poisoned" remove="true"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def set_condition(ctx: ToolContext, args: ConditionArgs) -> str:
    """Give someone an SRD condition (poisoned, frightened, prone, restrained, stunned, …) or lift it; the engine
    applies what it does to their rolls. In a fight, `rounds` ends it after that many of their turns, and `save`
    with `dc` lets them repeat the save at the end of each of their turns to end it."""
    target = resolve_hp_target(ctx, args.target)
    held = target.conditions
    name = args.condition
    combat = ctx.state.combat
    holder = combatant_of(ctx.state, target)
    if name == "exhaustion":
        return _exhaust(target, -1 if args.remove else 1)
    if args.remove:
        if name not in held:
            raise ToolError(f"{target.name} is not {name}")
        held.remove(name)
        combat.timed = [t for t in combat.timed if not (holder and t.holder == holder.id and t.condition == name)]
        told = f"{target.name} is no longer {name}."
        return Told(told, told)
    if name in ("unconscious", "dead", "defeated"):
        raise ToolError(f"{name} follows from hit points: use update_hp")
    timed = args.rounds is not None or args.save is not None
    if timed and holder is None:
        raise ToolError("rounds and repeated saves are counted in a fight; outside one, lift the condition "
                        "yourself (remove=\"true\") when it ends")
    if name not in held:
        held.append(name)
    until = ""
    if timed:
        assert holder is not None
        combat.timed = [t for t in combat.timed if not (t.holder == holder.id and t.condition == name)]
        combat.timed.append(Timed(holder=holder.id, condition=name, rounds=args.rounds, save=args.save, dc=args.dc))
        parts = [f"{args.rounds} of its turns" if args.rounds else "",
                 f"a DC {args.dc} {args.save} save at the end of each of its turns" if args.save else ""]
        until = " (until " + " or ".join(p for p in parts if p) + ")"
    told = f"{target.name} is {name}{until}: {DESCRIPTIONS[name]}"
    return Told(told, f"{target.name} is {name}{until}.")


def _exhaust(target: Character | NPC | Participant, change: int) -> Told:
    """One level of exhaustion more or less: its effects follow the level (conditions.py); the sixth is death."""
    before = exhaustion(target.conditions)
    if before == 0 and change < 0:
        raise ToolError(f"{target.name} is not exhausted")
    level = max(0, min(6, before + change))
    target.conditions[:] = [c for c in target.conditions if not exhaustion([c])]
    if level:
        target.conditions.append(exhaustion_word(level))
    told = f"{target.name} is at exhaustion level {level}." if level else f"{target.name} is no longer exhausted."
    if level >= 4 and target.hp is not None and target.max_hp:  # the maximum halves: hit points above it are lost
        target.hp = min(target.hp, hp_maximum(target.conditions, target.max_hp))
    if level == 6:
        if isinstance(target, Character):
            told += life._die(target, "exhaustion")
        else:
            target.hp = 0
            target.conditions.append("defeated" if isinstance(target, Participant) else "dead")
            told += f" {target.name} dies of it."
    else:
        told += " " + {0: "", 1: "Disadvantage on ability checks.", 2: "Speed halved, and the level before.",
                       3: "Disadvantage on attacks and saves, and the levels before.",
                       4: "Hit point maximum halved, and the levels before.",
                       5: "Speed 0, and the levels before."}[level]
    return Told(told.strip(), told.strip())


def combatant_of(state: GameState, target: object) -> Participant | None:
    """Someone's place in the fight going on: a character's by its player, an NPC's by its id (None: no fight, or
    not in it)."""
    if not state.combat.active:
        return None
    if isinstance(target, Participant):
        return target
    key = target.owner_id if isinstance(target, Character) else getattr(target, "id", None)
    return next((p for p in state.combat.order if p.id == key), None)


def holder_of(state: GameState, p: Participant) -> Character | NPC | Participant:
    """Whose conditions and effects a combatant's are: a character's sheet, else the combatant's own hit points (as
    resolve_hp_target finds them), else the NPC's."""
    if p.faction == "player":
        return state.characters.get(p.id) or p
    return p if p.hp is not None else state.npcs.get(p.id) or p


def end_of_turn(ctx: ToolContext, p: Participant) -> list[str]:
    """What ends as `p`'s turn ends: a repeated save rolled, a duration counted down (told a line each)."""
    state, lines, kept = ctx.state, [], []
    holder = holder_of(state, p)
    for t in state.combat.timed:
        if t.holder != p.id:
            kept.append(t)
            continue
        ended = ""
        if t.save is not None and t.dc is not None:
            rolled = check(holder, t.save, ctx.rng, save=True).roll if isinstance(holder, Character) else \
                creature_save_roll(holder, t.save, ctx.rng)
            if rolled.total >= t.dc:
                ended = f"{p.name}'s {t.save} save {rolled.expression} → {rolled.total} vs DC {t.dc}: no longer {t.condition}"
            else:
                lines.append(f"{p.name}'s {t.save} save {rolled.expression} → {rolled.total} vs DC {t.dc}: still {t.condition}")
        if not ended and t.rounds is not None:  # one of its turns has passed
            if t.rounds <= 1:
                ended = f"{p.name} is no longer {t.condition} (its time is up)"
            else:
                t.rounds -= 1
        if ended:
            if t.condition in holder.conditions:
                holder.conditions.remove(t.condition)
            lines.append(ended)
        else:
            kept.append(t)
    state.combat.timed = kept
    for e in [e for e in holder.effects if e.repeat and e.dc]:  # a spell it may shake off (Hold Person)
        rolled = check(holder, e.repeat, ctx.rng, save=True).roll if isinstance(holder, Character) else \
            creature_save_roll(holder, e.repeat, ctx.rng)
        said = f"{p.name}'s {e.repeat} save against {e.spell} {rolled.expression} → {rolled.total} vs DC {e.dc}"
        if rolled.total >= e.dc:
            effects.take_off(holder, e)
            lines.append(f"{said}: {e.spell} ends for {p.name}")
        else:
            lines.append(f"{said}: {e.spell} holds")
    return lines


def lift_all(state: GameState) -> list[str]:
    """A fight's end lifts the conditions it timed: their durations were counted in its rounds."""
    lines = []
    for t in state.combat.timed:
        p = next((q for q in state.combat.order if q.id == t.holder), None)
        if p is None:
            continue
        holder = holder_of(state, p)
        if t.condition in holder.conditions:
            holder.conditions.remove(t.condition)
            lines.append(f"{p.name} is no longer {t.condition}")
    state.combat.timed = []
    return lines


__all__ = ["set_condition", "combatant_of", "end_of_turn", "holder_of", "lift_all"]
