"""Using a class feature that spends something (engine/rules/features.py): the agents' use_feature tool and the
players' /feature command run the same code, which checks the character has the feature and some of it left, spends
it, and applies what it does (Rage's effect, Second Wind's and Lay on Hands' healing, a turned undead's save, …)."""

from __future__ import annotations

from pydantic import Field

from .. import bestiary
from ..dice import roll
from ..errors import BadInput, ToolError
from ..hostility import ConfirmAttack, require_consent
from ..rules import check, economy, features
from ..rules.origins import species_of
from ..rules.checks import creature_save_roll, proficiency_bonus
from ..rules.equipment import worn_armor
from ..rules.spells import AREA_TARGETS, save_dc, slots_for
from ..state import Character, Participant, Timed
from .afflictions import combatant_of
from .hitpoints import Target, _apply_hp, resolve_hp_target
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool


class FeatureArgs(Args):
    feature: str = Field(min_length=2, max_length=40)  # Rage, Second Wind, Lay on Hands, Ki, …
    character: str | None = Field(None, max_length=60)  # default: the acting player's character
    target: str | None = Field(None, max_length=300)  # whom it is used on (several, with commas, for Turn Undead)
    amount: int | None = Field(None, ge=1, le=100)  # hit points from Lay on Hands' pool, or Preserve Life's
    option: str | None = Field(None, max_length=40)  # Ki: flurry of blows, …; Channel Divinity: turn undead, …
    slot: int | None = Field(None, ge=1, le=5)  # sorcery points into a slot of this level


@tool(example='<use_feature character="Korg" feature="rage"/>; <use_feature character="Sera" feature="lay on hands" '
              'target="Aria" amount="5"/>; <use_feature character="Iri" feature="channel divinity" '
              'option="turn undead" target="Zombie 1, Zombie 2"/>', agents={NARRATIVE, COMBAT}, changes_state=True)
def use_feature(ctx: ToolContext, args: FeatureArgs) -> str:
    """Use a player character's class feature that is spent and comes back with a rest (Rage, Second Wind, Action
    Surge, Lay on Hands, Channel Divinity, Bardic Inspiration, Ki, Sorcery Points, Wild Shape, Arcane Recovery): the
    engine checks one is left, spends it and applies what it does."""
    try:
        told = use(ctx, ctx.character(args.character), args.feature, args.target, args.amount, args.option, args.slot)
    except BadInput as exc:
        raise ToolError(exc.message.rstrip("."), public=exc.message) from None
    return Told(told, told)


def use(ctx: ToolContext, ch: Character, name: str, target: str | None = None, amount: int | None = None,
        option: str | None = None, slot: int | None = None, *, confirmed: bool = True) -> str:
    """Use one of `ch`'s spendable features; BadInput (before anything changes) says why it cannot be. A harmful one
    (Breath Weapon) at someone who is no enemy in a fight needs `confirmed` (the GM's tool is; a player's command
    is refused, and told to say it in the story)."""
    if ch.hp == 0 or ch.dead:
        raise BadInput(f"{ch.name} is down and can use no feature.")
    if " ".join(name.lower().split()) in ("reckless attack", "reckless"):  # spends nothing: declared on an attack
        _spend_turn(ctx, ch, "Reckless Attack", None)
        return features.reckless(ch)
    r = features.resource(ch, name)
    key = r.name
    _spend_turn(ctx, ch, key, option)
    if key == "Rage":
        worn = worn_armor(ch)
        return features.rage(ch, worn is not None and worn.category == "heavy")
    if key == "Second Wind":
        said, healed = features.second_wind(ch, ctx.rng)
        return f"{said} {_apply_hp(ch, healed, 'healing')}"
    if key == "Action Surge":
        return features.action_surge(ch)
    if key == "Lay on Hands":
        return _lay_on_hands(ctx, ch, r, target, amount, option)
    if key == "Channel Divinity":
        return _channel(ctx, ch, target, amount, option)
    if key == "Bardic Inspiration":
        if not target:
            raise BadInput("Bardic Inspiration needs someone to inspire (target=).")
        return features.inspire(ch, _one(ctx, target))
    if key == "Ki":
        if " ".join((option or "").lower().split()) == "stunning strike":
            return _stunning_strike(ctx, ch, target)
        return features.ki(ch, option or "")
    if key == "Sorcery Points":
        if slot is None:
            raise BadInput("Say which slot the sorcery points make (slot=1..5), or which slot becomes points "
                           "(option=from slot, slot=N).")
        table = slots_for(ch.char_class, ch.level)
        if " ".join((option or "").lower().split()) in ("from slot", "points", "slot to points"):
            return features.slot_to_points(ch, slot, table)
        return features.flexible_casting(ch, slot, table)
    if key == "Wild Shape":
        return _wild_shape(ch, r, option or target)
    if key == "Breath Weapon":
        return _breath(ctx, ch, r, _names(target), confirmed)
    if key == "Arcane Recovery":
        if ctx.state.combat.active:
            raise BadInput("Arcane Recovery comes with a short rest, not in the middle of a fight.")
        return features.arcane_recovery(ch)
    raise BadInput(f"{key} has no use the engine plays out yet.")  # every Resource is handled above


