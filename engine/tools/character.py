"""Tools on characters: dice, inventory and coin, rests, the character sheet (attacks are in attacks.py, hit
points in hitpoints.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..dice import roll as roll_dice
from ..errors import BadInput, ToolError
from ..rules import effects, features, life, origins, spells
from ..rules.attacks import profile, unarmed
from ..rules.conditions import exhaustion, exhaustion_word, hp_maximum
from ..rules.data import rules
from ..rules.equipment import armor_class, carried_weapons, sync_armor_class
from ..basics import COIN_VALUE, Item
from ..rules.levels import progress
from ..state import Character
from ..visibility import character_card, require_counterpart
from .registry import COMBAT, EVERY_AGENT, NARRATIVE, NPC_AGENT, Args, Told, ToolContext, tool


class RollArgs(Args):
    expression: str = Field(min_length=1, max_length=120)
    reason: str | None = Field(None, max_length=120)


@tool(example='<roll reason="Tamsin\'s perception">1d20+3</roll>', agents=EVERY_AGENT, changes_state=False,
      body="expression")
def roll(ctx: ToolContext, args: RollArgs) -> str:
    """Roll dice (d20 notation: 1d20+3, 2d6, 4d6kh3, '1d20+2 adv') for damage, NPCs' and monsters' checks, and
    anything else left to chance, with whose roll it is and what for as the reason; a player character's check or
    saving throw is ability_check or saving_throw, which read their sheet."""
    try:
        result = roll_dice(args.expression, ctx.rng)
    except BadInput as exc:
        raise ToolError(exc.message) from None
    described = result.describe()
    ctx.meta["total"] = result.total  # for a plan that rolls first and uses the total (engine/decide.py)
    # Players see whose roll it is: the reason the model gave, else whoever acts now (the combatant whose turn it
    # is in a fight, otherwise the player who spoke).
    label = args.reason or roller(ctx)
    return Told((f"{args.reason}: " if args.reason else "") + described, f"{label}: {described}" if label else described)


def roller(ctx: ToolContext) -> str | None:
    combat = ctx.state.combat
    if combat.active and combat.order:
        return combat.order[combat.turn_index % len(combat.order)].name
    ch = ctx.state.characters.get(ctx.actor_id or "")
    return ch.name if ch is not None else None


class CharacterRef(Args):
    name: str | None = Field(None, max_length=60)


@tool(example='<get_character name="Aria"/>', agents=EVERY_AGENT, changes_state=False, body="name")
def get_character(ctx: ToolContext, args: CharacterRef) -> str:
    """Read a player character's full sheet (the acting player's when no name is given)."""
    ch = ctx.character(args.name)
    return character_card(ch, ctx.viewer, character_sheet(ch, leveling=ctx.state.leveling))


def character_sheet(ch: Character, brief: bool = False, leveling: str = "xp") -> str:
    """The sheet as agents read it; `brief` (the party in every turn's context) leaves out features and traits,
    which get_character gives. `leveling`: the game's way of levelling, for the character's progress."""
    abilities = ", ".join(f"{a[:3].upper()} {getattr(ch.abilities, a)} ({ch.abilities.mod(a):+d})" for a in type(ch.abilities).model_fields)
    items = ", ".join(f"{i.name} ×{i.quantity}" for i in ch.inventory) or "nothing"
    weapons = "; ".join([*(profile(ch, w).describe() for w in carried_weapons(ch)), unarmed(ch).describe()])
    traits = "" if brief else f"Features and traits: {', '.join(f.name for f in sheet_features(ch)) or 'none'}. "
    dying = life.state_line(ch)
    hp = f"HP {ch.hp}/{ch.max_hp}" + (f" ({dying})" if dying else "") + (f" + {ch.temp_hp} temporary" if ch.temp_hp else "")
    return (f"{ch.name}, level {ch.level} {origins.origin(ch)}: {hp}, AC {ac_line(ch)}, "
            f"speed {effects.speed(ch, origins.speed(ch))} ft, hit dice {ch.hit_dice}d{ch.hit_die} left. {abilities}. "
            f"Conditions: {', '.join(ch.conditions) or 'none'}. "
            + (f"Spells on them: {'; '.join(effects.describe(e) for e in ch.effects)}. " if ch.effects else "")
            + f"Weapons (attack with weapon=): {weapons}. "
            f"{traits}Carrying: {items}. Coin: {ch.currency.describe()}. Advancement: {progress(ch, leveling)}."
            + "".join(f" {line}." for line in spells.sheet_lines(ch))
            + "".join(f" Features left: {line}." for line in features.lines(ch)))


def ac_line(ch: Character) -> str:
    """"16 (chain mail, shield)"; an AC set by hand (an imported sheet's) says so."""
    worn = armor_class(ch)
    base = worn.describe() if worn.value == ch.ac else f"{ch.ac} (as given)"
    now, why = effects.target_ac(ch)  # spells on them: Mage Armor, Shield of Faith, …
    return base + (f"; {now} with {why}" if why else "")


def sheet_features(ch: Character) -> list:
    """The class features up to the character's level, then its species traits and background feature."""
    cls = rules().classes.get(ch.char_class)
    return [*(cls.features_upto(ch.level) if cls else []), *origins.traits(ch)]


class InventoryArgs(Args):
    item: str | None = Field(None, min_length=1, max_length=80)
    currency: Literal["cp", "sp", "gp", "pp"] | None = None
    quantity: int = Field(1, ge=-100_000, le=100_000)
    character: str | None = Field(None, max_length=60)

    @model_validator(mode="after")
    def _one_thing(self) -> "InventoryArgs":
        if (self.item is None) == (self.currency is None):
            raise ValueError("give exactly one of 'item' or 'currency'")
        if self.quantity == 0:
            raise ValueError("quantity must not be 0: positive gives, negative takes")
        return self


@tool(example='<modify_inventory item="healing potion" quantity="1"/> gives one; quantity="-1" takes one; '
              '<modify_inventory currency="gp" quantity="-5"/> takes 5 gold',
      agents={NARRATIVE, COMBAT, NPC_AGENT}, changes_state=True)
def modify_inventory(ctx: ToolContext, args: InventoryArgs) -> str:
    """Give (positive quantity) or take (negative) an item or coins; use it whenever anything changes hands."""
    ch = ctx.character(args.character)
    require_counterpart(ctx.state, ctx.viewer, ch)
    if args.currency is not None:
        if args.quantity > 0:
            setattr(ch.currency, args.currency, getattr(ch.currency, args.currency) + args.quantity)
            return f"{ch.name} gains {args.quantity} {args.currency}; purse now {ch.currency.describe()}."
        cost = -args.quantity
        if ch.currency.total_cp() < cost * COIN_VALUE[args.currency]:
            raise ToolError(f"{ch.name} cannot pay {cost} {args.currency}: the purse holds only "
                            f"{ch.currency.describe()} (worth {ch.currency.total_cp() / COIN_VALUE[args.currency]:g} "
                            f"{args.currency} in all). Nothing was paid; the narration must say so",
                            public=f"{ch.name} could not pay {cost} {args.currency}: the purse holds only "
                                   f"{ch.currency.describe()}.")
        change = ch.currency.pay(args.currency, cost)
        how = f" ({'; '.join(change)})" if change else ""
        return f"{ch.name} loses {cost} {args.currency}{how}; purse now {ch.currency.describe()}."
    assert args.item is not None
    worn = armor_class(ch)
    try:
        told = _change_items(ch, args.item, args.quantity)
    finally:
        sync_armor_class(ch, worn)  # armour that changes hands changes the AC
    here = ctx.state.locations.get(ctx.state.current_location)
    lying = next((i for i in (here.items if here else []) if i in ctx.state.items
                  and ctx.state.items[i].name.casefold() == args.item.strip().casefold()), None)
    if args.quantity > 0 and here is not None and lying is not None:  # picked up where it lay: it lies there no more
        here.items.remove(lying)
    return told


def _change_items(ch: Character, item: str, quantity: int) -> str:
    held = ch.item(item)
    if quantity < 0:
        if held is None:
            raise ToolError(f"{ch.name} has no '{item}' (carrying: {', '.join(i.name for i in ch.inventory) or 'nothing'})",
                            public=f"{ch.name} could not give up {item}: {ch.name} carries none.")
        if held.quantity < -quantity:
            raise ToolError(f"{ch.name} has only {held.quantity} × {held.name}, cannot take {-quantity}",
                            public=f"{ch.name} could not give up {-quantity} × {held.name}: {ch.name} carries only "
                                   f"{held.quantity}.")
        left = held.quantity + quantity
        if left == 0:
            ch.inventory.remove(held)
        else:
            held.quantity = left
        return f"{ch.name} loses {-quantity} × {held.name} ({left} left)."
    if held is None:
        held = Item(name=item, quantity=quantity)
        ch.inventory.append(held)
    else:
        held.quantity += quantity
    return f"{ch.name} gains {quantity} × {held.name} (now {held.quantity})."


class RestArgs(Args):
    character: str | None = Field(None, max_length=60)


class ShortRestArgs(RestArgs):
    hit_dice: int | None = Field(None, ge=1, le=20)


def _no_rest_in_combat(ctx: ToolContext) -> None:
    if ctx.state.combat.active:
        raise ToolError("no one can rest while combat is going on", public="No one can rest in the middle of a fight.")


@tool(example='<short_rest character="Aria" hit_dice="1"/>', agents={NARRATIVE}, changes_state=True)
def short_rest(ctx: ToolContext, args: ShortRestArgs) -> str:
    """Take a short rest: spend hit dice (each heals 1 die + CON modifier), by default as many as needed."""
    _no_rest_in_combat(ctx)
    ch = ctx.character(args.character)
    if ch.hp == 0:
        raise ToolError(f"{ch.name} is unconscious and must be healed or stabilised before resting", public=True)
    magic = spells.recover(ch, "short")  # a warlock's pact slots
    magic = f" {magic.capitalize()}." if magic else ""
    magic += "".join(f" {line}" for line in effects.after_rest(ctx.state, ch, long=False))  # an hour has passed
    back = features.recover(ch, "short")  # Second Wind, Action Surge, Ki, Channel Divinity, …
    magic += f" {back[:1].upper()}{back[1:]}." if back else ""
    if ch.hit_dice == 0:
        return f"{ch.name} rests an hour but has no hit dice left to spend (HP {ch.hp}/{ch.max_hp}); a long rest restores them.{magic}"
    con = ch.abilities.mod("constitution")
    spent, healed, rolls = 0, 0, []
    limit = args.hit_dice if args.hit_dice is not None else ch.hit_dice
    while spent < min(limit, ch.hit_dice) and (args.hit_dice is not None or ch.hp + healed < ch.max_hp):
        die = ctx.rng.randint(1, ch.hit_die)
        rolls.append(die)
        healed += max(0, die + con)
        spent += 1
    before = ch.hp
    ch.hp = min(ch.max_hp, ch.hp + healed)
    ch.hit_dice -= spent
    if spent == 0:
        return f"{ch.name} rests an hour; already at full health (HP {ch.hp}/{ch.max_hp}).{magic}"
    return (f"{ch.name} spends {spent} hit {'die' if spent == 1 else 'dice'} (d{ch.hit_die} rolls {', '.join(map(str, rolls))}, "
            f"CON {con:+d} each) and regains {ch.hp - before} HP: HP {ch.hp}/{ch.max_hp}, {ch.hit_dice} hit dice left.{magic}")


@tool(example='<long_rest/> rests the whole party; <long_rest character="Aria"/> one character', agents={NARRATIVE}, changes_state=True)
def long_rest(ctx: ToolContext, args: RestArgs) -> str:
    """Take a long rest (8 hours): full hit points, half of all hit dice back, one level of exhaustion gone, spell
    slots back."""
    _no_rest_in_combat(ctx)
    if args.character:
        members = [ctx.character(args.character)]
    else:
        members = [ctx.state.characters[i] for i in ctx.state.party.player_ids if i in ctx.state.characters]
        if not members:
            raise ToolError("the party has no player characters to rest")
    lines = []
    down = [ch.name for ch in members if ch.hp < 1]
    if down and len(down) == len(members):  # the SRD: a long rest needs at least 1 hit point to do any good
        raise ToolError(f"{' and '.join(down)} {'is' if len(down) == 1 else 'are'} at 0 hit points: a long rest "
                        f"does nothing for a character with no hit points (heal or stabilise first)",
                        public=f"{' and '.join(down)} cannot benefit from a long rest at 0 hit points.")
    for ch in members:
        if ch.hp < 1:
            lines.append(f"{ch.name}: no benefit at 0 HP")
            continue
        ch.endured = False  # Relentless Endurance is ready again
        regained = min(ch.level - ch.hit_dice, max(1, ch.level // 2))
        ch.hit_dice += regained
        if "unconscious" in ch.conditions:
            ch.conditions.remove("unconscious")
        level = exhaustion(ch.conditions)  # a long rest takes one level of exhaustion away
        if level:
            ch.conditions[:] = [c for c in ch.conditions if not exhaustion([c])] + \
                ([exhaustion_word(level - 1)] if level > 1 else [])
        ch.hp = hp_maximum(ch.conditions, ch.max_hp)
        magic = spells.recover(ch, "long")
        back = features.recover(ch, "long")
        magic += (", " if magic and back else "") + back
        magic += "".join(f" {line}" for line in effects.after_rest(ctx.state, ch, long=True))
        lines.append(f"{ch.name}: HP {ch.hp}/{ch.max_hp}, {ch.hit_dice}/{ch.level} hit dice" + (f", {magic}" if magic else ""))
    return "After a long rest — " + "; ".join(lines) + "."


__all__ = ["roll", "get_character", "modify_inventory", "short_rest", "long_rest", "character_sheet", "ac_line",
           "sheet_features"]
