"""Attacks: a player character's with a weapon from the sheet (their command or the GM's tool), and anyone else's by
a stat block or the numbers the GM gives; conditions set advantage and disadvantage, damage goes through hit points."""

from __future__ import annotations

from dataclasses import replace as dc_replace
from typing import Literal

from pydantic import Field

from .. import bestiary
from ..basics import DAMAGE_DICE, DamageType, Effect
from ..dice import Roll, roll as roll_dice
from ..errors import BadInput, ToolError
from ..hostility import require_consent
from ..rules import choices, conditions, economy, effects, features, spells as slots
from ..rules.attacks import (UNARMED_NAMES, Attack, critical as doubled, damage_expression, find_weapon, profile, swing,
                             too_heavy)
from ..rules.checks import Mode
from ..rules.damage import adjust as adjust_damage
from ..rules.data import weapon as weapon_by_name
from ..rules.equipment import carried_weapons
from ..state import Character, Participant
from .afflictions import combatant_of
from .character import _change_items
from .combat import creature_attack
from .hitpoints import Target, _apply_hp, resolve_hp_target
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool

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
    sneak: bool = False  # a rogue's Sneak Attack (with advantage, or an ally beside the target)
    smite: int | None = Field(None, ge=1, le=5)  # a paladin's Divine Smite, with a slot of this level
    offhand: bool = False  # two-weapon fighting: the off hand's light weapon, as the bonus action
    reaction: bool = False  # an opportunity attack, on someone else's turn


@tool(example='<attack attacker="Tamsin" target="Goblin 1" weapon="shortsword"/> (a player character\'s weapon: '
              'the sheet gives the numbers); <attack attacker="Goblin 1" target="Tamsin" weapon="scimitar" bonus="4" '
              'damage="1d6+2"/>', agents={NARRATIVE, COMBAT}, changes_state=True)
