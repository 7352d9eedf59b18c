"""Tools on characters: dice, hit points, inventory and coin, rests, the character sheet."""

from __future__ import annotations

import difflib
import random
from typing import Literal

from pydantic import Field, model_validator

from ..dice import roll as roll_dice
from ..errors import BadInput, ToolError
from ..rules import conditions, life, origins, spells
from ..rules.attacks import UNARMED_NAMES, critical as doubled, find_weapon, profile, swing, too_heavy, unarmed
from ..rules.checks import Mode, check
from ..rules.damage import adjust as adjust_damage
from ..rules.data import rules, weapon as weapon_by_name
from ..rules.equipment import armor_class, carried_weapons, sync_armor_class
from ..basics import COIN_VALUE, DAMAGE_DICE, DamageType, Item
from ..entities import NPC
from ..hostility import require_consent
from ..rules.levels import progress
from ..state import Character, Participant
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
    features = "" if brief else f"Features and traits: {', '.join(f.name for f in sheet_features(ch)) or 'none'}. "
    dying = life.state_line(ch)
    hp = f"HP {ch.hp}/{ch.max_hp}" + (f" ({dying})" if dying else "") + (f" + {ch.temp_hp} temporary" if ch.temp_hp else "")
    return (f"{ch.name}, level {ch.level} {origins.origin(ch)}: {hp}, AC {ac_line(ch)}, "
            f"speed {origins.speed(ch)} ft, hit dice {ch.hit_dice}d{ch.hit_die} left. {abilities}. "
            f"Conditions: {', '.join(ch.conditions) or 'none'}. Weapons (attack with weapon=): {weapons}. "
            f"{features}Carrying: {items}. Coin: {ch.currency.describe()}. Advancement: {progress(ch, leveling)}."
            + "".join(f" {line}." for line in spells.sheet_lines(ch)))


def ac_line(ch: Character) -> str:
    """"16 (chain mail, shield)"; an AC set by hand (an imported sheet's) says so."""
    worn = armor_class(ch)
    return worn.describe() if worn.value == ch.ac else f"{ch.ac} (as given)"


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


class AttackArgs(Args):
    attacker: str | None = Field(None, max_length=60)  # default: the acting player's character
    target: str = Field(min_length=1, max_length=60)
    weapon: str | None = Field(None, max_length=60)  # for the record, and what the players read
    bonus: int | None = Field(None, ge=-10, le=30)  # to hit; a character's default: proficiency + best of STR/DEX
    # Needed unless a player character attacks with a weapon they carry (the sheet gives bonus and damage), or a
    # creature with a stat block attacks with one of its actions.
    damage: str | None = Field(None, min_length=3, max_length=40, pattern=DAMAGE_DICE)
    roll: Literal["normal", "advantage", "disadvantage"] = "normal"
    damage_type: DamageType | None = None  # for improvised damage: fire, poison, …  # type: ignore[valid-type]




@tool(example='<attack attacker="Tamsin" target="Goblin 1" weapon="shortsword"/> (a player character\'s weapon: '
              'the sheet gives the numbers); <attack attacker="Goblin 1" target="Tamsin" weapon="scimitar" bonus="4" '
              'damage="1d6+2"/>', agents={NARRATIVE, COMBAT}, changes_state=True)
