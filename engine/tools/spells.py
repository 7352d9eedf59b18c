"""Casting a player character's spell: the engine checks that it is known, spends the slot, rolls the spell attack
or the targets' saves against the caster's DC, and applies the damage or healing; the story follows the result."""

from __future__ import annotations

import difflib
import random
from typing import Literal

from pydantic import Field

from ..dice import Roll, roll as roll_dice
from ..errors import BadInput, ToolError
from ..basics import Effect
from ..rules import check, conditions, economy, effects, features, life
from ..rules.checks import creature_save_roll
from ..rules.data import rules as rules_data
from ..rules.equipment import armor_class, worn_armor
from ..rules import spells as rules
from ..rules.attacks import critical as doubled
from ..rules.spells import Spell, ordinal
from ..hostility import require_consent
from ..state import Character
from .afflictions import combatant_of
from .hitpoints import Target, _apply_hp, resolve_hp_target
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool

Mode = Literal["advantage", "disadvantage"] | None


class CastArgs(Args):
    spell: str = Field(min_length=1, max_length=60)
    caster: str | None = Field(None, max_length=60)  # default: the acting player's character
    target: str | None = Field(None, max_length=300)  # one name, or several separated by commas
    level: int | None = Field(None, ge=1, le=9)  # the slot level (default: the lowest slot left that fits)
    advantage: Literal["advantage", "disadvantage"] | None = None


@tool(example='<cast_spell caster="Bram" spell="magic missile" target="Goblin 1" level="2"/>',
      agents={NARRATIVE, COMBAT}, changes_state=True)
def cast_spell(ctx: ToolContext, args: CastArgs) -> str:
    """Cast a player character's cantrip, or a spell they know or have prepared, at the targets named (commas
    between several): the engine spends the slot, rolls the spell attack or each target's save against the caster's
    DC and applies damage or healing; narrate its result, and play out what it leaves to you (a condition, an
    illusion)."""
    try:
        # The GM judges what the player said they do: a spell at someone who is no enemy needs no button here.
        told = cast(ctx, ctx.character(args.caster), args.spell, args.target, args.level, args.advantage,
                    confirmed=True)
    except BadInput as exc:
        raise ToolError(exc.message.rstrip("."), public=exc.message) from None  # /cast's own words: the table's
    return Told(told, told)  # the table reads it all: slot, rolls, damage, who falls


