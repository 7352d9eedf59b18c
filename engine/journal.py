"""The journal: what the party has met, seen and learned, for players to read (`/journal`), and the canon notes
admins write, which the GM reads when they bear on the scene and which win over anything remembered.

Entries come from the game's own state as the party knows it (places it has been, people it has met, secrets it
has found, quests it took on, the running summary), never from GM-only data: an NPC is its name, role and
whereabouts, not its persona (which may hold what it hides)."""

from __future__ import annotations

from typing import Iterable

from .basics import Item
from .entities import Note
from .errors import BadInput
from .state import GameState
from .tools.quests import player_quest_line

SECTIONS = ("npcs", "places", "items", "quests", "secrets", "notes", "story")
MAX_NOTES = 100


def observe(state: GameState) -> None:
    """Note where the party is and who is there, as met. Only a state with something new is changed (a working
    copy is made deep first), so most turns copy nothing."""
    here = state.current_location
    present = [n.id for n in state.present_npcs()]
    if here in state.visited and all(n in state.met for n in present):
        return
    state.own()
    if here not in state.visited:
        state.visited.append(here)
    state.met.extend(n for n in present if n not in state.met)


def _first_sentence(text: str, limit: int = 160) -> str:
    sentence = " ".join(text.split()).split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def entries(state: GameState, section: str) -> list[str]:
    """One section's lines, as players may read them."""
    if section == "npcs":
        lines = []
        for nid in state.met:
            npc = state.npcs.get(nid)
            if npc is None:
                continue
            where = ("travels with you" if nid in state.party.npc_ids else
                     f"last known at {state.locations[npc.location].name}" if npc.location in state.locations else
                     "whereabouts unknown")
            fallen = ", fallen" if npc.hp == 0 else ""
            lines.append(f"{npc.name}{' — ' + npc.role if npc.role else ''} ({where}{fallen})")
        return lines
    if section == "places":
        return [f"{state.locations[lid].name}: {_first_sentence(state.locations[lid].description)}."
                + (" (you are here)" if lid == state.current_location else "")
                for lid in state.visited if lid in state.locations]
    if section == "items":
        carried: list[Item] = [i for pid in state.party.player_ids if pid in state.characters
                               for i in state.characters[pid].inventory]
        notable = {i.name.casefold(): i for i in state.items.values()}
        lines = [f"{notable[i.name.casefold()].name}"
                 + (f": {_first_sentence(notable[i.name.casefold()].description)}" if notable[i.name.casefold()].description else "")
                 + " (carried)" for i in carried if i.name.casefold() in notable]
        for lid in state.visited:
            for iid in state.locations[lid].items if lid in state.locations else []:
                if iid in state.items:
                    lines.append(f"{state.items[iid].name} (lying at {state.locations[lid].name})")
        return list(dict.fromkeys(lines))
    if section == "quests":
        return [player_quest_line(q) for q in state.quests.values() if q.status != "offered"]
    if section == "secrets":
        return [f"{loc.name}: {s.text}" for loc in state.locations.values() for s in loc.secrets if s.discovered]
    if section == "notes":
        return [f"{n.text} ({n.id}{', by ' + n.by if n.by else ''})" for n in state.notes if not n.gm_only]
    if section == "story":
        return [state.summary] if state.summary else []
    raise BadInput(f"The journal has no section '{section}': {', '.join(SECTIONS)}.")


TITLES = {"npcs": "People met", "places": "Places seen", "items": "Notable things", "quests": "Quests",
          "secrets": "Secrets found", "notes": "Canon notes", "story": "The story so far"}


def journal(state: GameState, section: str | None = None) -> str:
    """The journal as Markdown (one section, or all that have something)."""
    chosen: Iterable[str] = [section] if section else SECTIONS
    parts = []
    for name in chosen:
        lines = entries(state, name)
        if lines or section:
            body = "\n".join(f"- {line}" for line in lines) if name != "story" else "\n".join(lines)
            parts.append(f"**{TITLES[name]}**\n{body or 'Nothing yet.'}")
    return "\n\n".join(parts) or "The journal is empty: nothing has happened yet."


def bearing(state: GameState, gm: bool) -> list[Note]:
    """The notes the scene calls for: every note about nothing in particular, and those about the place or a
    person here; GM-only ones only for the GM."""
    scene = {state.current_location, *(n.id for n in state.present_npcs())}
    return [n for n in state.notes if (gm or not n.gm_only) and (n.about is None or n.about in scene)]


def add_note(state: GameState, text: str, by: str, gm_only: bool = False, about: str | None = None) -> Note:
    if len(state.notes) >= MAX_NOTES:
        raise BadInput(f"A game holds {MAX_NOTES} notes at most: remove some first.")
    if about is not None:
        found = state.find_npc(about) or state.find_location(about)
        if found is None:
            raise BadInput(f"'{about}' is neither a person nor a place in this game.")
        about = found.id
    text = " ".join(text.split())
    if not text or len(text) > 500:
        raise BadInput("A note is 1 to 500 characters.")
    number = max((int(n.id[1:]) for n in state.notes), default=0) + 1
    note = Note(id=f"n{number}", text=text, gm_only=gm_only, about=about, by=by[:80])
    state.notes.append(note)
    return note


def _note(state: GameState, note_id: str) -> Note:
    found = next((n for n in state.notes if n.id == note_id.strip().lower()), None)
    if found is None:
        raise BadInput(f"There is no note '{note_id}' (notes: {', '.join(n.id for n in state.notes) or 'none'}).")
    return found


def edit_note(state: GameState, note_id: str, text: str) -> Note:
    note = _note(state, note_id)
    text = " ".join(text.split())
    if not text or len(text) > 500:
        raise BadInput("A note is 1 to 500 characters.")
    note.text = text
    return note


def remove_note(state: GameState, note_id: str) -> Note:
    note = _note(state, note_id)
    state.notes.remove(note)
    return note


def notes_list(state: GameState) -> list[str]:
    """Every note, as admins see them (GM-only ones marked)."""
    return [f"{n.id}: {n.text}" + (" [GM only]" if n.gm_only else "")
            + (f" (about {n.about})" if n.about else "") + (f" — {n.by}" if n.by else "") for n in state.notes]
