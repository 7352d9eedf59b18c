"""Combat tools: start an encounter with rolled initiative, advance turns, end it."""

from __future__ import annotations

from typing import NamedTuple

from pydantic import Field

from ..errors import ToolError
from ..shops import hand_out
from ..basics import XP_BY_CR, Abilities, Attack, slug
from ..entities import MAX_COMBATANTS, EnemyTemplate
from ..rules import economy, effects, life
from ..rules.levels import earned
from ..state import GameState, Participant
from . import afflictions
from .registry import COMBAT, NARRATIVE, Args, Told, ToolContext, tool


class StartCombatArgs(Args):
    encounter: str | None = Field(None, max_length=80)
    enemy: list[EnemyTemplate] = Field(default_factory=list, max_length=12)
    npc: list[str] = Field(default_factory=list, max_length=12)  # people here who fight the party, by id or name


@tool(example='<start_combat encounter="bandit-ambush"/>, or improvised: '
              '<start_combat>{"enemy": [{"monster": "wolf", "count": 2}]}</start_combat> (an SRD creature\'s numbers) or '
              '<start_combat>{"enemy": [{"name": "Mire Thing", "hp": 11, "ac": 13, "initiative_bonus": 2}]}</start_combat>'
              ', or against people here: <start_combat>{"npc": ["tomas-reed"]}</start_combat>',
      agents={NARRATIVE}, changes_state=True, body="encounter")