def cast(ctx: ToolContext, ch: Character, name: str, target: str | None, level: int | None, mode: Mode, *,
         confirmed: bool = False) -> str:
    """Cast a spell of `ch`'s, changing the state; BadInput (raised before anything changes) says why it cannot be.
    A harmful spell at someone who is no enemy in a fight needs `confirmed` (its player said yes), else
    ConfirmAttack asks."""
    if ch.hp == 0:
        raise BadInput(f"{ch.name} is down (0 HP) and cannot cast a spell.")
    stopped = conditions.cannot_act(ch.conditions)
    if stopped:
        raise BadInput(f"{ch.name} is {stopped} and cannot cast a spell.")
    spell = rules.known_spell(ch, name)
    if any(e.spell == "Rage" for e in ch.effects):
        raise BadInput(f"{ch.name} is raging and cannot cast spells until the rage ends.")
    untrained = untrained_armour(ch)
    if untrained:
        raise BadInput(f"{ch.name} cannot cast spells wearing {untrained}: a {ch.char_class} is not trained in it "
                       f"(the SRD). Take it off first.")
    slot = rules.choose_slot(ch, spell, level)
    targets = _targets(ctx, ch, spell, slot, target)
    if spell.grants is not None and spell.grants.mark and not targets:
        raise BadInput(f"{spell.name} needs a target: name the creature it marks.")
    if spell.harmful and not confirmed:
        require_consent(ctx.state, ch, targets, f"Cast {spell.name} at")
    took = _spend_turn(ctx, ch, spell)
    ended = []
    if spell.concentration and ch.concentration:  # one spell held at a time: the one held ends, and all it did
        ended = effects.end_spell(ctx.state, ch.name, ch.concentration, f"{ch.name} casts {spell.name}")
        ch.concentration = None
    rules.spend(ch, slot)
    how = f" ({ordinal(slot)}-level slot" + (f", {took})" if took in ("bonus action", "reaction") else ")") if slot else \
        (f" ({took})" if took in ("bonus action", "reaction") else "")
    yourself = len(targets) == 1 and targets[0] is ch
    at = " on themself" if yourself else (f" at {_names(targets)}" if targets else "")
    lines = [f"{ch.name} casts {spell.name}{how}{at}."]
    failed: list[Target] = []
    if spell.attack:
        lines += _attacks(ctx.rng, ch, spell, slot, targets, mode)
    elif spell.save:
        lines += _saves(ctx.rng, ch, spell, slot, targets, mode, failed)
    elif spell.damage:
        lines += _automatic(ctx.rng, ch, spell, slot, targets)
    if spell.healing:
        expression = rules.dice_for(spell, spell.healing, slot, ch)
        life_bonus = features.healing_bonus(ch, slot)  # Disciple of Life
        healed = roll_dice(expression + (f"+{life_bonus}" if life_bonus else ""), ctx.rng)
        lines.append(f"Healing {healed.expression} → {healed.total}" + (" (Disciple of Life)." if life_bonus else "."))
        lines += [_apply_hp(t, max(0, healed.total), "healing") for t in targets]
    if spell.roll:
        rolled = roll_dice(rules.dice_for(spell, spell.roll, slot, ch), ctx.rng)
        lines.append(f"{rolled.expression} → {rolled.total} {spell.roll.what}.")
        if spell.roll.what == "temporary hit points":  # False Life: they soak damage first, and never stack
            for t in [t for t in targets if isinstance(t, Character)] or [ch]:
                lines.append(life.gain_temporary(t, max(0, rolled.total)))
    if spell.name == "Spare the Dying":  # a dying creature touched becomes stable
        lines += [life.stabilize(t) for t in targets if isinstance(t, Character) and t.hp == 0 and not t.dead]
    if not spell.harmful and not spell.healing and not spell.roll and spell.grants is None:
        lines.append(spell.description)
    if spell.grants is not None:
        lines += _grant(ctx, ch, spell, targets if not spell.save else failed)
    if spell.concentration:
        ch.concentration = spell.name
        lines.append(f"Concentration on {spell.name}.")
    lines += ended
    if slot:
        lines.append(f"{rules.slots_line(ch)}")
    return " ".join(lines)


def _spend_turn(ctx: ToolContext, ch: Character, spell: Spell) -> str:
    """The spell's place in a fight's turn (engine/rules/economy.py): its action, bonus action or reaction; on
    another's turn only a reaction spell (Shield). Outside a fight, or outside this one, nothing is counted."""
    combat = ctx.state.combat
    turn = combatant_of(ctx.state, ch)
    if turn is None:
        return ""
    cost = economy.spell_cost(spell.casting_time)
    if combat.current() is not turn and cost != "reaction":
        now = combat.current()
        raise BadInput(f"It is {now.name if now else 'no one'}'s turn, not {ch.name}'s: on another's turn only a "
                       f"reaction spell (Shield) can be cast.")
    return economy.cast(turn, ch, cost, spell.level)


def _grant(ctx: ToolContext, ch: Character, spell: Spell, affected: list[Target]) -> list[str]:
    """What the spell leaves while it lasts: on each creature it affected (a failed save's, for a save spell; the
    caster, for a spell cast on no one), or on the caster, marking the one it was cast at (Hunter's Mark)."""
    grant = spell.grants
    assert grant is not None
    dc = rules.save_dc(ch)

    def made(mark: str | None = None) -> Effect:
        return effects.make(spell.name, ch.name, spell.duration, spell.concentration, grant, mark=mark, dc=dc,
                            save=spell.save)

    if grant.to == "caster":
        return [effects.put(ch, made(affected[0].name if grant.mark and affected else None))]
    if not affected and not spell.save:
        affected = [ch]
    return [effects.put(t, made()) for t in affected]


def _targets(ctx: ToolContext, ch: Character, spell: Spell, slot: int | None, text: str | None) -> list[Target]:
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    if not names:
        if spell.harmful:
            raise BadInput(f"{spell.name} needs a target: name who it is cast at.")
        return [ch] if spell.healing else []
    most = spell.max_targets(slot)
    if len(names) > most:
        at = f" at {ordinal(slot)} level" if slot else ""
        raise BadInput(f"{spell.name}{at} affects at most {most} creature{'s' if most > 1 else ''}; "
                       f"{len(names)} were named.")
    found: list[Target] = []
    for n in names:
        try:
            t = resolve_hp_target(ctx, n, reach=True)
        except ToolError:
            raise BadInput(_nobody(ctx, n)) from None
        if any(t is f for f in found):
            raise BadInput(f"{t.name} is named twice.")
        found.append(t)
    return found