# What each costs of a fight's turn (engine/rules/economy.py); Ki's Stunning Strike rides on a hit, costing nothing.
COSTS: dict[str, economy.Cost] = {"Breath Weapon": "action", "Rage": "bonus action", "Reckless Attack": "none", "Second Wind": "bonus action", "Action Surge": "none",
                                  "Lay on Hands": "action", "Channel Divinity": "action",
                                  "Bardic Inspiration": "bonus action", "Ki": "bonus action",
                                  "Sorcery Points": "bonus action", "Wild Shape": "action", "Arcane Recovery": "none"}


def _spend_turn(ctx: ToolContext, ch: Character, key: str, option: str | None) -> None:
    """In a fight, a feature is used on the character's own turn, at its cost; Action Surge gives one more action."""
    combat = ctx.state.combat
    turn = combatant_of(ctx.state, ch)
    if turn is None:
        return
    if combat.current() is not turn:
        now = combat.current()
        raise BadInput(f"It is {now.name if now else 'no one'}'s turn, not {ch.name}'s: {key} waits for theirs.")
    cost = COSTS.get(key, "action")
    if key == "Ki" and " ".join((option or "").lower().split()) == "stunning strike":
        cost = "none"
    economy.other(turn, ch, cost, key)
    if key == "Action Surge":
        turn.acted.append("Action Surge")


def _one(ctx: ToolContext, name: str) -> Target:
    try:
        return resolve_hp_target(ctx, name, reach=True)
    except ToolError as exc:
        raise BadInput(f"{str(exc).rstrip('.').capitalize()}.") from None


def _lay_on_hands(ctx: ToolContext, ch: Character, r: features.Resource, target: str | None, amount: int | None,
                  option: str | None) -> str:
    who = _one(ctx, target) if target else ch
    if " ".join((option or "").lower().split()) == "cure":
        if "poisoned" not in who.conditions:
            raise BadInput(f"{who.name} is not poisoned.")
        features.spend(ch, r, 5)
        who.conditions.remove("poisoned")
        return f"{ch.name} lays hands on {who.name}: 5 from the pool cure the poison ({r.left(ch)} left)."
    hp, most = who.hp or 0, who.max_hp or 0
    wanted = amount if amount is not None else min(r.left(ch), max(0, most - hp))
    if wanted <= 0:
        raise BadInput(f"{who.name} is at full health: say how much to heal (amount=).")
    features.spend(ch, r, wanted)
    return f"{ch.name} lays hands on {who.name} ({wanted} from the pool, {r.left(ch)} left). " + \
        _apply_hp(who, wanted, "healing")