def attack(ctx: ToolContext, args: AttackArgs) -> str:
    """One attack, resolved by the engine: the to-hit roll against the target's AC, damage only on a hit (a natural 20 doubles the dice), applied to the target. A player character's weapon takes its numbers from their sheet; anyone else's needs bonus and damage."""
    sheet = _sheet_weapon(ctx, args)
    if sheet is not None:
        mode = None if args.roll == "normal" else args.roll
        # The GM judges what the player said they do: an attack on someone who is no enemy needs no button here.
        told = weapon_attack(ctx, sheet, args.weapon or "", args.target, mode, confirmed=True)
        return Told(f"{told} (to-hit and damage from {sheet.name}'s sheet)", told.public)
    pc = ctx.state.characters.get(ctx.actor_id or "") if args.attacker is None else ctx.state.find_character(args.attacker)
    if pc is not None:  # a player character attacks by the sheet, never by numbers the model wrote
        carried = ", ".join(w.name for w in carried_weapons(pc)) or "none"
        what = f"carries no {args.weapon}" if args.weapon else "must attack with a weapon they carry"
        raise ToolError(f"{pc.name} {what} (weapons: {carried}); a player character's attack takes its numbers "
                        "from the sheet")
    attacker = _attacker_name(ctx, args.attacker)
    target = resolve_hp_target(ctx, args.target, reach=True)
    # A creature with a stat block attacks by it: its numbers, not the ones the agent wrote.
    action = creature_attack(ctx.state, args.attacker, args.weapon, improvised=args.damage is not None)
    if action is None and args.damage is None:
        raise ToolError("give the damage (e.g. 1d6+2), or name a weapon the attacking player character carries")
    bonus = action.bonus if action else args.bonus if args.bonus is not None else _default_bonus(ctx, args.attacker)
    damage = action.damage if action else args.damage
    assert damage is not None
    own = _conditions_of(ctx, attacker)
    stopped = conditions.cannot_act(own)
    if stopped:
        raise ToolError(f"{attacker} is {stopped} and cannot attack", public=True)
    melee = not (action.reach.lower().startswith("range") if action else False)
    asked = None if args.roll == "normal" else args.roll
    chosen, why = conditions.attack_mode(asked, own, target.conditions, melee)
    mode = {"advantage": " adv", "disadvantage": " dis"}.get(chosen or "", "")
    to_hit = roll_dice(f"1d20{bonus:+d}{mode}", ctx.rng)
    weapon = action.name if action else args.weapon
    with_what = f" with {weapon}" if weapon else ""
    head = (f"{attacker} attacks {target.name}{with_what}: {to_hit.expression} → {to_hit.total}"
            + (f" ({why})" if why else "") + f" vs AC {target.ac}")
    if to_hit.natural == 1 or (to_hit.natural != 20 and to_hit.total < target.ac):
        missed = f"{head}, miss{' (natural 1)' if to_hit.natural == 1 else ''}. No damage."
        return Told(missed, missed)
    critical = to_hit.natural == 20 or (melee and conditions.melee_crit(target.conditions))
    expression = doubled(damage) if critical else damage
    hurt = roll_dice(expression, ctx.rng)
    applied = _apply_hp(target, max(0, hurt.total), "damage", critical, ctx.rng,
                        action.damage_type if action else args.damage_type)
    kind = "critical hit (damage dice doubled)" if critical else "hit"
    typed = f" {action.damage_type}" if action else ""
    told = f"{head}, {kind}; damage {hurt.expression} → {hurt.total}{typed}. {applied}"
    return Told(told, told)  # all of it is the table's: the roll, the hit, the damage, who falls


def _sheet_weapon(ctx: ToolContext, args: AttackArgs) -> Character | None:
    """The attacking player character, when the weapon named is one they carry (None: the given numbers count)."""
    if args.weapon is None:
        return None
    ch = ctx.state.characters.get(ctx.actor_id or "") if args.attacker is None else ctx.state.find_character(args.attacker)
    if ch is not None and " ".join(args.weapon.lower().split()) in UNARMED_NAMES:
        return ch  # fists are always to hand
    found = weapon_by_name(args.weapon)
    if ch is None or found is None or all(w.name != found.name for w in carried_weapons(ch)):
        return None
    return ch


