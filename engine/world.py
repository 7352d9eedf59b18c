"""What play added to the world, for admins: listed, edited, removed, and the whole world exported as an adventure
file that `lorekeeper adventure check` accepts (a played campaign becomes a reusable adventure). A part of Engine;
the pure functions work on any GameState (the CLI uses them on the database's games)."""

from __future__ import annotations

from typing import Any, Literal

import yaml
from pydantic import ValidationError

from .core import Core
from .errors import BadInput
from .state import GameState, Message
from .store import Session
from .tools.making import world_data

Kind = Literal["npc", "location", "item"]
KINDS: tuple[Kind, ...] = ("npc", "location", "item")
EDITABLE = {"npc": ("name", "role", "persona", "attitude", "location"), "location": ("name", "description"),
            "item": ("name", "description", "price")}


def _held(state: GameState, kind: str) -> dict[str, Any]:
    if kind not in KINDS:
        raise BadInput(f"'{kind}' is not a kind of addition: npc, location or item.")
    return {"npc": state.npcs, "location": state.locations, "item": state.items}[kind]


def additions(state: GameState) -> list[str]:
    """What play made, a line each, oldest first (empty: nothing yet)."""
    lines = []
    for kind in KINDS:
        for e in sorted((e for e in _held(state, kind).values() if e.made is not None), key=lambda e: e.made):
            detail = {"npc": lambda n: f"{n.role + ', ' if n.role else ''}at {n.location}",
                      "location": lambda loc: "ways to " + ", ".join(x.to for x in loc.exits),
                      "item": lambda i: f"{i.price.amount} {i.price.coin}" if i.price else "no price"}[kind](e)
            lines.append(f"{kind} {e.id}: {e.name} ({detail}; made on turn {e.made})")
    return lines


def _find(state: GameState, kind: str, ref: str) -> Any:
    held = _held(state, kind)
    key = ref.strip().lower()
    found = held.get(key) or next((e for e in held.values() if e.name.casefold() == key), None)
    if found is None:
        raise BadInput(f"There is no {kind} '{ref}' in this game.")
    if found.made is None:
        raise BadInput(f"{found.name} was written in the adventure, not made in play: edit the adventure's file instead.")
    return found


def remove(state: GameState, kind: str, ref: str) -> str:
    """Take an addition out of the world, with what pointed to it; refused while the story still stands on it."""
    found = _find(state, kind, ref)
    if kind == "location":  # first every reason to refuse, then the change
        if state.current_location == found.id:
            raise BadInput(f"The party is at {found.name}: move it elsewhere first.")
        people = [n.name for n in state.npcs.values() if n.location == found.id]
        if people:
            raise BadInput(f"{', '.join(people)} {'is' if len(people) == 1 else 'are'} at {found.name}: move or "
                           f"remove them first.")
        standing = [f"the shop {s.name}" for s in state.shops.values() if s.location == found.id]
        standing += [f"the encounter {e.name}" for e in state.encounters.values() if e.location == found.id]
        if standing:
            raise BadInput(f"{standing[0][0].upper() + standing[0][1:]} is at {found.name}: it cannot go.")
        for loc in state.locations.values():
            loc.exits = [e for e in loc.exits if e.to != found.id]
        del state.locations[found.id]
    elif kind == "npc":
        if found.id in state.party.npc_ids:
            raise BadInput(f"{found.name} travels with the party: they leave it first.")
        if state.combat.active and any(p.id == found.id for p in state.combat.order):
            raise BadInput(f"{found.name} is in the fight: end it first.")
        alone = next((s for s in state.shops.values() if s.keeper == found.id and s.location is None), None)
        if alone is not None:
            raise BadInput(f"{found.name} keeps the shop {alone.name}, which has no place of its own.")
        for quest in state.quests.values():
            if quest.giver == found.id:
                quest.giver = None
        for enc in state.encounters.values():
            enc.npcs = [n for n in enc.npcs if n != found.id]
        for shop in state.shops.values():
            if shop.keeper == found.id:
                shop.keeper = None
        del state.npcs[found.id]
    else:
        for loc in state.locations.values():
            loc.items = [i for i in loc.items if i != found.id]
        for shop in state.shops.values():
            shop.stock = [s for s in shop.stock if s.item != found.id]
        for enc in state.encounters.values():
            if enc.loot is not None:
                enc.loot.items = [i for i in enc.loot.items if i.item != found.id]
        del state.items[found.id]  # carried ones stay in their owners' packs: what is carried is theirs
    return f"Removed the {kind} {found.name} ({found.id})."


def edit(state: GameState, kind: str, ref: str, field: str, value: str) -> str:
    """Correct one field of an addition (its name, role, description, …), checked as the tools check it."""
    found = _find(state, kind, ref)
    if field not in EDITABLE[kind]:
        raise BadInput(f"A {kind}'s {field} is not edited here; these are: {', '.join(EDITABLE[kind])}.")
    value = " ".join(value.split()) if field in ("name", "role") else value.strip()
    if field == "name":
        clash = next((e for e in _held(state, kind).values() if e is not found and e.name.casefold() == value.casefold()), None)
        if clash is not None:
            raise BadInput(f"There is already a {kind} called {clash.name}.")
    if field == "location" and value not in state.locations:
        raise BadInput(f"There is no location '{value}' (locations: {', '.join(state.locations)}).")
    try:
        setattr(found, field, value if field != "price" else (value or None))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInput(f"That {field} will not do: {first['msg']}.") from None
    return f"The {kind} {found.name} ({found.id}) now has {field}: {value or 'none'}."