def _names(target: str | None) -> list[str]:
    return [n.strip() for n in (target or "").split(",") if n.strip()]


def _channel(ctx: ToolContext, ch: Character, target: str | None, amount: int | None, option: str | None) -> str:
    how = " ".join((option or "").lower().split())
    if ch.char_class == "paladin":
        if how not in ("", "sacred weapon"):
            raise BadInput("A paladin of Devotion channels divinity into Sacred Weapon (option=sacred weapon).")
        return features.sacred_weapon(ch)
    if how == "turn undead":
        return _turn_undead(ctx, ch, _names(target))
    if how == "preserve life":
        return _preserve_life(ctx, ch, _names(target), amount)
    raise BadInput("Channel Divinity: option=turn undead (with the undead named) or option=preserve life (with the "
                   "wounded named).")


def _turn_undead(ctx: ToolContext, ch: Character, names: list[str]) -> str:
    if not names:
        raise BadInput("Name the undead to turn (target=, commas between them).")
    foes = [_one(ctx, n) for n in names]
    living = [f.name for f in foes if not (isinstance(f, Participant) and bestiary.type_of(f.monster) == "undead")]
    if living:
        raise BadInput(f"Turn Undead works on undead only; {', '.join(living)} {'is' if len(living) == 1 else 'are'} "
                       "not (as far as the engine knows).")
    features.spend(ch, features.resource(ch, "Channel Divinity"))
    dc = save_dc(ch)
    lines = [f"{ch.name} presents a holy symbol: Turn Undead, Wisdom save DC {dc}."]
    for f in foes:
        rolled = creature_save_roll(f, "wisdom", ctx.rng)
        if rolled.total >= dc:
            lines.append(f"{f.name}: {rolled.expression} → {rolled.total}, resists.")
            continue
        lines.append(f"{f.name}: {rolled.expression} → {rolled.total}, turned (frightened for a minute: it flees and "
                     "cannot act against the cleric).")
        if "frightened" not in f.conditions:
            f.conditions.append("frightened")
        holder = combatant_of(ctx.state, f)
        if holder is not None:
            ctx.state.combat.timed.append(Timed(holder=holder.id, condition="frightened", rounds=10))
    return " ".join(lines)