def attack(ctx: ToolContext, args: AttackArgs) -> str:
    """One attack, resolved by the engine: the to-hit roll against the target's AC, damage only on a hit (a natural 20 doubles the dice), applied to the target. A player character's weapon takes its numbers from their sheet; anyone else's needs bonus and damage."""
    sheet = _sheet_weapon(ctx, args)
    if sheet is not None:
        mode = None if args.roll == "normal" else args.roll
        # The GM judges what the player said they do: an attack on someone who is no enemy needs no button here.
        told = weapon_attack(ctx, sheet, args.weapon or "", args.target, mode, confirmed=True, sneak=args.sneak,
                             smite=args.smite, offhand=args.offhand, reaction=args.reaction)
        return Told(f"{told} (to-hit and damage from {sheet.name}'s sheet)", told.public)
    pc = ctx.state.characters.get(ctx.actor_id or "") if args.attacker is None else ctx.state.find_character(args.attacker)
    if pc is not None:  # a player character attacks by the sheet, never by numbers the model wrote
        carried = ", ".join(w.name for w in carried_weapons(pc)) or "none"
        what = f"carries no {args.weapon}" if args.weapon else "must attack with a weapon they carry"
        raise ToolError(f"{pc.name} {what} (weapons: {carried}); a player character's attack takes its numbers "
                        "from the sheet")
    if args.sneak or args.smite:
        raise ToolError("sneak and smite are a player character's, with a weapon from their sheet")
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
    adv, dis = effects.against(target)
    chosen, why = conditions.attack_mode(asked, own, target.conditions, melee, dis, adv)
    mode = {"advantage": " adv", "disadvantage": " dis"}.get(chosen or "", "")
    terms, spells = effects.roll_terms(_holder_of(ctx, attacker), "attack")
    ac, ac_why = effects.target_ac(target)
    to_hit = roll_dice(f"1d20{bonus:+d}{terms}{mode}", ctx.rng)
    weapon = action.name if action else args.weapon
    with_what = f" with {weapon}" if weapon else ""
    reasons = "; ".join(r for r in (why, ", ".join(spells)) if r)
    head = (f"{attacker} attacks {target.name}{with_what}: {to_hit.expression} → {to_hit.total}"
            + (f" ({reasons})" if reasons else "") + f" vs AC {ac}" + (f" ({ac_why})" if ac_why else ""))
    if to_hit.natural == 1 or (to_hit.natural != 20 and to_hit.total < ac):
        missed = f"{head}, miss{' (natural 1)' if to_hit.natural == 1 else ''}. No damage."
        return Told(missed, missed)
    critical = to_hit.natural == 20 or (melee and conditions.melee_crit(target.conditions))
    expression = doubled(damage) if critical else damage
    hurt = roll_dice(expression, ctx.rng)
    kind = "critical hit (damage dice doubled)" if critical else "hit"
    typed = f" {action.damage_type}" if action else ""
    weapon_made = action is not None or args.weapon is not None  # not magic, as far as the engine knows
    if action is not None and action.plus:  # a bite's piercing plus its fire: one hit, one amount of damage
        dice, plus_type = action.plus.split()
        more = roll_dice(doubled(dice) if critical else dice, ctx.rng)
        first, why = adjust_damage(target, max(0, hurt.total), action.damage_type, weapon_made)
        second, why2 = adjust_damage(target, max(0, more.total), plus_type)
        notes = "; ".join(w for w in (why, why2) if w)
        applied = _apply_hp(target, first + second, "damage", critical, ctx.rng)
        told = (f"{head}, {kind}; damage {hurt.expression} → {hurt.total}{typed} plus {more.expression} → "
                f"{more.total} {plus_type}{f' ({notes})' if notes else ''}. {applied}")
        return Told(told, told)
    applied = _apply_hp(target, max(0, hurt.total), "damage", critical, ctx.rng,
                        action.damage_type if action else args.damage_type, weapon=weapon_made)
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
                  confirmed: bool = False, sneak: bool = False, smite: int | None = None, offhand: bool = False,
                  reaction: bool = False) -> Told:
    """An attack with a weapon from `ch`'s sheet at a target (found as update_hp finds one), its damage applied on
    a hit; with no target, the rolls alone. Ammunition is used up, one piece per shot. A target who is no enemy in a
    fight needs `confirmed` (its player said yes), else ConfirmAttack asks. `sneak`: a rogue's Sneak Attack (once a
    turn, a finesse or ranged weapon, with advantage or an ally beside the target, never with disadvantage); `smite`:
    a paladin's Divine Smite with a slot of that level, spent on a melee hit. In a fight it takes its place in the
    turn's actions (engine/rules/economy.py): `offhand` attacks with a light weapon as the bonus action (no ability
    modifier to its damage), `reaction` is an opportunity attack on someone else's turn."""
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
    turn = _turn_of(ctx, ch)
    _can_sneak(ch, attack_, turn) if sneak else None
    if smite is not None:
        _can_smite(ch, attack_, smite)
    used = _spend_turn(ctx, ch, turn, light=melee and w.has("light"), offhand=offhand, reaction=reaction)
    if offhand and choices.style_of(ch) != "two-weapon fighting":  # the off hand adds no ability modifier to its
        mod = ch.abilities.mod(attack_.ability)                       # damage, unless negative (or the style says)
        attack_ = dc_replace(attack_, damage=damage_expression(w.damage, min(0, mod)))
    if melee and attack_.ability == "strength":  # Rage: more damage on Strength melee hits
        raging, _ = effects.melee_damage(ch)
        if raging:
            attack_ = dc_replace(attack_, damage=f"{attack_.damage}+{raging}")
    terms, spells = effects.roll_terms(ch, "attack")
    adv, dis = effects.against(foe) if foe is not None else ([], [])
    adv = adv + effects.own_advantage(ch, melee and attack_.ability == "strength")  # Reckless Attack
    mode, why = conditions.attack_mode(mode, ch.conditions, foe.conditions if foe is not None else [], melee,
                                       (["heavy weapon in Small hands"] if too_heavy(ch, w) else []) + dis, adv)
    ac, ac_why = effects.target_ac(foe) if foe is not None else (None, "")
    if sneak and mode == "disadvantage":
        raise ToolError(f"no Sneak Attack with disadvantage ({why})", public=True)
    rolled = swing(attack_, ctx.rng, ac, mode,
                   crit_on_hit=melee and foe is not None and conditions.melee_crit(foe.conditions),
                   lucky=ch.species == "halfling", savage=melee and ch.species == "half-orc", extra=terms,
                   crit_at=features.crit_range(ch), brutal=features.brutal_dice(ch) if melee else 0)
    reasons = "; ".join(r for r in (why, ", ".join(spells)) if r)
    to_hit = f"{rolled.to_hit.expression} → {rolled.to_hit.total}" + (f" ({reasons})" if reasons else "")
    w_name = f"{w.name}{' (off hand, bonus action)' if offhand else ' (reaction)' if used == 'reaction' else ''}"
    crit = (" (natural 20)" if rolled.to_hit.natural == 20 else
            f" (natural {rolled.to_hit.natural}: Improved Critical)" if rolled.critical and not rolled.forced else
            " (a helpless target: critical)" if rolled.critical else " (natural 1)" if rolled.to_hit.natural == 1 else "")
    damage = rolled.damage
    if foe is None:
        assert damage is not None
        told = (f"{ch.name} attacks with {w_name}: {to_hit} to hit{crit}; damage {damage.expression} → "
                f"{damage.total} {w.type} if it hits.{spent}")
        return Told(told, told)
    head = f"{ch.name} attacks {foe.name} with {w_name}: {to_hit} vs AC {ac}" + (f" ({ac_why})" if ac_why else "")
    if damage is None:
        told = f"{head}, miss{crit}. No damage.{spent}"
        return Told(told, told)
    kind = "critical hit (damage dice doubled)" if rolled.critical else "hit"
    riding = effects.riders(ch, foe.name, weapon=True)
    extra = [(e.damage.partition(" ")[0], e.damage.partition(" ")[2] or w.type, e.spell) for e in riding if e.damage]
    if sneak:
        if turn is not None:
            turn.acted.append("Sneak Attack")
        extra.append((features.sneak_dice(ch) or "1d6", w.type, "Sneak Attack"))
    if smite is not None:
        slots.spend(ch, smite)
        kind_of = bestiary.type_of(getattr(foe, "monster", None)) or ""
        dice = min(5, 1 + smite) + (1 if kind_of in ("undead", "fiend") else 0)
        extra.append((f"{dice}d8", "radiant", f"Divine Smite, level-{smite} slot" + (f", {kind_of}" if dice > min(5, 1 + smite) else "")))
    if extra:
        told = (f"{head}, {kind}; " + _with_riders(ctx, foe, damage, w.type, True, rolled.critical, extra, riding)
                + spent + (f" {slots.slots_line(ch)}" if smite is not None else ""))
        return Told(told, told)
    applied = _apply_hp(foe, max(0, damage.total), "damage", rolled.critical, ctx.rng, w.type, weapon=True)
    told = f"{head}, {kind}; damage {damage.expression} → {damage.total} {w.type}. {applied}{spent}"
    return Told(told, told)


