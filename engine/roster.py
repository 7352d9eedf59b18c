"""Who plays: characters made, imported and looked up, and who travels in the party (a part of Engine)."""

from __future__ import annotations

from typing import Any, Callable

from .characters import ability_scores, import_character, make_character
from .core import Core
from .errors import BadInput
from .basics import AgentType
from .state import Character, Message
from .store import Session


class Roster(Core):
    """The table's characters and its party, on Engine."""

    async def create_character(self, channel_id: str, owner_id: str, name: str, char_class: str,
                               level: int | None = None, scores: str | None = None, species: str | None = None,
                               background: str | None = None) -> Character:
        return (await self.create_character_scored(channel_id, owner_id, name, char_class, level, scores, species,
                                                   background))[0]

    async def create_character_scored(self, channel_id: str, owner_id: str, name: str, char_class: str,
                                      level: int | None = None, scores: str | None = None,
                                      species: str | None = None, background: str | None = None,
                                      expertise: list[str] | None = None, style: str | None = None
                                      ) -> tuple[Character, str]:
        """A new character and how its ability scores were made. `level`: the game's starting level, or below it.
        `scores`: standard, roll (4d6 dropping the lowest, with the engine's dice) or six numbers (STR DEX CON INT
        WIS CHA: the standard array in any order, or a point buy), before the species' increases. `species` defaults
        to human, `background` to the class's usual one. Chosen or rolled scores are kept in the game's history, so
        a roll can be checked."""
        start = (await self.state(channel_id)).starting_level
        level = start if level is None else level
        _within_start(level, start)
        make_character(owner_id, name, char_class, level, None, species, background, expertise=expertise,
                       style=style)  # refusals before any roll
        abilities, made = ability_scores(scores, char_class, self.deps.rng)
        character = await self._join(channel_id, owner_id,
                                     lambda: make_character(owner_id, name, char_class, level, abilities, species,
                                                            background, expertise=expertise, style=style),
                                     None if abilities is None else f"'s ability scores come from {made}.")
        return character, made

    async def import_character(self, channel_id: str, owner_id: str, data: Any) -> Character:
        """A character from a file's JSON (docs/character-format.md), joining the game as /char create would."""
        return await self._join(channel_id, owner_id, lambda: import_character(owner_id, data))

    async def _join(self, channel_id: str, owner_id: str, make: Callable[[], Character],
                    said: str | None = None) -> Character:
        """Add a character to the game; `said`, after its name, goes into the history in the same write."""
        character = make()  # checked before the game is read: a bad file changes nothing

        def change(session: Session, lines: list[Message]) -> Character:
            state, name = session.state, character.name
            if owner_id in state.characters:
                raise BadInput(f"You already play {state.characters[owner_id].name} in this game.")
            if state.find_character(name) is not None or state.find_npc(name) is not None:
                raise BadInput(f"Someone called {name} is already in this game; choose another name.")
            if state.combat.active:
                raise BadInput("A fight is under way; make your character when it is over.")
            _within_start(character.level, state.starting_level)  # an imported sheet's too
            state.characters[owner_id] = character
            state.party.player_ids.append(owner_id)
            if said is not None:
                lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=name,
                                     agent=AgentType.PLAYER, text=name + said))
            return character

        return await self._write(channel_id, change)

    async def character(self, channel_id: str, owner_id: str) -> Character:
        return (await self.state(channel_id)).own_character(owner_id)

    async def set_party_membership(self, channel_id: str, owner_id: str, member: bool) -> Character:
        """A player's character joins or leaves the party; only members' plain messages are actions."""
        def change(session: Session, _: list[Message]) -> Character:
            state = session.state
            character = state.own_character(owner_id)
            ids = state.party.player_ids
            if member == (owner_id in ids):
                raise BadInput(f"{character.name} is {'already' if member else 'not'} in the party.")
            if state.combat.active:
                raise BadInput(f"{character.name} cannot {'join' if member else 'leave'} the party in the middle of a fight.")
            if member:
                ids.append(owner_id)
            else:
                ids.remove(owner_id)
            return character

        return await self._write(channel_id, change)


def _within_start(level: int, start: int) -> None:
    """Levels come from play: a character begins at the game's starting level at most (its server's admins set it)."""
    if level > start:
        raise BadInput(f"Characters begin at level {start} at most in this game; levels after that are earned in "
                       f"play. (A server admin may raise the starting level with /gm-admin config.)")
