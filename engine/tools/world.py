"""World tools: travel, location state, secrets, NPC whereabouts and the party."""

from __future__ import annotations

from pydantic import Field, field_validator

from ..errors import ToolError
from ..shops import hand_out
from ..entities import NPC
from ..visibility import (describe_location, exits_line, hidden_way, npc_card, places_players_know, require_here,
                          require_known_secret, require_self)
from .registry import EVERY_AGENT, NARRATIVE, NPC_AGENT, Args, Told, ToolContext, tool


class LocationArgs(Args):
    location: str = Field(min_length=1, max_length=80)


@tool(example='<change_location location="market-square"/>', agents={NARRATIVE}, changes_state=True, body="location")
def change_location(ctx: ToolContext, args: LocationArgs) -> str:
    """Move the party through an open exit of the current location; NPCs in the party come along."""
    who = _mover(ctx)
    if ctx.state.combat.active:
        raise ToolError("the party cannot travel during combat; end the combat first",
                        public=f"{who} cannot leave in the middle of a fight.")
    here = ctx.state.location()
    there = ctx.location(args.location)
    if there.id == here.id:
        raise ToolError(f"the party is already at {here.name}", public=f"{who} is already at {here.name}.")
    # Players read where the move failed to go only if they know of the place, and a way behind a secret they have
    # not found is, to them, no way at all: the refusal must not tell them it is there.
    where = f"go to {there.name}" if there.id in places_players_know(ctx.state) else "go that way"
    nowhere = f"{who} could not {where}: no way leads there from {here.name}."
    exit_ = next((e for e in here.exits if e.to == there.id), None)
    if exit_ is None:
        raise ToolError(f"there is no way from {here.name} to {there.name}; exits: {exits_line(ctx.state, here)}",
                        public=nowhere)
    if not here.exit_open(exit_):
        raise ToolError(f"the way to {there.name} is not open yet",
                        public=nowhere if hidden_way(here, exit_) else f"{who} could not {where}: the way is closed.")
    ctx.state.current_location = there.id
    for npc_id in ctx.state.party.npc_ids:
        ctx.state.npcs[npc_id].location = there.id
    return f"The party arrives at {there.name}. {describe_location(ctx.state, there)}"


def _mover(ctx: ToolContext) -> str:
    """Who players read tried to travel: the acting character, else the party."""
    ch = ctx.state.characters.get(ctx.actor_id or "")
    return ch.name if ch is not None else "The party"


class LocationRef(Args):
    location: str | None = Field(None, max_length=80)


@tool(example='<get_location/> for where you are, or <get_location location="old-mill"/>',
      agents=EVERY_AGENT, changes_state=False, body="location")
def get_location(ctx: ToolContext, args: LocationRef) -> str:
    """Read a location's description, exits, state flags and who is there (where you are by default)."""
    loc = ctx.location(args.location)
    require_here(ctx.state, ctx.viewer, loc, "look around")
    return f"{loc.name} ({loc.id}): {describe_location(ctx.state, loc, ctx.viewer)}"


TRUE_WORDS, FALSE_WORDS = {"true", "yes", "on", "1", "open"}, {"false", "no", "off", "0", "closed", "shut"}


class LocationStateArgs(Args):
    flag: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")
    value: bool | int | str = True
    location: str | None = Field(None, max_length=80)

    @field_validator("value", mode="before")
    @classmethod
    def _words(cls, value: object) -> object:
        """Tag attributes are text: "no", "off" or "0" must not read as true."""
        if isinstance(value, str):
            word = value.strip().lower()
            if word in TRUE_WORDS:
                return True
            if word in FALSE_WORDS:
                return False
            if word.lstrip("-").isdigit():
                return int(word)
        return value


@tool(example='<update_location_state flag="gate_open" value="true"/>', agents={NARRATIVE, NPC_AGENT}, changes_state=True)
def update_location_state(ctx: ToolContext, args: LocationStateArgs) -> str:
    """Set a state flag on a location (where you are by default): a door unlocked, a fire lit, the tide out."""
    loc = ctx.location(args.location)
    require_here(ctx.state, ctx.viewer, loc, "change things")
    value = args.value
    before = loc.flags.get(args.flag)
    if isinstance(before, bool) and not isinstance(value, bool):
        raise ToolError(f"{args.flag} is a yes/no flag: give value=\"true\" or value=\"false\"")
    loc.flags[args.flag] = value
    opened = [ctx.state.locations[e.to].name for e in loc.exits if e.requires == args.flag and loc.exit_open(e)]
    tail = f" The way to {', '.join(opened)} is now open." if opened else ""
    return f"{loc.name}: {args.flag} is now {value} (was {before}).{tail}"


class SecretArgs(Args):
    secret: str = Field(min_length=1, max_length=80)


@tool(example='<discover_secret secret="loose-brick"/>', agents={NARRATIVE, NPC_AGENT}, changes_state=True,
      persistence="permanent", body="secret", subject=lambda ctx, args: args.secret.strip().lower())
