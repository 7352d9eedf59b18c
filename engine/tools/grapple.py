"""Grappling and shoving (SRD 5.1, CC-BY-4.0): a contest, the attacker's Strength (Athletics) check against the
target's Strength (Athletics) or Dexterity (Acrobatics), whichever is better for it; the winner grapples (the target
is grappled: speed 0) or shoves (the target falls prone, or is pushed 5 feet). A target more than one size larger
cannot be grappled or shoved. A player character's grapple or shove in a fight takes one attack of the Attack
action (engine/rules/economy.py)."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import Field

from .. import bestiary
from ..dice import Roll, roll
from ..errors import BadInput, ToolError
from ..rules import check, economy
from ..rules.checks import SKILLS, proficiency_bonus, skills_of
from ..rules.origins import species_of
from ..state import Character, Participant
from .afflictions import combatant_of
from .hitpoints import Target, resolve_hp_target
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool

SIZES = bestiary.SIZES


class GrappleArgs(Args):
    target: str = Field(min_length=1, max_length=60)
    attacker: str | None = Field(None, max_length=60)  # default: the acting player's character
    kind: Literal["grapple", "shove", "push"] = "grapple"  # push: 5 feet away instead of prone


@tool(example='<grapple attacker="Aria" target="Goblin 1"/>; <grapple attacker="Aria" target="Goblin 1" kind="shove"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def grapple(ctx: ToolContext, args: GrappleArgs) -> str:
    """Grapple or shove someone: the engine rolls the contest (Athletics against Athletics or Acrobatics) and on a
    win the target is grappled, knocked prone (shove) or pushed 5 feet (push)."""
    attacker = resolve_hp_target(ctx, args.attacker) if args.attacker else ctx.character(None)
    target = resolve_hp_target(ctx, args.target, reach=True)
    if target is attacker:
        raise ToolError("no one grapples themselves")
    size_a, size_t = _size(attacker), _size(target)
    if SIZES.index(size_t) > SIZES.index(size_a) + 1:
        raise ToolError(f"{target.name} is too big ({size_t}) for {attacker.name} ({size_a}) to {args.kind}",
                        public=True)
    if isinstance(attacker, Character):
        _take_attack(ctx, attacker)
    mine = _roll(attacker, "athletics", ctx.rng)
    skill = "athletics" if _bonus(target, "athletics") >= _bonus(target, "acrobatics") else "acrobatics"
    theirs = _roll(target, skill, ctx.rng)
    head = (f"{attacker.name} tries to {args.kind} {target.name}: Athletics {mine.expression} → {mine.total} against "
            f"{skill.capitalize()} {theirs.expression} → {theirs.total}")
    if mine.total <= theirs.total:  # a tie keeps things as they were
        told = f"{head}: {target.name} holds."
        return Told(told, told)
    if args.kind == "grapple":
        won = "grappled (speed 0; it ends if the grappler is incapacitated or they are moved apart)"
        condition = "grappled"
    elif args.kind == "shove":
        won, condition = "knocked prone", "prone"
    else:
        won, condition = "pushed 5 feet away", None
    if condition is not None and condition not in target.conditions:
        target.conditions.append(condition)
    told = f"{head}: {target.name} is {won}."
    return Told(told, told)


def _take_attack(ctx: ToolContext, ch: Character) -> None:
    holder = combatant_of(ctx.state, ch)
    if holder is None:
        return
    if ctx.state.combat.current() is not holder:
        now = ctx.state.combat.current()
        raise ToolError(f"it is {now.name if now else 'no one'}'s turn, not {ch.name}'s", public=True)
    try:
        economy.attack(holder, ch, light=False)
    except BadInput as exc:
        raise ToolError(exc.message.rstrip("."), public=exc.message) from None


def _size(who: Target) -> str:
    if isinstance(who, Character):
        sp = species_of(who)
        return (sp.size if sp else "Medium").lower()
    found = bestiary.find(who.monster) if isinstance(who, Participant) and who.monster else None
    return found.size if found is not None else "medium"


def _bonus(who: Target, skill: str) -> int:
    if isinstance(who, Character):  # the sheet's modifier, without rolling (a roll would spend an inspiration)
        return who.abilities.mod(SKILLS[skill]) + (proficiency_bonus(who.level) if skill in skills_of(who) else 0)
    found = bestiary.find(who.monster) if isinstance(who, Participant) and who.monster else None
    if found is not None and skill in found.skills:
        return found.skills[skill]
    scores = getattr(who, "abilities", None)
    return scores.mod("strength" if skill == "athletics" else "dexterity") if scores is not None else 0


def _roll(who: Target, skill: str, rng: random.Random) -> Roll:
    if isinstance(who, Character):
        return check(who, skill, rng).roll
    bonus = _bonus(who, skill)
    return roll(f"1d20{bonus:+d}" if bonus else "1d20", rng)


__all__ = ["grapple"]
