"""What players do themselves, without asking the model: rests, spells, deals at a shop, checks, attacks, levels
and their own rolls (a part of Engine, kept in its own module). Each enters the game's history, so the GM
reacts to it; a refusal changes nothing."""

from __future__ import annotations

import random

from pydantic import ValidationError

from . import hostility, rules
from . import shops as trading
from .core import Core
from .deps import Deps
from .dice import Roll, roll as roll_dice
from .errors import BadInput, ToolError
from .rules import effects, levels, life
from .rules.levels import LevelUp
from .shops import shops_here
from .basics import AgentType
from .entities import Shop
from .state import Character, GameState, Message
from .store import Session
from .tools import ToolContext
from .hostility import Target
from .limits import Commands
from .rules.spells import known_spell
from .tools.attacks import weapon_attack
from .tools.class_features import use as use_feature
from .tools.character import RestArgs, ShortRestArgs, long_rest, short_rest
from .tools.hitpoints import resolve_hp_target
from .tools import progress
from .tools.spells import cast
from .turn import NARRATOR_ID, turn_seed


def in_party(state: GameState, ch: Character) -> None:
    """What a character does in the party's scene (rests, deals, spells, attacks, checks, levels), it does with the
    party: one who left it is refused, as their turns are."""
    if ch.owner_id not in state.party.player_ids:
        raise BadInput(f"{ch.name} is not with the party: /party join first.")


def on_turn(state: GameState, ch: Character) -> None:
    """In a fight, a player's own attack or spell waits for their character's turn (the agents keep the order
    themselves, with next_turn); outside one, anyone acts when they like."""
    now = state.combat.current()
    if now is None or (now.faction == "player" and now.id == ch.owner_id):
        return
    if all(p.id != ch.owner_id for p in state.combat.order if p.faction == "player"):
        raise BadInput(f"{ch.name} is not in this fight; it is {now.name}'s turn.")
    raise BadInput(f"It is {now.name}'s turn, not {ch.name}'s: wait for yours (the tracker marks whose turn it is).")


