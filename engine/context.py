"""What each agent sees: the state as it may know it, and the history it witnessed."""

from __future__ import annotations

import re
import weakref
from typing import Any, Callable

from .agents import quoted, speaker_label, speaker_line
from .models import ChatMessage
from .shops import closed_because, shop_heading, shops_here, stock_lines
from .basics import AgentType
from .entities import NPC, Encounter, Loot, Shop
from .state import Character, GameState, Message
from .markup import escape
from .tools.character import character_sheet
from .tools.combat import participant_hp, stat_block_attacks, tracker
from .tools.quests import quest_line
from .journal import bearing
from .visibility import GM, Viewer, describe_location, here, recall, visible_history

__all__ = ["game_context", "history_messages", "merge_roles", "quoted", "speaker_label", "speaker_line", "visible_history"]


def history_messages(history: list[Message], agent: AgentType, npc_id: str | None, state: GameState) -> list[ChatMessage]:
    """History as chat turns: the agent's own words as assistant, everyone else's labelled as user."""
    out: list[ChatMessage] = []
    for m in history:
        mine = m.agent is agent and (agent is not AgentType.NPC or m.npc_id == npc_id)
        if mine:
            out.append(ChatMessage("assistant", escape(m.text)))
        else:
            out.append(ChatMessage("user", speaker_line(m, state)))
    if out and out[0].role == "assistant":
        out.insert(0, ChatMessage("user", "[The session begins.]"))  # providers want a user message first
    return merge_roles(out)


