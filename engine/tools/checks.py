"""Checks and saving throws rolled from a character's sheet, against a DC the agent sets: the engine adds the
right modifier and proficiency and says whether it succeeds; the story follows the result."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..errors import BadInput, ToolError
from ..rules import Check, ability_of, check
from ..rules.checks import creature_save_roll
from ..basics import slug
from ..entities import Exit, Location, Secret
from ..state import Character
from ..shops import hand_out
from .hitpoints import resolve_hp_target
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool


class CheckArgs(Args):
    character: str = Field(min_length=1, max_length=60)
    skill: str | None = Field(None, min_length=1, max_length=40)  # a skill (stealth) or an ability (strength, dex)
    dc: int | None = Field(None, ge=1, le=40)
    advantage: Literal["advantage", "disadvantage"] | None = None
    obstacle: str | None = Field(None, min_length=1, max_length=80)  # a secret here, or where a closed exit leads

    @model_validator(mode="after")
    def _skill(self) -> "CheckArgs":
        if self.skill is None and self.obstacle is None:
            raise ValueError("give the skill (or ability) to check, or the obstacle whose skill the adventure sets")
        return self


class SaveArgs(Args):
    character: str = Field(min_length=1, max_length=60)
    ability: str = Field(min_length=1, max_length=20)
    dc: int | None = Field(None, ge=1, le=40)
    advantage: Literal["advantage", "disadvantage"] | None = None
    against: Literal["poison", "magic", "fear", "charm"] | None = None  # what it resists: some species have advantage


@tool(example='<ability_check character="Aria" skill="stealth" dc="15"/>; for a secret or closed way with a DC: '
              '<ability_check character="Aria" obstacle="loose-brick"/>', agents={NARRATIVE, COMBAT},
      changes_state=True)
def ability_check(ctx: ToolContext, args: CheckArgs) -> str:
    """Roll a player character's skill or ability check from their sheet (ability modifier and proficiency are
    added for you) against the DC you set (10 easy, 15 medium, 20 hard); narrate the result it gives. With an
    obstacle (a secret here, or the destination of a closed exit) the adventure's DC is used, and a success
    reveals the secret or opens the way."""
    ch = _character(ctx, args.character)
    if args.obstacle is not None:
        return _against_obstacle(ctx, ch, args, args.obstacle)
    assert args.skill is not None
    return _rolled(ctx, ch, args.skill, args.dc, args.advantage, save=False)


@tool(example='<saving_throw character="Aria" ability="dexterity" dc="13"/>', agents={NARRATIVE, COMBAT},
      changes_state=False)
def saving_throw(ctx: ToolContext, args: SaveArgs) -> str:
    """Roll a saving throw (strength, dexterity, constitution, intelligence, wisdom or charisma) against the DC of
    the trap, spell or poison: a player character's from their sheet, a creature's or person's from their stat
    block (its proficient saves, else its scores); narrate the result it gives."""
    if ctx.state.find_character(args.character) is not None:
        return _rolled(ctx, _character(ctx, args.character), args.ability, args.dc, args.advantage, save=True,
                       against=args.against)
    ability = ability_of(args.ability)
    if ability is None:
        raise ToolError(f"'{args.ability}' is not an ability (strength, dexterity, constitution, intelligence, "
                        "wisdom, charisma)")
    creature = resolve_hp_target(ctx, args.character)
    rolled = creature_save_roll(creature, ability, ctx.rng, args.advantage)
    said = f"{creature.name}'s {ability.capitalize()} save: {rolled.expression} → {rolled.total}"
    if args.dc is None:
        return Told(said + " (no DC given: judge the total yourself)", said)
    said += f" vs DC {args.dc}, {'success' if rolled.total >= args.dc else 'failure'}"
    return Told(said, said)


def _character(ctx: ToolContext, name: str) -> Character:
    found = ctx.state.find_character(name)
    if found is None:
        known = ", ".join(c.name for c in ctx.state.characters.values()) or "none yet"
        raise ToolError(f"there is no player character called '{name}' (characters: {known})")
    return found


def _obstacle(loc: Location, ref: str) -> tuple[Secret | None, Exit | None]:
    """The secret of this place named `ref`, or the closed exit leading to `ref` (and the secret that closes it)."""
    key = slug(ref)
    secret = loc.secret(key)
    if secret is not None:
        return secret, None
    exit_ = next((e for e in loc.exits if e.to == key and not loc.exit_open(e)), None)
    if exit_ is None:
        open_ = any(e.to == key for e in loc.exits)
        raise ToolError(f"the way to '{ref}' is already open" if open_ else
                        f"there is no secret or closed way called '{ref}' here")
    return loc.secret(exit_.requires or ""), exit_


def _against_obstacle(ctx: ToolContext, ch: Character, args: CheckArgs, ref: str) -> Told:
    """A check against the adventure's DC for a secret or a closed way; a success finds or opens it. The skill is
    the obstacle's unless the agent names another way to try (the DC stays the adventure's)."""
    loc = ctx.state.location()
    secret, exit_ = _obstacle(loc, ref)
    if exit_ is None and secret is not None and secret.discovered:
        raise ToolError(f"the secret '{secret.id}' is already discovered")
    setting = exit_ if exit_ is not None and exit_.dc is not None else secret
    if setting is None or setting.dc is None:
        raise ToolError(f"the adventure sets no DC for '{ref}': give skill and dc, without obstacle")
    if args.dc is not None and args.dc != setting.dc:
        raise ToolError(f"the adventure sets DC {setting.dc} for '{ref}'; leave dc out")
    skill = args.skill or setting.skill
    if skill is None:
        raise ToolError(f"the adventure names no skill for '{ref}': give skill")
    result = _check(ctx, ch, skill, args.advantage, save=False)
    said = f"{ch.name}'s {result.outcome(setting.dc)}"
    if result.roll.total < setting.dc:
        return Told(said + f" The {'secret stays hidden' if exit_ is None else 'way stays closed'}.", said)
    found = []
    if secret is not None and not secret.discovered:
        secret.discovered = True
        found.append(f"Secret discovered: {secret.text}")
    if exit_ is not None and exit_.requires is not None and secret is None:
        loc.flags[exit_.requires] = True
    opened = [ctx.state.locations[e.to].name for e in loc.exits if e.requires is not None and loc.exit_open(e)
              and (e is exit_ or (secret is not None and e.requires == secret.id))]
    if opened:
        found.append(f"The way to {', '.join(opened)} is now open.")
    if secret is not None and secret.loot is not None and not secret.looted:
        loot = hand_out(ctx.state, secret.loot, ctx.actor_id)
        if loot is not None:
            secret.looted = True
            found.append(loot)
    public = " ".join([said + ".", *(f for f in found if not f.startswith("Secret discovered"))])
    return Told(" ".join([said + ".", *found]), public)


def _check(ctx: ToolContext, ch: Character, what: str, mode: str | None, *, save: bool,
           against: str | None = None) -> Check:
    try:
        return check(ch, what, ctx.rng, mode, save=save, against=against)  # type: ignore[arg-type]
    except BadInput as exc:
        raise ToolError(exc.message.rstrip(".")) from None  # the registry ends the sentence


def _rolled(ctx: ToolContext, ch: Character, what: str, dc: int | None, mode: str | None, *, save: bool,
            against: str | None = None) -> Told:
    result = _check(ctx, ch, what, mode, save=save, against=against)
    said = f"{ch.name}'s {result.outcome(dc)}"
    return Told(said + ("" if dc is not None else " (no DC given: judge the total yourself)"), said)