def discover_secret(ctx: ToolContext, args: SecretArgs) -> str:
    """Reveal a secret the party finds where it is, or one an NPC tells them (an NPC may tell only what it knows).
    One the adventure guards with a DC is found by ability_check with its obstacle, not by this tag."""
    key = args.secret.strip().lower()
    for loc in ctx.state.locations.values():
        secret = loc.secret(key)
        if secret is None:
            continue
        require_known_secret(ctx.state, ctx.viewer, key, loc)
        already = secret.discovered
        if not already and secret.dc is not None and not ctx.viewer.npc:
            # What the adventure guards with a DC is found by the check (ability_check with obstacle rolls it
            # against that DC and reveals it on a success); an NPC who knows it may still tell it.
            how = f"a DC {secret.dc} {secret.skill} check" if secret.skill else f"a DC {secret.dc} check"
            raise ToolError(f"the adventure hides '{secret.id}' behind {how}: roll it with "
                            f'<ability_check character="…" obstacle="{secret.id}"/> (a success reveals it)')
        secret.discovered = True
        opened = [ctx.state.locations[e.to].name for e in loc.exits if e.requires == key]
        tail = f" A way to {', '.join(opened)} is now open." if opened and not already else ""
        told = f"{'Already known' if already else 'Secret discovered'} at {loc.name}: {secret.text}{tail}"
        # What the secret hides is handed over once, when the party finds it where it is (not when it is told of).
        if secret.loot is not None and not secret.looted and loc.id == ctx.state.current_location and not ctx.viewer.npc:
            loot = hand_out(ctx.state, secret.loot, ctx.actor_id)
            if loot is not None:
                secret.looted = True
                return Told(f"{told} {loot}", f"{told.split(':', 1)[0]}. {loot}")
        return told
    raise ToolError(f"there is no secret '{args.secret}'")


class MoveNpcArgs(Args):
    npc: str = Field(min_length=1, max_length=80)
    location: str = Field(min_length=1, max_length=80)


@tool(example='<move_npc_to_location npc="tomas-reed" location="market-square"/>', agents={NARRATIVE, NPC_AGENT}, changes_state=True)
def move_npc_to_location(ctx: ToolContext, args: MoveNpcArgs) -> str:
    """Send an NPC somewhere else; an NPC agent may move only itself. An NPC in the party leaves it."""
    npc = _npc_self_only(ctx, args.npc, "move")
    loc = ctx.location(args.location)
    if npc.location == loc.id and npc.id not in ctx.state.party.npc_ids:
        raise ToolError(f"{npc.name} is already at {loc.name}")
    left = ""
    if npc.id in ctx.state.party.npc_ids:
        ctx.state.party.npc_ids.remove(npc.id)
        left = f" {npc.name} leaves the party."
    npc.location = loc.id
    return f"{npc.name} goes to {loc.name}.{left}"


class NpcArgs(Args):
    npc: str = Field(min_length=1, max_length=80)


@tool(example='<add_to_party npc="tomas-reed"/>', agents={NARRATIVE, NPC_AGENT}, changes_state=True, body="npc")
def add_to_party(ctx: ToolContext, args: NpcArgs) -> str:
    """An NPC who is here joins the party and travels with it; an NPC agent may add only itself."""
    npc = _npc_self_only(ctx, args.npc, "add to the party")
    if npc.id in ctx.state.party.npc_ids:
        raise ToolError(f"{npc.name} is already in the party")
    if npc.location != ctx.state.current_location:
        raise ToolError(f"{npc.name} is not here to join")
    if npc.hp == 0:
        raise ToolError(f"{npc.name} is unconscious and cannot join")
    ctx.state.party.npc_ids.append(npc.id)
    return f"{npc.name} joins the party."


@tool(example='<remove_from_party npc="tomas-reed"/>', agents={NARRATIVE, NPC_AGENT}, changes_state=True, body="npc")
def remove_from_party(ctx: ToolContext, args: NpcArgs) -> str:
    """An NPC leaves the party and stays where the party is now; an NPC agent may remove only itself."""
    npc = _npc_self_only(ctx, args.npc, "remove from the party")
    if npc.id not in ctx.state.party.npc_ids:
        raise ToolError(f"{npc.name} is not in the party")
    ctx.state.party.npc_ids.remove(npc.id)
    npc.location = ctx.state.current_location
    return f"{npc.name} leaves the party and stays at {ctx.state.location().name}."


def _npc_self_only(ctx: ToolContext, ref: str, verb: str) -> NPC:
    if ctx.state.combat.active:
        raise ToolError("not during combat: the initiative order is fixed until the fight ends")
    npc = ctx.npc(ref)
    require_self(ctx.state, ctx.viewer, npc, verb)
    return npc


@tool(example='<get_npc npc="tomas-reed"/>', agents=EVERY_AGENT, changes_state=False, persistence="permanent", body="npc",
      subject=lambda ctx, args: ctx.npc(args.npc).id)
def get_npc(ctx: ToolContext, args: NpcArgs) -> str:
    """Read an NPC's persona and attitude (kept for the rest of the game); an NPC agent sees no one else's secrets."""
    return npc_card(ctx.state, ctx.npc(args.npc), ctx.viewer)