def _nobody(ctx: ToolContext, name: str) -> str:
    state = ctx.state
    here = [p.name for p in state.combat.order] if state.combat.active else []
    here += [c.name for c in state.characters.values() if c.name not in here]
    here += [n.name for n in state.present_npcs() if n.name not in here]
    close = difflib.get_close_matches(name.lower(), [h.lower() for h in here], n=1, cutoff=0.6)
    hint = f" Did you mean {next(h for h in here if h.lower() == close[0])}?" if close else ""
    return f"No one called '{name}' is here to target.{hint} Here: {', '.join(here) or 'no one'}."


def _names(targets: list[Target]) -> str:
    names = [t.name for t in targets]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _attacks(rng: random.Random, ch: Character, spell: Spell, slot: int | None, targets: list[Target],
             mode: Mode) -> list[str]:
    """One spell attack per beam, ray or dart (the extra ones at the last target named); a natural 20 doubles the
    damage dice, a natural 1 misses."""
    lines, dealt = [], 0
    bonus = rules.attack_bonus(ch)
    count = rules.beams(spell, slot, ch)
    for n in range(count):
        target = targets[min(n, len(targets) - 1)]
        melee = spell.attack == "melee"
        adv, dis = effects.against(target)
        chosen, why = conditions.attack_mode(mode, ch.conditions, target.conditions, melee, dis, adv)
        terms, spells = effects.roll_terms(ch, "attack")
        ac, ac_why = effects.target_ac(target)
        to_hit = roll_dice(f"1d20{bonus:+d}{terms}" + {"advantage": " adv", "disadvantage": " dis"}.get(chosen or "", ""),
                           rng)
        which = f"{_ray(spell).capitalize()} {n + 1}: spell" if count > 1 else "Spell"
        reasons = "; ".join(r for r in (why, ", ".join(spells)) if r)
        head = (f"{which} attack {to_hit.expression} → {to_hit.total}" + (f" ({reasons})" if reasons else "")
                + f" vs AC {ac}" + (f" ({ac_why})" if ac_why else "") + f" ({target.name})")
        if to_hit.natural == 1 or (to_hit.natural != 20 and to_hit.total < ac):
            missed = f"{head}, miss{' (natural 1)' if to_hit.natural == 1 else ''}"
            if spell.miss_half and spell.damage is not None:  # Acid Arrow splashes: half the damage, nothing after
                splash = roll_dice(rules.dice_for(spell, spell.damage, slot, ch), rng)
                amount = max(0, splash.total) // 2
                dealt += amount
                lines.append(f"{missed}, but it splashes: half of {splash.expression} → {splash.total} = {amount} "
                             f"{spell.damage.type}. " + _apply_hp(target, amount, "damage", rng=rng,
                                                                  damage_type=spell.damage.type))
            else:
                lines.append(missed + ".")
            continue
        critical = to_hit.natural == 20 or (melee and conditions.melee_crit(target.conditions))
        if spell.damage is None:
            lines.append(f"{head}, hit" + (f": {spell.effect}." if spell.effect else "."))
            continue
        expression = rules.dice_for(spell, spell.damage, slot, ch)
        if critical:
            expression = doubled(expression)
        hurt = roll_dice(expression, rng)
        dealt += max(0, hurt.total)
        kind = "critical hit (damage dice doubled)" if critical else "hit"
        effect = f"; {spell.effect}" if spell.effect else ""
        lines.append(f"{head}, {kind}: {hurt.expression} → {hurt.total} {spell.damage.type}{effect}. "
                     + _apply_hp(target, max(0, hurt.total), "damage", critical, rng, spell.damage.type))
    return lines + _drained(ch, spell, dealt)