def start_combat(ctx: ToolContext, args: StartCombatArgs) -> str:
    """Start combat: the party against an encounter's enemies, improvised ones, or people here who turn on them
    (npc, by id: they fight by their own sheets), with initiative rolled for all."""
    state = ctx.state
    if state.combat.active:
        raise ToolError("combat is already under way")
    enemies = list(args.enemy)
    if args.encounter:
        enc = state.encounters.get(slug(args.encounter))
        if enc is None:
            raise ToolError(f"there is no encounter '{args.encounter}' (encounters: {', '.join(state.encounters) or 'none'})")
        if enc.location != state.current_location:
            raise ToolError(f"the encounter '{enc.id}' happens at {state.locations[enc.location].name}, not here")
        enemies = list(enc.enemies) + enemies
        foes = [state.npcs[i] for i in enc.npcs if i in state.npcs and state.npcs[i].location == enc.location
                and state.npcs[i].hp > 0 and i not in state.party.npc_ids]
    else:
        foes = []
    for ref in args.npc:  # someone here who fights the party: a person struck, a host betrayed
        npc = ctx.npc(ref)
        if npc not in state.present_npcs() or npc.id in state.party.npc_ids:
            raise ToolError(f"{npc.name} is not here to fight the party" if npc not in state.present_npcs() else
                            f"{npc.name} travels with the party; remove_from_party first")
        if npc.hp == 0:
            raise ToolError(f"{npc.name} is down and cannot fight")
        if npc not in foes:
            foes.append(npc)
    if not enemies and not foes:
        raise ToolError("name an encounter, give at least one enemy, or name the people here who fight")
    if sum(t.count for t in enemies) + len(foes) + len(state.party.player_ids) + len(state.party.npc_ids) > MAX_COMBATANTS:
        raise ToolError(f"a fight can have at most {MAX_COMBATANTS} combatants; use fewer or stronger enemies")
    order: list[Participant] = []
    for pid in state.party.player_ids:
        ch = state.characters.get(pid)
        if ch is None or ch.hp == 0:
            continue
        init = ctx.rng.randint(1, 20) + ch.abilities.mod("dexterity")
        order.append(Participant(id=pid, name=ch.name, faction="player", initiative=init, ac=ch.ac))
    for npc_id in state.party.npc_ids:
        npc = state.npcs[npc_id]
        if npc.hp > 0:
            order.append(Participant(id=npc.id, name=npc.name, faction="ally", ac=npc.ac,
                                     initiative=ctx.rng.randint(1, 20) + _dex(npc.abilities)))
    if not any(p.faction == "player" for p in order):
        raise ToolError("no conscious player character can fight")
    taken = {p.id for p in order}
    # A foe is found by its name (update_hp target="…"): one that shares a character's or a person's name would
    # make the name mean either, and a second "Goblin" could never be told from the first.
    known = {c.name.lower(): "a player character's name" for c in state.characters.values()}
    known.update({n.name.lower(): "the name of someone in this adventure" for n in state.npcs.values() if n not in foes})
    kinds: dict[str, int] = {}  # foes of each name: more than one are numbered, across templates too
    for template in enemies:
        if template.name.lower() in known:
            raise ToolError(f"an enemy cannot be called {template.name}: that is {known[template.name.lower()]}; "
                            "call it something else (its kind, a title)")
        kinds[template.name.lower()] = kinds.get(template.name.lower(), 0) + template.count
    numbered: dict[str, int] = {}
    for template in enemies:
        for _ in range(template.count):
            key = template.name.lower()
            numbered[key] = numbered.get(key, 0) + 1
            name = template.name if kinds[key] == 1 else f"{template.name} {numbered[key]}"
            order.append(Participant(id=_unique_id(taken, slug(name)), name=name, faction="enemy",
                                     initiative=ctx.rng.randint(1, 20) + template.initiative_bonus, ac=template.ac,
                                     hp=template.hp, max_hp=template.hp, attacks=template.attacks,
                                     actions=template.actions, abilities=template.abilities, cr=template.cr,
                                     defences=template.defences, saves=template.saves,
                                     monster=template.monster))
    for npc in foes:  # an NPC who fights keeps its own sheet: its hit points and stat block are the NPC's
        taken.add(npc.id)
        order.append(Participant(id=npc.id, name=npc.name, faction="enemy", ac=npc.ac, cr=npc.cr,
                                 initiative=ctx.rng.randint(1, 20) + _dex(npc.abilities)))
    # Ties go to the party, then to the order of entry: stable, so a replay gives the same order.
    order.sort(key=lambda p: (-p.initiative, p.faction == "enemy"))
    combat = state.combat
    combat.active, combat.round, combat.turn_index, combat.order = True, 1, 0, order
    combat.encounter_id = slug(args.encounter) if args.encounter else None
    return "Combat begins! Initiative: " + "; ".join(f"{p.name} {p.initiative}" for p in order) + \
        f". Round 1: {order[0].name} acts first."


def _dex(abilities: Abilities | None) -> int:
    return abilities.mod("dexterity") if abilities is not None else 0


def _unique_id(taken: set[str], base: str) -> str:
    pid, n = base or "enemy", 2
    while pid in taken:
        pid, n = f"{base or 'enemy'}-{n}", n + 1
    taken.add(pid)
    return pid


def stat_block_attacks(state: GameState, p: Participant) -> list[Attack]:
    """A combatant's stat-block attacks: an enemy's own, or the NPC's whose sheet it fights with."""
    if p.actions:
        return p.actions
    npc = state.npcs.get(p.id) if p.faction != "player" else None
    return npc.actions if npc is not None else []


def creature_attack(state: GameState, attacker: str | None, weapon: str | None, improvised: bool) -> Attack | None:
    """The stat-block attack a creature or NPC makes: the one `weapon` names, or its first when neither a weapon nor
    the attack's numbers are given. None: a player character, a creature without a stat block, or an improvised
    attack (a weapon it does not list, with the numbers given)."""
    if attacker is None:
        return None
    key = attacker.strip().lower()
    combatant = next((p for p in state.combat.order if p.name.lower() == key or p.id == key), None) \
        if state.combat.active else None
    if combatant is not None:
        actions = stat_block_attacks(state, combatant)
    else:
        npc = state.find_npc(attacker) if state.find_character(attacker) is None else None
        actions = npc.actions if npc is not None else []
    if not actions:
        return None
    if weapon is None:
        return None if improvised else actions[0]
    wanted = " ".join(weapon.lower().split())
    found = next((a for a in actions if a.name.lower() == wanted), None) or \
        next((a for a in actions if wanted in a.name.lower() or a.name.lower() in wanted), None)
    if found is None and not improvised:
        raise ToolError(f"{attacker} has no attack called '{weapon}' (its attacks: {', '.join(a.name for a in actions)}); "
                        f"for anything else give bonus and damage")
    return found