def _with_riders(ctx: ToolContext, foe: Target, damage: Roll, damage_type: str, weapon_made: bool, critical: bool,
                 extra: list[tuple[str, str, str]], riding: list[Effect]) -> str:
    """A hit's damage with what is added to it, each (dice, type, why): the attacker's spells (Hunter's Mark, Divine
    Favor, Branding Smite), Sneak Attack, Divine Smite; their dice doubled on a critical hit, each part against the
    target's defences, taken as one blow. One-hit spells among `riding` end."""
    first, why = adjust_damage(foe, max(0, damage.total), damage_type, weapon_made)
    parts, notes, total = [f"{damage.expression} → {damage.total} {damage_type}"], [why], first
    for dice, typed, label in extra:
        more = roll_dice(doubled(dice) if critical else dice, ctx.rng)
        amount, why = adjust_damage(foe, max(0, more.total), typed, weapon_made and typed == damage_type)
        parts.append(f"{more.expression} → {more.total} {typed} ({label})")
        notes.append(why)
        total += amount
    said = "; ".join(n for n in notes if n)
    applied = _apply_hp(foe, total, "damage", critical, ctx.rng)
    ended = [line for e in riding for line in effects.used_once(e, ctx.state)]
    return (f"damage {' plus '.join(parts)}{f' ({said})' if said else ''}. {applied}"
            + "".join(f" {line}" for line in ended))