def _preserve_life(ctx: ToolContext, ch: Character, names: list[str], amount: int | None) -> str:
    """5 × level hit points shared among the wounded named, none raised above half its maximum."""
    if not names:
        raise BadInput("Name the wounded to heal (target=, commas between them).")
    pool = 5 * ch.level
    lines, given = [], 0
    people = [_one(ctx, n) for n in names]
    for who in people:
        room = max(0, (who.max_hp or 0) // 2 - (who.hp or 0))
        part = min(room, pool - given)
        if part > 0:
            given += part
            lines.append(_apply_hp(who, part, "healing"))
    if not lines:
        raise BadInput("Preserve Life heals no one above half their hit points: none of them is that badly hurt.")
    features.spend(ch, features.resource(ch, "Channel Divinity"))
    return f"{ch.name} channels divinity: Preserve Life ({given} of {pool} hit points). " + " ".join(lines)


def _breath(ctx: ToolContext, ch: Character, r: features.Resource, names: list[str], confirmed: bool) -> str:
    """A dragonborn's breath at the creatures named (the cone's, up to 12): each a Dexterity save against 8 + CON +
    proficiency for half of one damage roll of the ancestry's element."""
    if not names:
        raise BadInput("Name who is in the cone (target=, commas between them).")
    if len(names) > AREA_TARGETS:
        raise BadInput(f"A 15-foot cone holds at most {AREA_TARGETS} creatures; {len(names)} were named.")
    targets = [_one(ctx, n) for n in names]
    if not confirmed:
        try:
            require_consent(ctx.state, ch, targets, "Breathe on")
        except ConfirmAttack:
            raise BadInput("Someone in the cone is no enemy: breathe on them in the story (/act), and the GM judges "
                           "it.") from None
    features.spend(ch, r)
    species = species_of(ch)
    element = species.resistances[0] if species is not None and species.resistances else "fire"
    dc = 8 + ch.abilities.mod("constitution") + proficiency_bonus(ch.level)
    hurt = roll(features.breath_dice(ch.level), ctx.rng)
    lines = [f"{ch.name} breathes {element}: {hurt.expression} → {hurt.total}; Dexterity save DC {dc}."]
    for t in targets:
        saved = check(t, "dexterity", ctx.rng, save=True).roll if isinstance(t, Character) else \
            creature_save_roll(t, "dexterity", ctx.rng)
        success = saved.total >= dc
        amount = max(0, hurt.total) // (2 if success else 1)
        lines.append(f"{t.name}: {saved.expression} → {saved.total}, {'success, half' if success else 'failure, full'}"
                     f" damage. " + _apply_hp(t, amount, "damage", rng=ctx.rng, damage_type=element))
    return " ".join(lines)


def _stunning_strike(ctx: ToolContext, ch: Character, target: str | None) -> str:
    if ch.level < 5:
        raise BadInput(f"Stunning Strike comes at monk 5th level; {ch.name} is level {ch.level}.")
    if not target:
        raise BadInput("Name the creature struck (target=): Stunning Strike follows a melee hit.")
    foe = _one(ctx, target)
    features.spend(ch, features.resource(ch, "Ki"))
    dc = 8 + proficiency_bonus(ch.level) + ch.abilities.mod("wisdom")
    if isinstance(foe, Character):
        rolled = check(foe, "constitution", ctx.rng, save=True).roll
    else:
        rolled = creature_save_roll(foe, "constitution", ctx.rng)
    head = f"{ch.name} spends 1 ki on a Stunning Strike: {foe.name}'s Constitution save {rolled.expression} → " \
           f"{rolled.total} vs DC {dc}"
    if rolled.total >= dc:
        return f"{head}: it holds."
    if "stunned" not in foe.conditions:
        foe.conditions.append("stunned")
    holder = combatant_of(ctx.state, foe)
    if holder is not None:
        ctx.state.combat.timed.append(Timed(holder=holder.id, condition="stunned", rounds=1))
    return f"{head}: stunned until the end of its next turn."


def _wild_shape(ch: Character, r: features.Resource, beast: str | None) -> str:
    """A beast's shape within the druid's limits (CR 1/4 and no flying or swimming at 2nd, CR 1/2 and no flying at
    4th, CR 1 at 8th, as the SRD's table has it); the GM plays the shape from its stat block."""
    if not beast:
        raise BadInput("Say which beast (option=wolf, …).")
    found = bestiary.find(beast)
    if found is None or found.type != "beast":
        raise BadInput(f"'{beast}' is no beast of the SRD's I know.")
    limit = 1.0 if ch.level >= 8 else 0.5 if ch.level >= 4 else 0.25
    cr = _cr(found.cr)
    moves = set(found.speed)
    if cr > limit or ("fly" in moves and ch.level < 8) or ("swim" in moves and ch.level < 4):
        raise BadInput(f"A level-{ch.level} druid cannot take the shape of a {found.name} (CR {found.cr}"
                       + (", " + "/".join(sorted(moves & {'fly', 'swim'})) if moves & {"fly", "swim"} else "") + ").")
    features.spend(ch, r)
    hours = max(1, ch.level // 2)
    return (f"{ch.name} takes the shape of a {found.name} for up to {hours} hour{'s' if hours != 1 else ''} "
            f"({r.left(ch)} left): AC {found.ac}, HP {found.hp}, speed {found.speed_text()}; the GM plays the beast's "
            "numbers, and the druid's own come back when it drops to 0.")


def _cr(text: str) -> float:
    if "/" in text:
        top, bottom = text.split("/")
        return int(top) / int(bottom)
    return float(text)


__all__ = ["use", "use_feature"]
