"""Death saving throws and stabilising, for the agents (players roll theirs with /deathsave); the rules are in
engine/rules/life.py."""

from __future__ import annotations

from pydantic import Field

from ..errors import BadInput, ToolError
from ..rules import check, life
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool


class DeathSaveArgs(Args):
    character: str = Field(min_length=1, max_length=60)


@tool(example='<death_save character="Aria"/>', agents={COMBAT, NARRATIVE}, changes_state=True, body="character")
def death_save(ctx: ToolContext, args: DeathSaveArgs) -> str:
    """Roll a dying player character's death saving throw, on their turn (a d20: 10 or more succeeds; three
    successes stabilise, three failures kill; a 1 is two failures, a 20 brings them back with 1 HP)."""
    ch = ctx.character(args.character)
    try:
        told = life.death_save(ch, ctx.rng)
    except BadInput as exc:
        raise ToolError(exc.message.rstrip("."), public=exc.message) from None
    return Told(told, told)


class StabilizeArgs(Args):
    character: str = Field(min_length=1, max_length=60)  # the dying one
    healer: str | None = Field(None, max_length=60)  # a player character who tends them (a DC 10 Medicine check)


@tool(example='<stabilize character="Aria" healer="Bram"/> (Bram rolls Medicine, DC 10), or <stabilize '
              'character="Aria"/> for what needs no roll (a healer\'s kit)',
      agents={COMBAT, NARRATIVE}, changes_state=True)
def stabilize(ctx: ToolContext, args: StabilizeArgs) -> str:
    """Stabilise a dying player character: with a healer, the healer's Medicine check against DC 10 decides; without
    one (a healer's kit used, an NPC's care), it simply works. Spare the Dying does it through cast_spell."""
    ch = ctx.character(args.character)
    try:
        if args.healer is None or ch.dead or ch.hp > 0 or ch.stable:  # nothing to roll for: say why, or do it
            told = life.stabilize(ch)
        else:
            healer = ctx.character(args.healer)
            if healer.hp == 0:
                raise ToolError(f"{healer.name} is down and cannot tend anyone", public=True)
            rolled = check(healer, "medicine", ctx.rng)
            head = f"{healer.name} tends {ch.name}: {rolled.outcome(10)}"
            told = f"{head}. {life.stabilize(ch)}" if rolled.roll.total >= 10 else f"{head}; {ch.name} is still dying."
    except BadInput as exc:
        raise ToolError(exc.message.rstrip("."), public=exc.message) from None
    return Told(told, told)