def _spend_turn(ctx: ToolContext, ch: Character, turn: Participant | None, *, light: bool, offhand: bool,
                reaction: bool) -> str:
    """The attack's place in a fight's turn: on the character's own turn an attack of the Attack action (or the off
    hand's bonus action), on another's only as a reaction; outside a fight, or outside this one, nothing is counted."""
    if turn is None:
        return ""
    try:
        if reaction:
            if offhand:
                raise BadInput("An opportunity attack is one attack with the reaction, not the off hand's.")
            return economy.reaction(turn, ch)
        now = ctx.state.combat.current()
        if now is not turn:
            raise BadInput(f"It is {now.name if now else 'no one'}'s turn, not {ch.name}'s: on another's turn "
                           f"{ch.name} attacks only as a reaction (an opportunity attack, reaction=true).")
        return economy.attack(turn, ch, light=light, offhand=offhand)
    except BadInput as exc:
        raise ToolError(exc.message.rstrip("."), public=exc.message) from None


def _turn_of(ctx: ToolContext, ch: Character) -> Participant | None:
    """The character's place in the fight going on (None: no fight, or not in it)."""
    return combatant_of(ctx.state, ch)


def _can_sneak(ch: Character, attack_: Attack, turn: Participant | None) -> None:
    """Sneak Attack is a rogue's, with a finesse or ranged weapon, once a turn; ToolError (nothing changed) if not."""
    if features.sneak_dice(ch) is None:
        raise ToolError(f"{ch.name} is no rogue: Sneak Attack is a rogue's feature", public=True)
    if not (attack_.weapon.has("finesse") or attack_.weapon.kind == "ranged"):
        raise ToolError(f"Sneak Attack needs a finesse or ranged weapon, not a {attack_.weapon.name}", public=True)
    if turn is not None and "Sneak Attack" in turn.acted:
        raise ToolError(f"{ch.name} has already made a Sneak Attack this turn (once a turn)", public=True)


def _can_smite(ch: Character, attack_: Attack, level: int) -> None:
    """Divine Smite is a paladin's (2nd level on), with a melee weapon, and needs a slot of that level left."""
    if ch.char_class != "paladin" or ch.level < 2:
        raise ToolError(f"{ch.name} cannot smite: Divine Smite is a paladin's, from 2nd level", public=True)
    if attack_.weapon.kind != "melee":
        raise ToolError("Divine Smite needs a melee weapon", public=True)
    if slots.slots_left(ch).get(level, 0) < 1:
        raise ToolError(f"{ch.name} has no level-{level} slot left to smite with ({slots.slots_text(ch)})", public=True)


def _conditions_of(ctx: ToolContext, name: str) -> list[str]:
    """The conditions of whoever attacks by this name: a combatant, an NPC or a character."""
    key = name.strip().lower()
    for p in ctx.state.combat.order if ctx.state.combat.active else []:
        if p.name.lower() == key or p.id == key:
            holder = ctx.state.characters.get(p.id) or ctx.state.npcs.get(p.id)
            return list(holder.conditions if holder is not None else p.conditions)
    found = ctx.state.find_character(name) or ctx.state.find_npc(name)
    return list(found.conditions) if found is not None else []


def _holder_of(ctx: ToolContext, name: str) -> object | None:
    """Whoever attacks by this name, as the holder of their spells' effects: a combatant's sheet or stat block."""
    key = name.strip().lower()
    for p in ctx.state.combat.order if ctx.state.combat.active else []:
        if p.name.lower() == key or p.id == key:
            return ctx.state.characters.get(p.id) or ctx.state.npcs.get(p.id) or p
    return ctx.state.find_character(name) or ctx.state.find_npc(name)


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
