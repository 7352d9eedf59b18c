"""Hit points: damage (by type, against resistances) and healing for anyone, a player character's by the SRD's
rules of life and death, and finding whom a tool or command means to strike or heal."""

from __future__ import annotations

import difflib
import random
from typing import Literal

from pydantic import Field

from ..basics import DamageType
from ..entities import NPC
from ..errors import ToolError
from ..rules import life
from ..rules.conditions import hp_maximum
from ..rules.checks import check
from ..rules.damage import adjust as adjust_damage
from ..state import Character, Participant
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool


Target = Character | NPC | Participant  # anyone with hit points: a blow or a spell lands on one of these


class HpArgs(Args):
    amount: int = Field(ge=1, le=10_000)
    kind: Literal["damage", "healing"] = "damage"
    target: str | None = Field(None, max_length=60)
    damage_type: DamageType | None = None  # fire, poison, …: resistances halve it  # type: ignore[valid-type]


@tool(example='<update_hp target="Aria" amount="7" kind="damage"/> or <update_hp target="Goblin 1" amount="4" kind="healing"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def update_hp(ctx: ToolContext, args: HpArgs) -> str:
    """Apply damage or healing to a character, NPC or combatant; hit points stay between 0 and their maximum."""
    told = _apply_hp(resolve_hp_target(ctx, args.target), args.amount, args.kind, rng=ctx.rng,
                     damage_type=args.damage_type)
    return Told(told, told)  # "Giant Rat 1 takes 6 damage: HP 0/7. Giant Rat 1 is defeated." — every word of it


def _apply_hp(target: Character | NPC | Participant, amount: int, kind: str, critical: bool = False,
              rng: random.Random | None = None, damage_type: str | None = None, weapon: bool = False) -> str:
    """Damage or healing to anyone; damage by its type against the target's resistances (engine/rules/damage.py),
    a player character's by the SRD (engine/rules/life.py), and with `rng` the concentration save that damage calls
    for (a healing never needs one)."""
    said = ""
    if kind == "damage":
        amount, why = adjust_damage(target, amount, damage_type, weapon)
        said = f" ({why})" if why else ""
    if isinstance(target, Character):
        return _character_hp(target, amount, kind, critical, rng, said)
    hp, max_hp = target.hp or 0, target.max_hp or 1
    new = max(0, hp - amount) if kind == "damage" else min(max_hp, hp + amount)
    target.hp = new
    conditions = target.conditions
    name = target.name
    note = ""
    if new == 0 and hp > 0:
        if isinstance(target, Participant):
            note = f" {name} is defeated."
            if "defeated" not in conditions:
                conditions.append("defeated")
        else:
            note = f" {name} falls unconscious."
            if "unconscious" not in conditions:
                conditions.append("unconscious")
            if isinstance(target, Character) and target.concentration:  # unconscious: concentration breaks
                note += f" Concentration on {target.concentration} ends."
                target.concentration = None
    elif new > 0 and hp == 0:
        for c in ("unconscious", "defeated"):
            if c in conditions:
                conditions.remove(c)
                note = f" {name} is no longer {c}."
    if kind == "damage" and hp == 0:
        note = f" {name} was already at 0 HP."
    change = f"takes {hp - new} damage{said}" if kind == "damage" else f"regains {new - hp} HP"
    return f"{name} {change}: HP {new}/{max_hp}.{note}"


def _character_hp(ch: Character, amount: int, kind: str, critical: bool, rng: random.Random | None,
                  said: str = "") -> str:
    """A player character's hit points by the SRD: temporary ones first, death saves at 0, death itself; damage
    to one who concentrates calls for a CON save (DC 10 or half the damage) that keeps the spell."""
    before = ch.hp
    if kind == "damage":
        note = life.damage(ch, amount, critical)
        if ch.concentration and ch.hp > 0 and amount > 0:
            dc = max(10, amount // 2)
            if rng is None:  # no dice at hand: the GM is told to roll it
                note += f" Concentration on {ch.concentration}: a DC {dc} Constitution save keeps it."
            else:
                kept = check(ch, "constitution", rng, save=True)
                held = kept.roll.total >= dc
                note += (f" Concentration on {ch.concentration}: {kept.outcome(dc)}"
                         + (", it holds." if held else ", it ends."))
                if not held:
                    ch.concentration = None
        return f"{ch.name} takes {amount} damage{said}: HP {ch.hp}/{ch.max_hp}.{note}"
    if ch.dead:
        raise ToolError(f"{ch.name} is dead: healing does not bring them back", public=True)
    ch.hp = min(hp_maximum(ch.conditions, ch.max_hp), ch.hp + amount)  # halved at exhaustion 4
    return f"{ch.name} regains {ch.hp - before} HP: HP {ch.hp}/{ch.max_hp}.{life.heal(ch, before)}"


def resolve_hp_target(ctx: ToolContext, ref: str | None, *, reach: bool = False) -> Character | NPC | Participant:
    """A combatant by name first (enemies live only in combat), then a character, then an NPC (`reach`: only one
    who is here, as for a blow or a spell)."""
    if ref is None:
        return ctx.character(None)
    key = ref.strip().lower()
    for p in ctx.state.combat.order if ctx.state.combat.active else []:
        if p.name.lower() == key or p.id == key:
            if p.hp is not None:
                return p
            break  # a character or ally: their sheet holds the hit points
    ch = ctx.state.find_character(ref)
    if ch is not None:
        return ch
    npc = ctx.state.find_npc(ref)
    if npc is not None:
        if not reach or npc in ctx.state.present_npcs():
            return npc
        raise ToolError(f"{npc.name} is not here")  # no blow or spell reaches across the map
    names = [c.name for c in ctx.state.characters.values()] + [p.name for p in ctx.state.combat.order if p.hp is not None]
    close = difflib.get_close_matches(key, [n.lower() for n in names] + [n.name.lower() for n in ctx.state.present_npcs()],
                                      n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ToolError(f"no one called '{ref}' has hit points here ({hint}try: {', '.join(names) or 'nobody'})")