class PlayerActions(Core):
    """The table's direct commands (/rest, /cast, /buy, /check, /attack, /levelup, /roll) on Engine."""

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.commands = Commands()

    def check_command(self, user_id: str, guild_id: str | None) -> None:
        """Count a command that calls no model (/roll, /sheet, /attack, /buy …), or refuse it (RateLimited, with
        when to go on) past the per-user limit. In Discord servers only: the terminal has one player, at their own
        keyboard. A front end asks before it does anything, so a refusal costs nothing."""
        if guild_id is not None:
            self.commands.admit(self.deps.config.limits, user_id)

    def _player_context(self, state: GameState, owner_id: str) -> ToolContext:
        """For what a player does directly (/rest, /cast): the next turn's dice, acting as the narrator would."""
        return ToolContext(state, random.Random(turn_seed(state.seed, state.turn + 1)), AgentType.NARRATIVE, owner_id,
                           deps=self.deps)

    async def rest(self, channel_id: str, owner_id: str, author_name: str, kind: str) -> str:
        """A short or long rest for the caller's character, without asking the model."""
        if kind not in ("short", "long"):
            raise BadInput("Rest is either short or long.")

        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            in_party(state, state.own_character(owner_id))
            ctx = self._player_context(state, owner_id)
            name = state.characters[owner_id].name
            try:
                text = (short_rest(ctx, ShortRestArgs(character=name)) if kind == "short"
                        else long_rest(ctx, RestArgs(character=name)))
            except ToolError as exc:  # nothing is written: the half-changed state is dropped
                raise BadInput(f"{name} cannot rest now: {exc}.") from None
            state.turn += 1
            lines += [Message(channel_id=channel_id, author_id=owner_id, author_name=author_name, agent=AgentType.PLAYER,
                             text=f"{name} takes a {kind} rest.", witnesses=list(state.party.npc_ids)),
                     Message(channel_id=channel_id, author_id=NARRATOR_ID, author_name="Narrator",
                             agent=AgentType.NARRATIVE, text=text, witnesses=list(state.party.npc_ids))]
            return text

        return await self._write(channel_id, change)

    async def cast(self, channel_id: str, owner_id: str, author_name: str, spell: str, target: str | None = None,
                   level: int | None = None, mode: rules.Mode = None, *, confirmed: bool = False) -> str:
        """A spell the player's character casts (/cast), by the same engine code as the agents' cast_spell: the slot
        spent, the rolls made, damage or healing applied. It enters the game's history, so the GM reacts to it; a
        refusal changes nothing. A harmful spell at someone who is no enemy needs `confirmed` (ConfirmAttack
        asks otherwise); then the GM is told, and the people struck turn hostile (engine/hostility.py)."""
        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            character = state.own_character(owner_id)
            in_party(state, character)
            if not _reaction_spell(character, spell):  # Shield is cast on another's turn
                on_turn(state, character)
            ctx = self._player_context(state, owner_id)
            struck = _strikes(ctx, target, spell)
            text = cast(ctx, character, spell, target, level, mode, confirmed=confirmed)
            text += "".join(f" {line}" for line in effects.settle(state))  # a spell hung on a broken concentration
            state.turn += 1
            lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=author_name,
                                 agent=AgentType.PLAYER, text=text, witnesses=list(state.party.npc_ids)))
            self._provoked(state, character, struck, lines)
            return text

        return await self._write(channel_id, change)

    async def use_feature(self, channel_id: str, owner_id: str, author_name: str, feature: str,
                          target: str | None = None, amount: int | None = None, option: str | None = None,
                          slot: int | None = None) -> str:
        """A class feature the player's character spends (/feature: Rage, Second Wind, Lay on Hands, …), by the same
        engine code as the agents' use_feature; in a fight, on their turn. It enters the game's history, so the GM
        reacts to it; a refusal changes nothing."""
        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            character = state.own_character(owner_id)
            in_party(state, character)
            on_turn(state, character)
            ctx = self._player_context(state, owner_id)
            text = use_feature(ctx, character, feature, target, amount, option, slot, confirmed=False)
            text += "".join(f" {line}" for line in effects.settle(state))
            state.turn += 1
            lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=author_name,
                                 agent=AgentType.PLAYER, text=text, witnesses=list(state.party.npc_ids)))
            return text

        return await self._write(channel_id, change)

    # -- shops ------------------------------------------------------------------------------------------------------

    async def shops_here(self, channel_id: str) -> tuple[GameState, list[Shop]]:
        """The game and the shops where the party is (open or not: trade says why it is refused)."""
        state = await self.state(channel_id)
        return state, shops_here(state)

    async def trade(self, channel_id: str, owner_id: str, author_name: str, item: str, quantity: int = 1, *,
                    selling: bool = False, shop: str | None = None) -> str:
        """A player buys from (or sells to) the shop here at its listed prices, without asking the model; the deal
        enters the game's history, so the GM knows of it. A refusal changes nothing."""
        if not 1 <= quantity <= trading.MAX_QUANTITY:
            raise BadInput(f"Buy or sell 1 to {trading.MAX_QUANTITY} at a time.")

        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            character = state.own_character(owner_id)
            in_party(state, character)
            try:
                where = trading.shop_for(state, shop, item, selling=selling)
                deal = trading.sell if selling else trading.buy
                text = deal(state, character, where, item, quantity)
            except ToolError as exc:  # nothing is written: the half-changed state is dropped
                said = str(exc)
                raise BadInput(said[:1].upper() + said[1:] + ".") from None
            lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=author_name,
                                 agent=AgentType.PLAYER, text=text, witnesses=list(state.party.npc_ids)))
            return text

        return await self._write(channel_id, change)

    def roll(self, expression: str) -> Roll:
        """A roll at the table, outside any turn."""
        return roll_dice(expression, self.deps.rng)

    async def player_check(self, channel_id: str, owner_id: str, author_name: str, what: str,
                           mode: rules.Mode = None, *, save: bool = False) -> tuple[str, rules.Check]:
        """A check or saving throw players roll themselves (/check, /save), by their sheet; it enters the game's
        history, so the GM reacts to it. Returns the character's name and the result."""
        session = await self.session(channel_id)
        character = session.state.own_character(owner_id)
        in_party(session.state, character)
        if any(e.single for e in character.effects):
            # A roll that spends something (Bardic Inspiration, Guidance) changes the game: it is written with it.
            def change(session: Session, lines: list[Message]) -> tuple[str, rules.Check]:
                ch = session.state.own_character(owner_id)
                rolled = rules.check(ch, what, self.deps.rng, mode, save=save)
                lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=author_name,
                                     agent=AgentType.PLAYER, text=_roll_line(ch.name, rolled),
                                     witnesses=list(session.state.party.npc_ids)))
                return ch.name, rolled

            return await self._write(channel_id, change)
        result = rules.check(character, what, self.deps.rng, mode, save=save)
        await self.record_roll(channel_id, owner_id, author_name, result.roll, _article(result.label))
        return character.name, result

    async def player_attack(self, channel_id: str, owner_id: str, author_name: str, weapon: str,
                            target: str | None = None, mode: rules.Mode = None, *, confirmed: bool = False,
                            sneak: bool = False, smite: int | None = None, offhand: bool = False,
                            reaction: bool = False) -> str:
        """An attack players make themselves (/attack) with a weapon from their sheet, its damage applied to the
        target; it enters the game's history so the GM reacts. Refused (nothing changed) with a sentence why. A
        target who is no enemy in a fight needs `confirmed` (ConfirmAttack asks otherwise); then the GM is told,
        and the person struck turns hostile (engine/hostility.py)."""
        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            character = state.own_character(owner_id)
            in_party(state, character)
            if not reaction:  # an opportunity attack comes on another's turn
                on_turn(state, character)
            ctx = ToolContext(state, self.deps.rng, AgentType.COMBAT, owner_id, deps=self.deps)
            struck = _strikes(ctx, target or None, None)
            try:
                text = weapon_attack(ctx, character, weapon, target or None, mode, confirmed=confirmed, sneak=sneak,
                                     smite=smite, offhand=offhand, reaction=reaction)
            except ToolError as exc:  # nothing is written: the half-changed state is dropped
                raise BadInput(f"{character.name} cannot attack: {str(exc).rstrip('.')}.") from None
            text += "".join(f" {line}" for line in effects.settle(state))  # a struck caster's concentration broke
            lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=author_name,
                                 agent=AgentType.PLAYER, text=text, witnesses=list(state.party.npc_ids)))
            self._provoked(state, character, struck, lines)
            return str(text)

        return await self._write(channel_id, change)

    def _provoked(self, state: GameState, attacker: Character, struck: list[Target], lines: list[Message]) -> None:
        """After a confirmed strike at someone who was no enemy: they turn hostile, and the GM reads so in the story."""
        note = hostility.provoke(state, attacker, struck)
        if note is not None:
            lines.append(Message(channel_id=lines[0].channel_id, author_id=NARRATOR_ID, author_name="Narrator",
                                 agent=AgentType.NARRATIVE, text=note, witnesses=list(state.party.npc_ids)))

    async def level_up(self, channel_id: str, owner_id: str, author_name: str, roll: bool = False,
                       improve: str | None = None) -> tuple[Character, LevelUp]:
        """The caller's character gains a level (hit points by the average, or rolled with the engine's dice);
        it enters the game's history."""
        def change(session: Session, lines: list[Message]) -> tuple[Character, LevelUp]:
            state = session.state
            character = state.own_character(owner_id)
            in_party(state, character)
            if state.combat.active:
                raise BadInput(f"{character.name} can level up when the fight is over.")
            gained = levels.level_up(character, self.deps.rng, roll, state.leveling, improve)
            lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=author_name,
                                 agent=AgentType.PLAYER, text=gained.describe(), witnesses=list(state.party.npc_ids)))
            return character, gained

        return await self._write(channel_id, change)

    async def death_save(self, channel_id: str, owner_id: str, author_name: str) -> str:
        """A dying player's own death saving throw (/deathsave), on their turn in a fight; it enters the story."""
        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            ch = state.own_character(owner_id)
            on_turn(state, ch)
            text = life.death_save(ch, self.deps.rng)
            state.turn += 1
            lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=author_name,
                                 agent=AgentType.PLAYER, text=text, witnesses=list(state.party.npc_ids)))
            return text

        return await self._write(channel_id, change)

    async def award(self, channel_id: str, admin_name: str, *, xp: int = 0, milestone: bool = False,
                    to: list[str] | None = None, reason: str = "") -> str:
        """An admin awards XP (or, in a game that levels by milestone, a milestone) as the GM's tools do: to the
        characters named, or split among the party; it enters the story, so the GM knows of it."""
        def change(session: Session, lines: list[Message]) -> str:
            state = session.state
            ctx = self._player_context(state, "")
            try:
                if milestone:
                    told = progress.grant_milestone(ctx, progress.MilestoneArgs(to=to or [], reason=reason))
                else:
                    told = progress.award_xp(ctx, progress.AwardXpArgs(xp=xp, to=to or [], reason=reason))
            except ToolError as exc:
                said = str(exc)
                raise BadInput(said[:1].upper() + said[1:] + ".") from None
            except ValidationError as exc:
                raise BadInput(f"XP is a whole number from 1 to {progress.MAX_AWARD:,}; up to 8 characters may be "
                               f"named ({exc.error_count()} problem{'s' if exc.error_count() > 1 else ''}).") from None
            lines.append(Message(channel_id=channel_id, author_id=NARRATOR_ID, author_name="Narrator",
                                 agent=AgentType.NARRATIVE, text=f"{told.public} (Awarded by {admin_name}.)",
                                 witnesses=list(state.party.npc_ids)))
            return told.public

        return await self._write(channel_id, change)

    async def record_roll(self, channel_id: str, owner_id: str, author_name: str, rolled: Roll,
                          reason: str | None = None) -> str | None:
        """Put a player's own roll into the game's history, under their character's name, so the GM sees it.

        Returns that name; None when there is no game here or the player has no character (nothing is logged)."""
        session = await self.deps.store.load_session(channel_id)
        character = session.state.characters.get(owner_id) if session is not None else None
        if session is None or character is None:
            return None
        why = " ".join((reason or "").split())[:80]
        text = f"{character.name} rolls {rolled.describe()}" + (f" for {why}" if why else "") + "."
        line = Message(channel_id=channel_id, author_id=owner_id, author_name=author_name, agent=AgentType.PLAYER,
                       text=text, witnesses=list(session.state.party.npc_ids))
        await self.deps.store.add_messages(session.id, [line])
        return character.name