def participant_hp(state: GameState, p: Participant) -> tuple[int, int]:
    if p.hp is not None:
        return p.hp, p.max_hp or p.hp
    if p.faction == "player" and p.id in state.characters:
        ch = state.characters[p.id]
        return ch.hp, ch.max_hp
    npc = state.npcs.get(p.id)
    return (npc.hp, npc.max_hp) if npc else (0, 0)


class Row(NamedTuple):
    """One combatant as the tracker shows it."""

    now: bool  # it is their turn
    who: Participant
    hp: int
    max_hp: int
    ac: int  # as attacks meet it now: with Shield, Shield of Faith, Mage Armor, …
    spells: list[str]  # the spells on them that change their numbers


def tracker_rows(state: GameState) -> list[Row]:
    """Each combatant in initiative order: whether it is their turn, who, HP, maximum HP, AC and spells on them."""
    rows = []
    for i, p in enumerate(state.combat.order):
        holder = afflictions.holder_of(state, p)
        ac = effects.target_ac(holder)[0] if holder.effects else p.ac
        rows.append(Row(i == state.combat.turn_index, p, *participant_hp(state, p), ac,
                        [e.spell for e in holder.effects]))
    return rows


def tracker(state: GameState) -> str:
    rows = [f"{'▶ ' if r.now else ''}{r.who.name} [{r.who.faction}] init {r.who.initiative}, AC {r.ac}, "
            f"{_down_as(state, r.who) if r.hp == 0 else f'HP {r.hp}/{r.max_hp}'}"
            + (f" ({', '.join(r.spells)})" if r.spells else "") for r in tracker_rows(state)]
    now = state.combat.current()
    turn = f" {now.name} has: {turn_left(state, now)}." if now is not None and now.faction == "player" else ""
    return f"Round {state.combat.round}: " + "; ".join(rows) + turn


def turn_left(state: GameState, p: Participant) -> str:
    """What a player character has left of their turn: "action free, bonus action used, reaction free"."""
    return economy.summary(p, state.characters.get(p.id))


class NoArgs(Args):
    pass


@tool(example="<next_turn/>", agents={COMBAT}, changes_state=True)
def next_turn(ctx: ToolContext, args: NoArgs) -> str:
    """End the current combatant's turn and pass to the next one still standing; call it after every action."""
    combat = ctx.state.combat
    if not combat.active:
        raise ToolError("there is no combat going on")
    # A player character dying at 0 HP still has turns: each is a death saving throw.
    standing = [i for i, p in enumerate(combat.order) if participant_hp(ctx.state, p)[0] > 0 or _dying(ctx.state, p)]
    if not standing:
        raise ToolError("no one is left standing; end the combat")
    ending = afflictions.end_of_turn(ctx, combat.order[combat.turn_index])  # its saves and durations, as it ends
    idx = combat.turn_index
    for _ in range(len(combat.order)):
        idx += 1
        if idx >= len(combat.order):
            idx = 0
            combat.round += 1
        if idx in standing:
            break
    combat.turn_index = idx
    current = combat.order[idx]
    ending += effects.start_of_turn(ctx.state, current.name)  # its spells run a round shorter (Shield ends now)
    current.acted = []  # a new turn: what comes once a turn comes again
    enemies_left = [p.name for p in combat.order if p.faction == "enemy" and participant_hp(ctx.state, p)[0] > 0]
    tail = "" if enemies_left else " No enemy is left standing: end the combat."
    if _dying(ctx.state, current):
        tail += f" {current.name} is dying: their turn is a death saving throw (death_save), then next_turn."
    ended = " ".join(f"{line}." for line in ending)
    return f"{ended + ' ' if ended else ''}Round {combat.round}, {current.name}'s turn ({current.faction}).{tail} " \
        f"{tracker(ctx.state)}"


