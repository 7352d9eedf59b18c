"""Tools on characters: dice, hit points, inventory and coin, rests, the character sheet."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from ..dice import roll as roll_dice
from ..errors import BadInput, ToolError
from ..state import COIN_VALUE, DAMAGE_DICE, NPC, Character, Item, Participant
from ..visibility import character_card, require_counterpart
from .combat import creature_attack
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
    return character_card(ch, ctx.viewer, character_sheet(ch))


def character_sheet(ch: Character) -> str:
    abilities = ", ".join(f"{a[:3].upper()} {getattr(ch.abilities, a)} ({ch.abilities.mod(a):+d})" for a in type(ch.abilities).model_fields)
    items = ", ".join(f"{i.name} ×{i.quantity}" for i in ch.inventory) or "nothing"
    return (f"{ch.name}, level {ch.level} {ch.char_class}: HP {ch.hp}/{ch.max_hp}, AC {ch.ac}, "
            f"hit dice {ch.hit_dice}d{ch.hit_die} left. {abilities}. Conditions: {', '.join(ch.conditions) or 'none'}. "
            f"Carrying: {items}. Coin: {ch.currency.describe()}.")


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
    require_counterpart(ctx, ch)
    if args.currency is not None:
        if args.quantity > 0:
            setattr(ch.currency, args.currency, getattr(ch.currency, args.currency) + args.quantity)
            return f"{ch.name} gains {args.quantity} {args.currency}; purse now {ch.currency.describe()}."
        cost = -args.quantity
        if ch.currency.total_cp() < cost * COIN_VALUE[args.currency]:
            raise ToolError(f"{ch.name} cannot pay {cost} {args.currency}: the purse holds only "
                            f"{ch.currency.describe()} (worth {ch.currency.total_cp() / COIN_VALUE[args.currency]:g} "
                            f"{args.currency} in all). Nothing was paid; the narration must say so")
        change = ch.currency.pay(args.currency, cost)
        how = f" ({'; '.join(change)})" if change else ""
        return f"{ch.name} loses {cost} {args.currency}{how}; purse now {ch.currency.describe()}."
    assert args.item is not None
    held = ch.item(args.item)
    if args.quantity < 0:
        if held is None:
            raise ToolError(f"{ch.name} has no '{args.item}' (carrying: {', '.join(i.name for i in ch.inventory) or 'nothing'})")
        if held.quantity < -args.quantity:
            raise ToolError(f"{ch.name} has only {held.quantity} × {held.name}, cannot take {-args.quantity}")
        left = held.quantity + args.quantity
        if left == 0:
            ch.inventory.remove(held)
        else:
            held.quantity = left
        return f"{ch.name} loses {-args.quantity} × {held.name} ({left} left)."
    if held is None:
        held = Item(name=args.item, quantity=args.quantity)
        ch.inventory.append(held)
    else:
        held.quantity += args.quantity
    return f"{ch.name} gains {args.quantity} × {held.name} (now {held.quantity})."


class AttackArgs(Args):
    attacker: str | None = Field(None, max_length=60)  # default: the acting player's character
    target: str = Field(min_length=1, max_length=60)
    weapon: str | None = Field(None, max_length=60)  # for the record, and what the players read
    bonus: int | None = Field(None, ge=-10, le=30)  # to hit; a character's default: proficiency + best of STR/DEX
    damage: str | None = Field(None, min_length=3, max_length=40, pattern=DAMAGE_DICE)  # a stat block's: left out
    roll: Literal["normal", "advantage", "disadvantage"] = "normal"


_DICE_TERM = re.compile(r"(\d*)d(\d+)")


@tool(example='<attack attacker="Tamsin" target="Goblin 1" weapon="shortsword" bonus="5" damage="1d6+3"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def attack(ctx: ToolContext, args: AttackArgs) -> str:
    """One attack, resolved by the engine: the to-hit roll against the target's AC, damage only on a hit (a natural 20 doubles the dice), applied to the target."""
    attacker = _attacker_name(ctx, args.attacker)
    target = resolve_hp_target(ctx, args.target)
    # A creature with a stat block attacks by it: its numbers, not the ones the agent wrote.
    action = creature_attack(ctx.state, args.attacker, args.weapon, improvised=args.damage is not None)
    if action is None and args.damage is None:
        raise ToolError("give the attack's damage (e.g. damage=\"1d8+3\")")
    bonus = action.bonus if action else args.bonus if args.bonus is not None else _default_bonus(ctx, args.attacker)
    damage = action.damage if action else args.damage
    assert damage is not None
    mode = {"advantage": " adv", "disadvantage": " dis"}.get(args.roll, "")
    to_hit = roll_dice(f"1d20{bonus:+d}{mode}", ctx.rng)
    weapon = action.name if action else args.weapon
    with_what = f" with {weapon}" if weapon else ""
    head = f"{attacker} attacks {target.name}{with_what}: {to_hit.expression} → {to_hit.total} vs AC {target.ac}"
    if to_hit.natural == 1 or (to_hit.natural != 20 and to_hit.total < target.ac):
        missed = f"{head}, miss{' (natural 1)' if to_hit.natural == 1 else ''}. No damage."
        return Told(missed, missed)
    critical = to_hit.natural == 20
    expression = _DICE_TERM.sub(lambda m: f"{2 * int(m.group(1) or 1)}d{m.group(2)}", damage) if critical else damage
    hurt = roll_dice(expression, ctx.rng)
    applied = _apply_hp(target, max(0, hurt.total), "damage")
    kind = "critical hit (damage dice doubled)" if critical else "hit"
    typed = f" {action.damage_type}" if action else ""
    told = f"{head}, {kind}; damage {hurt.expression} → {hurt.total}{typed}. {applied}"
    return Told(told, told)  # all of it is the table's: the roll, the hit, the damage, who falls