def export_adventure(state: GameState, adventure_id: str, title: str, intro: str) -> str:
    """The world as played, as a fresh adventure file: where the party stands is where it starts, and what play
    used up is new again (secrets hidden, foes and loot back, quests offered, people whole)."""
    from .content import Adventure

    data = world_data(state)
    for loc in data["locations"]:
        loc.pop("made", None)
        for secret in loc["secrets"]:
            secret["discovered"] = secret["looted"] = False
    for npc in data["npcs"]:
        npc.pop("made", None)
        npc["hp"], npc["conditions"], npc["card"] = npc["max_hp"], [], None
    for item in data["items"]:
        item.pop("made", None)
    for quest in data["quests"]:
        quest["status"] = "offered"
        for objective in quest["objectives"]:
            objective["done"] = False
    for encounter in data["encounters"]:
        encounter["looted"] = False
    raw = {"id": adventure_id, "title": title, "world": state.world, "intro": intro, **data}
    try:
        adventure = Adventure.model_validate(raw)
    except ValidationError as exc:
        raise BadInput(f"The world cannot be written as an adventure: {exc.errors()[0]['msg']}.") from None
    problems = adventure.check_references()
    if problems:
        raise BadInput("The world cannot be written as an adventure: " + "; ".join(problems[:3]) + ".")
    dumped = adventure.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    dumped = {"id": adventure.id, "title": adventure.title, **dumped}  # what the checker needs, first
    return yaml.safe_dump(dumped, sort_keys=False, allow_unicode=True, width=110)


class WorldAdmin(Core):
    """Admins' hands on what play added, on Engine."""

    async def world_additions(self, channel_id: str) -> list[str]:
        return additions((await self.session(channel_id)).state)

    async def world_change(self, channel_id: str, admin_name: str, action: Literal["remove", "edit"], kind: str,
                           ref: str, field: str = "", value: str = "") -> str:
        """Remove or edit an addition; the GM reads it in the story (a correction, not a secret)."""
        from .basics import AgentType
        from .turn import NARRATOR_ID

        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            said = remove(state, kind, ref) if action == "remove" else edit(state, kind, ref, field, value)
            lines.append(Message(channel_id=channel_id, author_id=NARRATOR_ID, author_name="Narrator",
                                 agent=AgentType.NARRATIVE, text=f"(World corrected by {admin_name}: {said})",
                                 witnesses=[]))
            return said

        return await self._write(channel_id, change)

    async def world_export(self, channel_id: str, adventure_id: str | None = None, title: str | None = None) -> str:
        from .content import find_adventure
        from .errors import GameError

        state = (await self.session(channel_id)).state
        try:
            intro = find_adventure(self.deps.corpus_dir, state.adventure_id).intro
        except GameError:
            intro = state.summary or f"The story of {state.title} goes on."
        return export_adventure(state, adventure_id or f"{state.adventure_id}-as-played"[:60],
                                title or f"{state.title} (as played)", intro)

    async def journal(self, channel_id: str, section: str | None = None) -> str:
        from .journal import journal

        return journal((await self.session(channel_id)).state, section)

    async def notes(self, channel_id: str) -> list[str]:
        from .journal import notes_list

        return notes_list((await self.session(channel_id)).state)

    async def note(self, channel_id: str, admin_name: str, action: Literal["add", "edit", "remove"], text: str = "",
                   note_id: str = "", gm_only: bool = False, about: str | None = None) -> str:
        """An admin's canon note added, corrected or removed; the GM reads notes that bear on the scene."""
        from . import journal

        def change(session: Session, _: list[Message]) -> str:
            state = session.state
            if action == "add":
                note = journal.add_note(state, text, admin_name, gm_only, about)
                return f"Note {note.id} added{' (GM only)' if note.gm_only else ''}: {note.text}"
            if action == "edit":
                note = journal.edit_note(state, note_id, text)
                return f"Note {note.id} now reads: {note.text}"
            note = journal.remove_note(state, note_id)
            return f"Note {note.id} removed."

        return await self._write(channel_id, change)

    async def player_note(self, channel_id: str, guild_id: str | None, user_id: str, text: str) -> str:
        """A player's canon note, when the server lets players add them (/gm-admin config player_notes:on); it is
        public, signed with their character's name, and an admin may correct or remove it like any other."""
        from . import journal
        from .errors import BadInput

        if guild_id is not None and not (await self.server_settings(guild_id)).player_notes:
            raise BadInput("On this server only admins add canon notes (an admin can let players: "
                           "/gm-admin config player_notes:on).")

        def change(session: Session, _: list[Message]) -> str:
            ch = session.state.characters.get(user_id)
            if ch is None:
                raise BadInput("Only a player with a character in this game adds notes to its journal: /char create.")
            note = journal.add_note(session.state, text, ch.name, False, None)
            return f"Note {note.id} added to the journal by {ch.name}: {note.text}"

        return await self._write(channel_id, change)

    async def world_map(self, channel_id: str, picture: bool = True) -> tuple[str, bytes | None]:
        """The party's map as text, and as a PNG when `picture` (drawn in a worker thread: ~0.2 s of CPU)."""
        import asyncio

        from .mapping import png_map, text_map

        state = (await self.session(channel_id)).state
        return text_map(state), (await asyncio.to_thread(png_map, state)) if picture else None

    async def lookup(self, channel_id: str, kind: str, name: str) -> str:
        """A rules entry (spell, item, condition) or a creature of this channel's game (monster), as Markdown."""
        from .errors import NoGameRunning
        from .lookup import lookup

        try:
            state = (await self.session(channel_id)).state
        except NoGameRunning:
            state = None
        return lookup(kind, name, state)

    async def lookup_names(self, channel_id: str, kind: str) -> list[str]:
        from .errors import GameError
        from .lookup import names

        try:
            state = (await self.session(channel_id)).state
        except GameError:
            state = None
        try:
            return names(kind, state)
        except GameError:
            return []