def merge_roles(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Join consecutive messages of one role, as some providers require alternating roles."""
    merged: list[ChatMessage] = []
    for m in messages:
        if merged and merged[-1].role == m.role:
            merged[-1] = ChatMessage(m.role, merged[-1].content + "\n\n" + m.content)
        else:
            merged.append(m)
    return merged


def game_context(state: GameState, agent: AgentType, actor_id: str | None, npc: NPC | None = None) -> str:
    """The per-turn part of the system prompt."""
    if agent is AgentType.NPC and npc is not None:
        return _npc_context(state, npc, actor_id)
    loc = state.location()
    parts = [f"# The game now: {escape(state.title)}",
             f"## Location: {escape(loc.name)} ({loc.id})\n{escape(describe_location(state, loc))}"]
    parts.append("## The party\n" + _party(state))
    quests = [quest_line(q) for q in state.quests.values() if q.status == "active"]
    offered = [f"{q.title} (id {q.id}, from {state.npcs[q.giver].name if q.giver in state.npcs else 'anyone'})"
               for q in state.quests.values() if q.status == "offered"]
    if quests or offered:
        text = "\n".join(f"- {escape(q)}" for q in quests) or "- none active"
        if offered:
            text += "\nOffered, not yet accepted: " + escape("; ".join(offered))
        parts.append("## Quests\n" + text)
    for shop in shops_here(state):
        parts.append(_shop_section(state, shop, "## Shop here: "))
    encounters = [_encounter_line(state, e) for e in state.encounters.values() if e.location == loc.id]
    if encounters and not state.combat.active:
        parts.append("## Encounters that can happen here (GM only)\n" + escape("\n".join(encounters)))
    if state.combat.active:
        attacks = [f"{p.name}: {'; '.join(a.line() for a in stat_block_attacks(state, p)) or p.attacks}"
                   for p in state.combat.order if p.faction != "player" and (p.attacks or stat_block_attacks(state, p))]
        parts.append("## Combat\n" + escape(tracker(state)) + ("\nAttacks (by stat block: name one as weapon, the "
                     "engine rolls it): " + escape(" | ".join(attacks)) if attacks else ""))
    parts.extend(_canon(state, gm=True))
    parts.extend(_shared_tail(state, actor_id, GM, include_summary=True))
    return "\n\n".join(parts)


def _canon(state: GameState, gm: bool) -> list[str]:
    """Admins' canon notes that bear on the scene: true, whatever was remembered or improvised before."""
    notes = bearing(state, gm)
    if not notes:
        return []
    return ["## Canon (set by the table's admins: true, and it wins over anything remembered or improvised)\n"
            + "\n".join(f"- {escape(n.text)}" + (" (GM only: never tell it as such)" if n.gm_only else "") for n in notes)]


def _encounter_line(state: GameState, e: Encounter) -> str:
    """An encounter as the GM plans it: its foes with their numbers, and what winning it gives."""
    foes = [f"{t.count}× {t.name} (AC {t.ac}, HP {t.hp}{', CR ' + t.cr if t.cr else ''}"
            f"{': ' + '; '.join(a.line() for a in t.actions) if t.actions else ''})" for t in e.enemies]
    foes += [f"{n.name} ({n.id}: AC {n.ac}, HP {n.hp}/{n.max_hp})" for n in (state.npcs.get(i) for i in e.npcs)
             if n is not None and n.location == e.location and n.hp > 0]
    loot = "" if e.loot is None or e.looted else f" Loot when won: {loot_line(state, e.loot)}."
    return f"{e.id}: {e.name}: {', '.join(foes)}.{loot}"


def loot_line(state: GameState, loot: Loot) -> str:
    things = [f"{i.quantity} × {state.items[i.item].name if i.item in state.items else i.item}" for i in loot.items]
    return ", ".join(([loot.coins.describe()] if loot.coins.total_cp() else []) + things) or "nothing"


def _shop_section(state: GameState, shop: Shop, title: str) -> str:
    """A shop's stock and prices as the seller sees them: sales go through buy and sell, at these prices."""
    why = closed_because(state, shop)
    rules = ("Sell with buy (the engine charges the listed price"
             + (f"; you may agree to at most {shop.haggle}% off with its price argument" if shop.haggle else "; no haggling")
             + ")" + (", buy back with sell" if shop.buys else "") + "; never modify_inventory for these goods.")
    lines = [f"- {line}" for line in stock_lines(state, shop, gm=True)] or ["- nothing in stock"]
    return (f"{title}{escape(shop_heading(state, shop))}, id {shop.id}\n" + escape("\n".join(lines)) + "\n"
            + (f"Closed now: {escape(why)}." if why else rules))


def situation(state: GameState, actor_id: str | None, carried: bool = True) -> str:
    """The little a decision needs: where, who acts with what (`carried`: and what they carry), who else is here,
    the fight."""
    loc = state.location()
    lines = [f"Place: {loc.name} ({loc.id}). Ways on: " + ", ".join(e.to for e in loc.exits if loc.exit_open(e)) + "."]
    actor = state.characters.get(actor_id or "")
    if actor is not None:
        items = ", ".join(f"{i.name} ×{i.quantity}" if i.quantity > 1 else i.name for i in actor.inventory) or "nothing"
        lines.append(f"{actor.name} ({actor.char_class}), HP {actor.hp}/{actor.max_hp}"
                     + (f", carries {items}; purse {actor.currency.describe()}." if carried else "."))
    here = [f"{n.name} ({n.id})" for n in state.present_npcs()]
    if here:
        lines.append("Here: " + ", ".join(here) + ".")
    quests = [f"{q.title} ({q.id}, {q.status})" for q in state.quests.values() if q.status in ("offered", "active")]
    if quests:
        lines.append("Quests: " + "; ".join(quests) + ".")
    if state.combat.active and state.combat.order:
        now = state.combat.order[state.combat.turn_index % len(state.combat.order)]
        foes = [f"{p.name} HP {'{}/{}'.format(*participant_hp(state, p))}" for p in state.combat.order
                if p.faction == "enemy"]
        lines.append(f"In combat, {now.name}'s turn. Enemies: " + ", ".join(foes) + ".")
    return escape("\n".join(lines))


def brief_context(state: GameState, agent: AgentType, actor_id: str | None, npc: NPC | None = None) -> str:
    """The game in a few lines, for a small model (a long context only makes it copy from it): the place in two
    sentences, then who acts with what, who is here, the quests and the fight. An NPC's own context is short."""
    if agent is AgentType.NPC and npc is not None:
        return _npc_context(state, npc, actor_id)
    loc = state.location()
    opening = " ".join(re.split(r"(?<=[.!?])\s+", loc.description.strip())[:2])
    return f"## Now\n{escape(opening)}\n{situation(state, actor_id, carried=False)}"


def _party(state: GameState) -> str:
    # A working copy that still shares its characters holds them as saved, unchanged since (turn.py checks this in
    # the tests): their sheets are the ones made for them last time. A copy already changed this turn: made afresh.
    def sheet(ch: Character) -> str:
        return _BRIEF_SHEETS.get(ch, lambda: character_sheet(ch, brief=True, leveling=state.leveling)) \
            if state.shares else character_sheet(ch, brief=True, leveling=state.leveling)

    lines = [f"- {sheet(state.characters[pid])}" for pid in state.party.player_ids if pid in state.characters]
    for npc_id in state.party.npc_ids:
        n = state.npcs[npc_id]
        lines.append(f"- {n.name} ({n.id}), NPC companion: HP {n.hp}/{n.max_hp}, AC {n.ac}")
    return escape("\n".join(lines)) or "- nobody yet"


class _ByObject:
    """Values made from objects that do not change while they live (a saved game's characters), held as long as
    the object lives; by identity, since models are not hashable."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[weakref.ref[Any], str]] = {}

    def get(self, obj: Any, make: Callable[[], str]) -> str:
        key = id(obj)
        found = self._made.get(key)
        if found is not None and found[0]() is obj:
            return found[1]
        value = make()
        self._made[key] = (weakref.ref(obj, lambda _, key=key: self._made.pop(key, None)), value)
        return value


_BRIEF_SHEETS = _ByObject()


def _shared_tail(state: GameState, actor_id: str | None, viewer: Viewer, include_summary: bool) -> list[str]:
    parts = []
    # Permanent notes are the viewer's own: the GM's (other NPCs' personas and secrets) never reach an NPC.
    notes = recall(state, viewer)
    if notes:
        parts.append("## Learned earlier (kept for the whole game)\n" + "\n".join(f"- {escape(v)}" for v in notes))
    if include_summary and state.summary:
        parts.append("## The story so far\n" + escape(state.summary))
    actor = state.characters.get(actor_id or "")
    if actor is not None:
        parts.append(f"## Acting now\n{escape(actor.name)} ({actor.char_class}) is the player character taking this turn.")
    return parts


def _npc_context(state: GameState, npc: NPC, actor_id: str | None) -> str:
    viewer = Viewer(AgentType.NPC, npc.id, actor_id)
    loc = here(state, viewer)
    others = [n.name for n in state.present_npcs() if n.id != npc.id]
    party = [c.name for pid, c in state.characters.items() if pid in state.party.player_ids]
    companions = [state.npcs[i].name for i in state.party.npc_ids if i != npc.id]
    parts = [f"# Where you are: {escape(loc.name)}\n{escape(loc.description)}",
             "## Who is here\nAdventurers: " + escape(", ".join(party) or "none")
             + ("; their companions: " + escape(", ".join(companions)) if companions else "")
             + ("\nOthers: " + escape(", ".join(others)) if others else ""),
             f"## You\nAttitude toward the party: {npc.attitude}. HP {npc.hp}/{npc.max_hp}."
             + (" You travel with the party." if npc.id in state.party.npc_ids else "")]
    secrets = [s for lo in state.locations.values() for s in lo.secrets if s.id in npc.knows_secrets]
    if secrets:
        parts.append("## Secrets you know (reveal with discover_secret only if you choose to tell)\n"
                     + "\n".join(f"- {s.id}: {escape(s.text)}" + (" (the party already knows)" if s.discovered else "") for s in secrets))
    for shop in [s for s in shops_here(state) if s.keeper == npc.id]:
        parts.append(_shop_section(state, shop, "## Your shop: "))
    mine = [q for q in state.quests.values() if q.giver == npc.id]
    if mine:
        parts.append("## Your quests\n" + "\n".join(f"- {escape(quest_line(q))}" for q in mine))
    parts.extend(_canon(state, gm=False))
    parts.extend(_shared_tail(state, actor_id, viewer, include_summary=False))
    return "\n\n".join(parts)
