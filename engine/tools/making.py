"""The world grows in play: the Game Master makes the people, places and things it improvises real, so the next
turn, `/status`, every tool and an exported adventure know them.

Each addition is checked as an adventure file is (engine/content.py's cross-references over the whole world after
it, ids and names unique, no clash with a player character, exits that lead somewhere and back), bounded (a few a
turn, a few hundred a game, every text capped), and refused with a sentence otherwise, leaving nothing behind. It
is state like any other: undone, retried and replayed with its turn. `made` holds the turn it was made in (None:
written in the adventure), which is how admins find what play added (engine/world.py)."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from ..basics import Item, Price
from ..entities import NPC, Exit, ItemInfo, Location, Secret, ShopItem
from ..bestiary import stat_fields
from ..errors import BadInput, ToolError
from ..state import GameState
from .registry import NARRATIVE, Args, Told, ToolContext, tool

PER_TURN = 4  # additions of every kind one turn may make
MOST = {"npc": 150, "location": 80, "item": 200}  # additions of each kind in a game


def _listed(value: object) -> object:
    """`exits="quay, old-mill"` as an attribute: the places it lists."""
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


Listed = Annotated[list[Annotated[str, Field(min_length=1, max_length=80)]], BeforeValidator(_listed)]


def ascii_id(name: str) -> str:
    """An id as adventure files write them: lowercase ASCII words joined by hyphens."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", plain).strip("-")[:60].strip("-")


def made_count(state: GameState, kind: str) -> int:
    held = {"npc": state.npcs, "location": state.locations, "item": state.items}[kind]
    return sum(1 for e in held.values() if e.made is not None)


def _room(ctx: ToolContext, kind: str) -> list[str]:
    """Refuse past the bounds (a few additions a turn, a game's worth of each kind); the world's problems as they
    are, so that the check after the addition blames it only for new ones."""
    if ctx.counters.get("made", 0) >= PER_TURN:
        raise ToolError(f"{PER_TURN} additions to the world are the most one turn may make; make more next turn")
    if made_count(ctx.state, kind) >= MOST[kind]:
        raise ToolError(f"this game already has {MOST[kind]} {kind}s made in play, the most it may; an admin can "
                        f"remove some (/gm-admin world)")
    return _problems(ctx.state)


def _new_id(ctx: ToolContext, name: str, kind: str) -> str:
    """The id of a new npc, location or item named `name`; refused when the name or id is taken."""
    clean = " ".join(name.split())
    ident = ascii_id(clean)
    if not ident:
        raise ToolError(f"'{name}' needs some letters a-z or digits to make an id of")
    state = ctx.state
    held = {"npc": state.npcs, "location": state.locations, "item": state.items}[kind]
    same = next((e for e in held.values() if e.id == ident or e.name.casefold() == clean.casefold()), None)
    if same is not None:
        raise ToolError(f"there is already a {kind} called {same.name} (id {same.id}): use it, or choose another name")
    if kind == "npc":
        taken = next((c.name for c in state.characters.values()
                      if c.name.casefold() == clean.casefold() or c.name.split()[0].casefold() == clean.split()[0].casefold()), None)
        if taken is not None:
            raise ToolError(f"{taken} is a player character: give the new person another name")
    return ident


def _checked(ctx: ToolContext, before: list[str]) -> None:
    """The world after the addition, checked as an adventure file's references are: nothing may point nowhere.
    Then it counts against the turn's additions."""
    new = [p for p in _problems(ctx.state) if p not in before]
    if new:
        raise ToolError("that would leave the world inconsistent: " + "; ".join(new[:3]))
    ctx.counters["made"] = ctx.counters.get("made", 0) + 1


def world_data(state: GameState) -> dict:
    """The game's world as adventure data (what `references` checks and `lorekeeper world export` writes)."""
    return {"start_location": state.current_location,
            "locations": [loc.model_dump(mode="json") for loc in state.locations.values()],
            "npcs": [n.model_dump(mode="json") for n in state.npcs.values()],
            "quests": [q.model_dump(mode="json") for q in state.quests.values()],
            "encounters": [e.model_dump(mode="json") for e in state.encounters.values()],
            "items": [i.model_dump(mode="json") for i in state.items.values()],
            "shops": [s.model_dump(mode="json") for s in state.shops.values()]}


