"""Checks and saving throws rolled from a character's sheet, against a DC the agent sets: the engine adds the
right modifier and proficiency and says whether it succeeds; the story follows the result."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..errors import BadInput, ToolError
from ..rules import check
from ..state import Character
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool


class CheckArgs(Args):
    character: str = Field(min_length=1, max_length=60)
    skill: str = Field(min_length=1, max_length=40)  # a skill (stealth) or an ability (strength, dex)
    dc: int | None = Field(None, ge=1, le=40)
    advantage: Literal["advantage", "disadvantage"] | None = None


class SaveArgs(Args):
    character: str = Field(min_length=1, max_length=60)
    ability: str = Field(min_length=1, max_length=20)
    dc: int | None = Field(None, ge=1, le=40)
    advantage: Literal["advantage", "disadvantage"] | None = None


@tool(example='<ability_check character="Aria" skill="stealth" dc="15"/>', agents={NARRATIVE, COMBAT},
      changes_state=False)
def ability_check(ctx: ToolContext, args: CheckArgs) -> str:
    """Roll a player character's skill or ability check from their sheet (ability modifier and proficiency are
    added for you) against the DC you set (10 easy, 15 medium, 20 hard); narrate the result it gives."""
    return _rolled(ctx, _character(ctx, args.character), args.skill, args.dc, args.advantage, save=False)


@tool(example='<saving_throw character="Aria" ability="dexterity" dc="13"/>', agents={NARRATIVE, COMBAT},
      changes_state=False)
def saving_throw(ctx: ToolContext, args: SaveArgs) -> str:
    """Roll a player character's saving throw (strength, dexterity, constitution, intelligence, wisdom or
    charisma) from their sheet against the DC of the trap, spell or poison; narrate the result it gives."""
    return _rolled(ctx, _character(ctx, args.character), args.ability, args.dc, args.advantage, save=True)


def _character(ctx: ToolContext, name: str) -> Character:
    found = ctx.state.find_character(name)
    if found is None:
        known = ", ".join(c.name for c in ctx.state.characters.values()) or "none yet"
        raise ToolError(f"there is no player character called '{name}' (characters: {known})")
    return found


def _rolled(ctx: ToolContext, ch: Character, what: str, dc: int | None, mode: str | None, *, save: bool) -> Told:
    try:
        result = check(ch, what, ctx.rng, mode, save=save)  # type: ignore[arg-type]
    except BadInput as exc:
        raise ToolError(exc.message.rstrip(".")) from None  # the registry ends the sentence
    said = f"{ch.name}'s {result.outcome(dc)}"
    return Told(said + ("" if dc is not None else " (no DC given: judge the total yourself)"), said)