def _dying(state: GameState, p: Participant) -> bool:
    ch = state.characters.get(p.id) if p.faction == "player" else None
    return ch is not None and ch.hp == 0 and not ch.stable and not ch.dead


class EndCombatArgs(Args):
    outcome: str = Field("", max_length=200)


@tool(example='<end_combat outcome="the bandits surrender"/>', agents={COMBAT}, changes_state=True, body="outcome")
def end_combat(ctx: ToolContext, args: EndCombatArgs) -> str:
    """End combat when one side is defeated, flees or surrenders."""
    combat = ctx.state.combat
    if not combat.active:
        raise ToolError("there is no combat going on")
    enemies = [p for p in combat.order if p.faction == "enemy"]
    down = [p for p in enemies if participant_hp(ctx.state, p)[0] == 0]
    fallen = [p.name for p in down]
    rounds = combat.round
    encounter = ctx.state.encounters.get(combat.encounter_id or "")
    lifted = afflictions.lift_all(ctx.state)  # what the fight timed ends with it
    lifted += [line.rstrip(".") for line in effects.after_fight(ctx.state)]
    combat.active, combat.round, combat.turn_index, combat.order, combat.encounter_id = False, 0, 0, [], None
    summary = f"Combat over after {rounds} round{'s' if rounds != 1 else ''}"
    if fallen:
        summary += f"; defeated: {', '.join(fallen)}"
    summary += f" ({args.outcome})." if args.outcome else "."
    if lifted:
        summary += " " + "; ".join(lifted) + "."
    earned_xp = _xp_for_the_fallen(ctx.state, down)
    summary += earned_xp
    # The encounter's spoils go to the party once, when every enemy of it is down (not when they flee or parley).
    if encounter is not None and encounter.loot is not None and not encounter.looted and len(fallen) == len(enemies):
        loot = hand_out(ctx.state, encounter.loot, ctx.actor_id)
        if loot is not None:
            encounter.looted = True
            return Told(f"{summary} {loot}", f"{summary} {loot}")
    return Told(summary, summary) if earned_xp else summary


def _xp_for_the_fallen(state: GameState, fallen: list[Participant]) -> str:
    """Foes overcome are worth XP by their challenge rating (the SRD's table), split evenly among the party's
    player characters, in a game that levels by XP. A foe with no rating is the GM's to reward (award_xp)."""
    worth = sum(XP_BY_CR.get(p.cr or "", 0) for p in fallen)
    party = [state.characters[o] for o in state.party.player_ids if o in state.characters]
    if state.leveling != "xp" or not worth or not party:
        return ""
    share, left = divmod(worth, len(party))
    for n, ch in enumerate(party):
        ch.xp = min(10_000_000, ch.xp + share + (1 if n < left else 0))
    ready = [c.name for c in party if earned(c, "xp")]
    each = f"{share:,} XP each" if len(party) > 1 else f"{worth:,} XP"
    told = f" The party earns {worth:,} XP for the foes overcome ({each})."
    if ready:
        told += f" {' and '.join(ready)} {'has' if len(ready) == 1 else 'have'} earned a level (/levelup)."
    return told


def _down_as(state: GameState, p: Participant) -> str:
    """How a combatant at 0 HP stands: a player character dying (its saves), stable or dead; anyone else down."""
    ch = state.characters.get(p.id) if p.faction == "player" else None
    return life.state_line(ch) if ch is not None else "down"