def _saves(rng: random.Random, ch: Character, spell: Spell, slot: int | None, targets: list[Target],
           mode: Mode, failed: list[Target]) -> list[str]:
    """Damage rolled once; each target saves against the caster's DC: full damage (and the effect) on a failure,
    half or none on a success. Those who fail are added to `failed`."""
    assert spell.save is not None
    dc = rules.save_dc(ch)
    lines, dealt, hurt = [], 0, None
    if spell.damage is not None:
        hurt = roll_dice(rules.dice_for(spell, spell.damage, slot, ch), rng)
        lines.append(f"{spell.damage.type.capitalize() if spell.damage.type else 'Damage'} damage "
                     f"{hurt.expression} → {hurt.total}; {spell.save.capitalize()} save DC {dc}.")
    else:
        lines.append(f"{spell.save.capitalize()} save DC {dc}.")
    for target in targets:
        saved = _save_roll(rng, target, spell.save, mode, spell)
        success = saved.total >= dc
        if not success:
            failed.append(target)
        line = f"{target.name}: {saved.expression} → {saved.total}, {'success' if success else 'failure'}"
        if not success and spell.effect:
            line += f", {spell.effect}"
        evading = spell.half and spell.save == "dexterity" and isinstance(target, Character) and features.evasion(target)
        if hurt is not None and evading:  # Evasion: none on a success, half on a failure
            amount = 0 if success else max(0, hurt.total) // 2
            dealt += amount
            line += (f"; Evasion: {'no' if success else 'half'} damage. "
                     + _apply_hp(target, amount, "damage", rng=rng, damage_type=spell.damage.type if spell.damage else None))
        elif hurt is not None and (not success or spell.half):
            amount = max(0, hurt.total) // (2 if success else 1)
            dealt += amount
            line += (f"; {'half' if success else 'full'} damage. "
                     + _apply_hp(target, amount, "damage", rng=rng, damage_type=spell.damage.type if spell.damage else None))
        else:
            line += "."
        lines.append(line)
    return lines + _drained(ch, spell, dealt)


def _save_roll(rng: random.Random, target: Target, ability: str, mode: Mode, spell: Spell | None = None) -> Roll:
    """A character saves by their sheet; anyone else by their stat block (engine/rules/checks.creature_save_roll)."""
    if isinstance(target, Character):  # a spell is magic (a gnome's cunning); poison damage is poison (a dwarf's)
        against = "poison" if spell is not None and spell.damage is not None and spell.damage.type == "poison" \
            else "magic"
        return check(target, ability, rng, mode, save=True, against=against).roll
    return creature_save_roll(target, ability, rng, mode)


def _automatic(rng: random.Random, ch: Character, spell: Spell, slot: int | None, targets: list[Target]) -> list[str]:
    """Damage that needs no roll to hit (magic missile's darts, heat metal), each dart rolled on its own."""
    assert spell.damage is not None
    lines, dealt = [], 0
    count = rules.beams(spell, slot, ch)
    for n in range(count):
        target = targets[min(n, len(targets) - 1)]
        hurt = roll_dice(rules.dice_for(spell, spell.damage, slot, ch), rng)
        dealt += max(0, hurt.total)
        which = f"{_ray(spell).capitalize()} {n + 1} ({target.name})" if count > 1 else target.name
        effect = f"; {spell.effect}" if spell.effect else ""
        lines.append(f"{which}: {hurt.expression} → {hurt.total} {spell.damage.type}{effect}. "
                     + _apply_hp(target, max(0, hurt.total), "damage", rng=rng, damage_type=spell.damage.type))
    return lines + _drained(ch, spell, dealt)


def _drained(ch: Character, spell: Spell, dealt: int) -> list[str]:
    if not spell.drain or dealt < 2:
        return []
    return [_apply_hp(ch, dealt // 2, "healing")]


def _ray(spell: Spell) -> str:
    return {"Magic Missile": "dart", "Scorching Ray": "ray"}.get(spell.name, "beam")


__all__ = ["cast", "cast_spell"]


def untrained_armour(ch: Character) -> str | None:
    """The armour (or shield) `ch` wears without its class's training, which stops spellcasting; None: none."""
    cls = rules_data().classes.get(ch.char_class)
    if cls is None:
        return None
    body = worn_armor(ch)
    if body is not None and body.category not in cls.armor:
        return body.name
    if "shield" not in cls.armor and "shield" in armor_class(ch).source:  # a shield the AC counts is in hand
        return "a shield"
    return None