class CreateNpcArgs(Args):
    name: str = Field(min_length=1, max_length=60)
    role: str = Field("", max_length=80)
    description: str = Field(min_length=1, max_length=600)
    attitude: Literal["friendly", "neutral", "wary", "hostile"] = "neutral"
    location: str | None = Field(None, max_length=80)  # where they are (none: where the party is)
    knows: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(default_factory=list, max_length=6)
    hp: int | None = Field(None, ge=1, le=500)
    ac: int | None = Field(None, ge=1, le=30)
    monster: str | None = Field(None, min_length=1, max_length=60)  # an SRD creature whose stat block they fight by


@tool(example='<create_npc name="Gil Marsh" role="fishmonger" attitude="friendly" description="A stooped man who '
              'smells of brine and knows every boat by its creak."><knows>The Gray Oar crew buys no fish</knows>'
              '</create_npc>; one who can fight, by an SRD stat block: <create_npc name="Brask" role="smuggler boss" '
      'monster="bandit captain" attitude="wary" description="…"/>',
      agents={NARRATIVE}, changes_state=True)
def create_npc(ctx: ToolContext, args: CreateNpcArgs) -> str:
    """Make a person you have just brought into the story real: they keep their name, role, manner and what they
    know, and every tool and later turn can find them. Use it the first time someone new matters, not for
    passers-by; the name must be new (not a player character's). `monster` gives them an SRD creature's stat block
    (AC, HP, scores, saves, attacks) to fight by."""
    before = _room(ctx, "npc")
    ident = _new_id(ctx, args.name, "npc")
    place = ctx.location(args.location).id if args.location else ctx.state.current_location
    persona = args.description.strip()
    if args.knows:
        persona += " Knows: " + "; ".join(k.strip().rstrip(".") for k in args.knows) + "."
    block: dict[str, object] = {}
    if args.monster:
        try:
            base = stat_fields(args.monster)
        except BadInput as exc:
            raise ToolError(exc.message.rstrip(".")) from None
        block = {k: base[k] for k in ("abilities", "actions", "cr", "defences", "saves", "speed")}
        block["hp"], block["ac"] = base["hp"], base["ac"]
    hp = args.hp or block.pop("hp", 10)
    ac = args.ac or block.pop("ac", 10)
    block.pop("hp", None), block.pop("ac", None)
    ctx.state.npcs[ident] = NPC(id=ident, name=" ".join(args.name.split()), persona=persona, location=place,
                                attitude=args.attitude, role=args.role.strip(), hp=hp, max_hp=hp,
                                ac=ac, made=ctx.state.turn, **block)
    _checked(ctx, before)
    where = ctx.state.locations[place].name
    role = f", {args.role.strip()}" if args.role.strip() else ""
    return Told(f"{args.name} (id {ident}{role}, {args.attitude}) now exists at {where}; get_npc reads them.",
                f"New in the world: {args.name}{role}, at {where}.")


class CreateLocationArgs(Args):
    name: str = Field(min_length=1, max_length=60)
    description: str = Field(min_length=1, max_length=800)
    exits: Listed = Field(min_length=1, max_length=6)  # places it leads to (and back from), by id or name
    secret: str | None = Field(None, min_length=1, max_length=300)  # something hidden here, found by a check
    dc: int | None = Field(None, ge=1, le=30)
    skill: str | None = Field(None, min_length=1, max_length=40)


@tool(example='<create_location name="Smugglers\' Cove" exits="saltmere-quay" secret="A tunnel behind the nets" '
              'dc="14" skill="investigation" description="A shingle cove under the cliff, out of sight of the town."/>',
      agents={NARRATIVE}, changes_state=True)