def weapon_attack(ctx: ToolContext, ch: Character, weapon: str, target: str | None, mode: Mode = None, *,
                  confirmed: bool = False) -> Told:
    """An attack with a weapon from `ch`'s sheet at a target (found as update_hp finds one), its damage applied on
    a hit; with no target, the rolls alone. Ammunition is used up, one piece per shot. A target who is no enemy in a
    fight needs `confirmed` (its player said yes), else ConfirmAttack asks."""
    if ch.hp == 0:
        raise ToolError(f"{ch.name} is down and cannot attack", public=True)
    stopped = conditions.cannot_act(ch.conditions)
    if stopped:
        raise ToolError(f"{ch.name} is {stopped} and cannot attack", public=True)
    try:
        attack_ = profile(ch, find_weapon(ch, weapon))
    except BadInput as exc:
        raise ToolError(exc.message.rstrip("."), public=exc.message) from None
    foe = resolve_hp_target(ctx, target, reach=True) if target else None
    if foe is ch:
        raise ToolError(f"{ch.name} cannot attack themselves", public=True)
    if foe is not None and not confirmed:
        require_consent(ctx.state, ch, [foe], "Attack")
    w = attack_.weapon
    spent = ""
    if w.ammunition:
        ammo = ch.item(w.ammunition) or ch.item(w.ammunition.removesuffix("s"))  # "arrows", or a lone "arrow"
        if ammo is None:
            raise ToolError(f"{ch.name} has no {w.ammunition} left for the {w.name}", public=True)
        _change_items(ch, ammo.name, -1)
        spent = f" {ammo.quantity if ammo in ch.inventory else 0} {w.ammunition} left."
    melee = w.kind == "melee"
    mode, why = conditions.attack_mode(mode, ch.conditions, foe.conditions if foe is not None else [], melee,
                                       ["heavy weapon in Small hands"] if too_heavy(ch, w) else [])
    rolled = swing(attack_, ctx.rng, foe.ac if foe is not None else None, mode,
                   crit_on_hit=melee and foe is not None and conditions.melee_crit(foe.conditions))
    to_hit = f"{rolled.to_hit.expression} → {rolled.to_hit.total}" + (f" ({why})" if why else "")
    crit = (" (natural 20)" if rolled.to_hit.natural == 20 else " (a helpless target: critical)" if rolled.critical
            else " (natural 1)" if rolled.to_hit.natural == 1 else "")
    damage = rolled.damage
    if foe is None:
        assert damage is not None
        told = (f"{ch.name} attacks with {w.name}: {to_hit} to hit{crit}; damage {damage.expression} → "
                f"{damage.total} {w.type} if it hits.{spent}")
        return Told(told, told)
    head = f"{ch.name} attacks {foe.name} with {w.name}: {to_hit} vs AC {foe.ac}"
    if damage is None:
        told = f"{head}, miss{crit}. No damage.{spent}"
        return Told(told, told)
    kind = "critical hit (damage dice doubled)" if rolled.critical else "hit"
    applied = _apply_hp(foe, max(0, damage.total), "damage", rolled.critical, ctx.rng, w.type)
    told = f"{head}, {kind}; damage {damage.expression} → {damage.total} {w.type}. {applied}{spent}"
    return Told(told, told)


def _conditions_of(ctx: ToolContext, name: str) -> list[str]:
    """The conditions of whoever attacks by this name: a combatant, an NPC or a character."""
    key = name.strip().lower()
    for p in ctx.state.combat.order if ctx.state.combat.active else []:
        if p.name.lower() == key or p.id == key:
            holder = ctx.state.characters.get(p.id) or ctx.state.npcs.get(p.id)
            return list(holder.conditions if holder is not None else p.conditions)
    found = ctx.state.find_character(name) or ctx.state.find_npc(name)
    return list(found.conditions) if found is not None else []


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
    damage_type: DamageType | None = None  # fire, poison, …: resistances halve it  # type: ignore[valid-type]


@tool(example='<update_hp target="Aria" amount="7" kind="damage"/> or <update_hp target="Goblin 1" amount="4" kind="healing"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def update_hp(ctx: ToolContext, args: HpArgs) -> str:
    """Apply damage or healing to a character, NPC or combatant; hit points stay between 0 and their maximum."""
    told = _apply_hp(resolve_hp_target(ctx, args.target), args.amount, args.kind, rng=ctx.rng,
                     damage_type=args.damage_type)
    return Told(told, told)  # "Giant Rat 1 takes 6 damage: HP 0/7. Giant Rat 1 is defeated." — every word of it


def _apply_hp(target: Character | NPC | Participant, amount: int, kind: str, critical: bool = False,
              rng: random.Random | None = None, damage_type: str | None = None) -> str:
    """Damage or healing to anyone; damage by its type against the target's resistances (engine/rules/damage.py),
    a player character's by the SRD (engine/rules/life.py), and with `rng` the concentration save that damage calls
    for (a healing never needs one)."""
    said = ""
    if kind == "damage":
        amount, why = adjust_damage(target, amount, damage_type)
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
    ch.hp = min(ch.max_hp, ch.hp + amount)
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
        regained = min(ch.level - ch.hit_dice, max(1, ch.level // 2))
        ch.hit_dice += regained
        ch.hp = ch.max_hp
        if "unconscious" in ch.conditions:
            ch.conditions.remove("unconscious")
        if "exhaustion" in ch.conditions:
            ch.conditions.remove("exhaustion")
        magic = spells.recover(ch, "long")
        lines.append(f"{ch.name}: HP {ch.hp}/{ch.max_hp}, {ch.hit_dice}/{ch.level} hit dice" + (f", {magic}" if magic else ""))
    return "After a long rest — " + "; ".join(lines) + "."


__all__ = ["roll", "get_character", "modify_inventory", "update_hp", "short_rest", "long_rest", "character_sheet",
           "resolve_hp_target", "weapon_attack", "ac_line", "sheet_features"]
