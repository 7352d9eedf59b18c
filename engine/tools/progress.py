"""Advancement: the GM awards experience points, or grants a level by milestone, as the game's way of levelling
says (GameState.leveling); the players then take the level with /levelup."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from ..errors import ToolError
from ..rules.levels import MAX_LEVEL, earned
from ..state import Character
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool

MAX_AWARD = 100_000  # XP one call may give in all (the SRD's toughest foe is worth 155,000: a party shares it)


def _names(value: object) -> object:
    """`to="Aria, Bram"` as a tag's attribute gives one string: the names it lists."""
    return [n.strip() for n in value.split(",") if n.strip()] if isinstance(value, str) else value


Names = Annotated[list[str], BeforeValidator(_names)]


class AwardXpArgs(Args):
    xp: int = Field(ge=1, le=MAX_AWARD)
    to: Names = Field(default_factory=list, max_length=8)  # player characters (none: the whole party)
    reason: str = Field("", max_length=120)


class MilestoneArgs(Args):
    to: Names = Field(default_factory=list, max_length=8)
    reason: str = Field("", max_length=120)


def _who(ctx: ToolContext, names: list[str]) -> list[Character]:
    if names:
        chosen = [ctx.character(n) for n in names]
        if len({c.owner_id for c in chosen}) != len(chosen):
            raise ToolError("a character is named twice")
        return chosen
    party = [ctx.state.characters[o] for o in ctx.state.party.player_ids if o in ctx.state.characters]
    if not party:
        raise ToolError("the party has no player characters to award")
    return party


def _ready(chosen: list[Character], leveling: str) -> str:
    ready = [c.name for c in chosen if earned(c, leveling)]
    if not ready:
        return ""
    return (f" {' and '.join(ready)} {'has' if len(ready) == 1 else 'have'} earned a level: "
            f"{'they' if len(ready) > 1 else 'the player'} may take it with /levelup.")


@tool(example='<award_xp xp="300" reason="the wreckers driven off"/> (split among the party) or '
              '<award_xp xp="50" to="Aria" reason="a clever plan"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def award_xp(ctx: ToolContext, args: AwardXpArgs) -> str:
    """Award experience points for what the party achieved (foes overcome, a quest done), split evenly among the
    characters named or the whole party; levels come only from XP in games that level by XP."""
    if ctx.state.leveling == "milestone":
        raise ToolError("this game levels by milestone, not XP: use grant_milestone when the story reaches one")
    chosen = _who(ctx, args.to)
    share, left = divmod(args.xp, len(chosen))
    for n, c in enumerate(chosen):
        c.xp = min(10_000_000, c.xp + share + (1 if n < left else 0))
    why = f" for {args.reason.rstrip('.')}" if args.reason else ""
    each = f"{share:,} XP each" if len(chosen) > 1 else f"{args.xp:,} XP"
    told = f"{' and '.join(c.name for c in chosen)} gain{'s' if len(chosen) == 1 else ''} {each}{why}."
    return Told(told + _ready(chosen, "xp"), told + _ready(chosen, "xp"))


@tool(example='<grant_milestone reason="the lantern relit"/> (the whole party) or <grant_milestone to="Aria"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def grant_milestone(ctx: ToolContext, args: MilestoneArgs) -> str:
    """Grant a level by milestone, when the story reaches one (a chapter closed, a great deed): each character named,
    or the whole party, may take one level. Only in games that level by milestone."""
    if ctx.state.leveling != "milestone":
        raise ToolError("this game levels by XP: use award_xp for what the party achieved")
    chosen = _who(ctx, args.to)
    capped = [c.name for c in chosen if c.level + c.milestones >= MAX_LEVEL]
    if capped:
        raise ToolError(f"{' and '.join(capped)} can gain no more levels (the highest is {MAX_LEVEL})")
    for c in chosen:
        c.milestones += 1
    why = f" ({args.reason.rstrip('.')})" if args.reason else ""
    told = f"A milestone{why}: {' and '.join(c.name for c in chosen)} may take a level (/levelup)."
    return Told(told, told)