def create_location(ctx: ToolContext, args: CreateLocationArgs) -> str:
    """Make a place you have just described real, joined both ways to places that exist (exits), with at most one
    secret found by a check (dc and skill). The party can then go there with change_location."""
    before = _room(ctx, "location")
    ident = _new_id(ctx, args.name, "location")
    if args.skill is not None and args.dc is None:
        raise ToolError("a skill needs a dc (1 to 30) to find the secret")
    if args.secret is None and args.dc is not None:
        raise ToolError("a dc is for a secret: give the secret too")
    targets = []
    for ref in dict.fromkeys(args.exits):
        found = ctx.state.find_location(ref)
        if found is None:
            raise ToolError(f"there is no place '{ref}' to lead to (places: {', '.join(ctx.state.locations)})")
        targets.append(found)
    secrets = [Secret(id=f"{ident}-secret", text=args.secret, dc=args.dc, skill=args.skill)] if args.secret else []
    ctx.state.locations[ident] = Location(id=ident, name=" ".join(args.name.split()), description=args.description,
                                          exits=[Exit(to=t.id) for t in targets], secrets=secrets, made=ctx.state.turn)
    for target in targets:
        if not any(e.to == ident for e in target.exits):
            target.exits.append(Exit(to=ident))
    _checked(ctx, before)
    ways = ", ".join(t.name for t in targets)
    hidden = f" Its secret ({ident}-secret) is found with discover_secret." if secrets else ""
    return Told(f"{args.name} (id {ident}) now exists, joined both ways to {ways}.{hidden}",
                f"New in the world: {args.name}, reached from {ways}.")


class CreateItemArgs(Args):
    name: str = Field(min_length=1, max_length=60)
    description: str = Field("", max_length=400)
    value: Price | None = None  # its list price ("5 gp")
    weight: float | None = Field(None, ge=0, le=2000)
    location: str | None = Field(None, max_length=80)  # left lying at this place (by id or name, "here")
    carried_by: str | None = Field(None, max_length=80)  # given to this player character
    shop: str | None = Field(None, max_length=80)  # sold by this shop, at its value
    quantity: int = Field(1, ge=1, le=20)


@tool(example='<create_item name="Cursed Ring" value="25 gp" weight="0" carried_by="Aria" description="A black iron '
              'ring that grows cold near the drowned."/>',
      agents={NARRATIVE}, changes_state=True)
def create_item(ctx: ToolContext, args: CreateItemArgs) -> str:
    """Make a notable thing real (a cursed ring, a map, a relic): its name, description, value and weight, and
    where it is: lying at a place (location, "here" for where the party is), carried by a player character
    (carried_by) or sold by a shop (shop, at its value). Ordinary gear needs no making: give it with
    modify_inventory."""
    placed = [p for p in (args.location, args.carried_by, args.shop) if p]
    if len(placed) > 1:
        raise ToolError("an item is in one place: give location, carried_by or shop, not several")
    before = _room(ctx, "item")
    ident = _new_id(ctx, args.name, "item")
    name = " ".join(args.name.split())
    ctx.state.items[ident] = ItemInfo(id=ident, name=name, price=args.value, description=args.description,
                                      weight=args.weight, made=ctx.state.turn)
    where = "made (nowhere yet)"
    if args.carried_by:
        holder = ctx.character(args.carried_by)
        held = next((i for i in holder.inventory if i.name.casefold() == name.casefold()), None)
        if held is not None:
            held.quantity += args.quantity
        else:
            holder.inventory.append(Item(name=name, quantity=args.quantity))
        where = f"carried by {holder.name}"
    elif args.shop:
        shop = ctx.state.shops.get(ascii_id(args.shop)) or next(
            (s for s in ctx.state.shops.values() if s.name.casefold() == args.shop.casefold()), None)
        if shop is None:
            raise ToolError(f"there is no shop '{args.shop}' (shops: {', '.join(ctx.state.shops) or 'none'})")
        if args.value is None:
            raise ToolError("a shop sells at a price: give the item a value")
        shop.stock.append(ShopItem(item=ident, quantity=args.quantity))
        where = f"sold at {shop.name}"
    elif args.location:
        place = ctx.state.location() if args.location.strip().lower() == "here" else ctx.location(args.location)
        place.items.append(ident)
        where = f"lying at {place.name}"
    _checked(ctx, before)
    worth = f", worth {args.value.amount} {args.value.coin}" if args.value else ""
    return Told(f"{name} (id {ident}{worth}) now exists, {where}.", f"New in the world: {name}, {where}.")


def _problems(state: GameState) -> list[str]:
    from ..content import references

    return references(world_data(state))