def _article(label: str) -> str:
    """"a Stealth check", "an Intelligence saving throw"."""
    return f"{'an' if label[0] in 'AEIOU' else 'a'} {label}"


def _roll_line(name: str, result: rules.Check) -> str:
    """A player's own check in the story, as record_roll writes one."""
    return f"{name} rolls {result.roll.describe()} for {_article(result.label)}."


def _reaction_spell(ch: Character, spell: str) -> bool:
    """Whether the character's spell of that name is cast as a reaction (Shield); an unknown name is not."""
    try:
        return "reaction" in known_spell(ch, spell).casting_time
    except BadInput:
        return False


def _strikes(ctx: ToolContext, target: str | None, spell: str | None) -> list[Target]:
    """Whom a player's attack (or, with `spell`, their spell: only a harmful one strikes) would strike, for what it
    sets off once done. A name that finds no one, or a spell not theirs, strikes no one: the command refuses it."""
    names = [target] if target else []
    if spell is not None:
        try:
            if not known_spell(ctx.state.characters[ctx.actor_id or ""], spell).harmful:
                return []
        except (BadInput, KeyError):
            return []
        names = [n.strip() for n in (target or "").split(",") if n.strip()]
    struck: list[Target] = []
    for name in names:
        try:
            struck.append(resolve_hp_target(ctx, name, reach=True))
        except ToolError:
            continue
    return struck