def _attacker_name(ctx: ToolContext, ref: str | None) -> str:
    if ref is None:
        return ctx.character(None).name
    key = ref.strip().lower()
    for p in ctx.state.combat.order if ctx.state.combat.active else []:
        if p.name.lower() == key or p.id == key:
            return p.name
    found = ctx.state.find_character(ref) or ctx.state.find_npc(ref)
    if found is None:
        raise ToolError(f"no one called '{ref}' can attack here")
    return found.name


def _default_bonus(ctx: ToolContext, ref: str | None) -> int:
    ch = ctx.character(ref) if ref is None or ctx.state.find_character(ref) else None
    if ch is None:
        raise ToolError("give the attack's bonus (to hit) for anyone but a player character")
    proficiency = 2 + (ch.level - 1) // 4
    return proficiency + max(ch.abilities.mod("strength"), ch.abilities.mod("dexterity"))


class HpArgs(Args):
    amount: int = Field(ge=1, le=10_000)
    kind: Literal["damage", "healing"] = "damage"
    target: str | None = Field(None, max_length=60)


@tool(example='<update_hp target="Aria" amount="7" kind="damage"/> or <update_hp target="Goblin 1" amount="4" kind="healing"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def update_hp(ctx: ToolContext, args: HpArgs) -> str:
    """Apply damage or healing to a character, NPC or combatant; hit points stay between 0 and their maximum."""
    told = _apply_hp(resolve_hp_target(ctx, args.target), args.amount, args.kind)
    return Told(told, told)  # "Giant Rat 1 takes 6 damage: HP 0/7. Giant Rat 1 is defeated." — every word of it


def _apply_hp(target: Character | NPC | Participant, amount: int, kind: str) -> str:
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
    elif new > 0 and hp == 0:
        for c in ("unconscious", "defeated"):
            if c in conditions:
                conditions.remove(c)
                note = f" {name} is no longer {c}."
    if kind == "damage" and hp == 0:
        note = f" {name} was already at 0 HP."
    change = f"takes {hp - new} damage" if kind == "damage" else f"regains {new - hp} HP"
    return f"{name} {change}: HP {new}/{max_hp}.{note}"


def resolve_hp_target(ctx: ToolContext, ref: str | None) -> Character | NPC | Participant:
    """A combatant by name first (enemies live only in combat), then a character, then an NPC."""
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
        return npc
    names = [c.name for c in ctx.state.characters.values()] + [p.name for p in ctx.state.combat.order if p.hp is not None]
    raise ToolError(f"no one called '{ref}' has hit points here (try: {', '.join(names) or 'nobody'})")


class RestArgs(Args):
    character: str | None = Field(None, max_length=60)


class ShortRestArgs(RestArgs):
    hit_dice: int | None = Field(None, ge=1, le=20)


def _no_rest_in_combat(ctx: ToolContext) -> None:
    if ctx.state.combat.active:
        raise ToolError("no one can rest while combat is going on")


@tool(example='<short_rest character="Aria" hit_dice="1"/>', agents={NARRATIVE}, changes_state=True)
def short_rest(ctx: ToolContext, args: ShortRestArgs) -> str:
    """Take a short rest: spend hit dice (each heals 1 die + CON modifier), by default as many as needed."""
    _no_rest_in_combat(ctx)
    ch = ctx.character(args.character)
    if ch.hp == 0:
        raise ToolError(f"{ch.name} is unconscious and must be healed or stabilised before resting")
    if ch.hit_dice == 0:
        return f"{ch.name} rests an hour but has no hit dice left to spend (HP {ch.hp}/{ch.max_hp}); a long rest restores them."
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
        return f"{ch.name} rests an hour; already at full health (HP {ch.hp}/{ch.max_hp})."
    return (f"{ch.name} spends {spent} hit {'die' if spent == 1 else 'dice'} (d{ch.hit_die} rolls {', '.join(map(str, rolls))}, "
            f"CON {con:+d} each) and regains {ch.hp - before} HP: HP {ch.hp}/{ch.max_hp}, {ch.hit_dice} hit dice left.")


@tool(example='<long_rest/> rests the whole party; <long_rest character="Aria"/> one character', agents={NARRATIVE}, changes_state=True)
def long_rest(ctx: ToolContext, args: RestArgs) -> str:
    """Take a long rest (8 hours): full hit points, half of all hit dice back, one level of exhaustion gone."""
    _no_rest_in_combat(ctx)
    if args.character:
        members = [ctx.character(args.character)]
    else:
        members = [ctx.state.characters[i] for i in ctx.state.party.player_ids if i in ctx.state.characters]
        if not members:
            raise ToolError("the party has no player characters to rest")
    lines = []
    for ch in members:
        regained = min(ch.level - ch.hit_dice, max(1, ch.level // 2))
        ch.hit_dice += regained
        ch.hp = ch.max_hp
        if "unconscious" in ch.conditions:
            ch.conditions.remove("unconscious")
        if "exhaustion" in ch.conditions:
            ch.conditions.remove("exhaustion")
        lines.append(f"{ch.name}: HP {ch.hp}/{ch.max_hp}, {ch.hit_dice}/{ch.level} hit dice")
    return "After a long rest — " + "; ".join(lines) + "."


__all__ = ["roll", "get_character", "modify_inventory", "update_hp", "short_rest", "long_rest", "character_sheet",
           "resolve_hp_target"]
