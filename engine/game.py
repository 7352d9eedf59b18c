"""The engine: games per channel and the table's commands; one player's turn is played by `turn.play`."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, TypeVar

import structlog

from . import fair, jsonio, limits, server_settings, summary, turn
from .actions import PlayerActions
from .characters import ability_scores, import_character, make_character
from .config import EngineConfig
from .content import find_adventure
from .context import speaker_label
from .errors import BadInput, GameAlreadyRunning, NoCharacter, NoGameRunning, StaleSession
from .lore.index import LoreIndex
from .models import ModelClient, ModelRequest
from .orchestrator import Route
from .server_settings import ServerSettings
from .state import AgentType, Character, GameState, Message
from .store import LastTurn, Session, Store
from .suggestions import Suggestion
from .turn import APOLOGY, NARRATOR_ID, Turn, TurnResult, turn_seed

__all__ = ["APOLOGY", "NARRATOR_ID", "Deps", "Engine", "TurnResult", "turn_seed"]

log = structlog.get_logger(__name__)

WRITES = 3  # times an admin write is tried when another process keeps changing the game under it
T = TypeVar("T")


MAX_UNDO = 20


def _same_players(now: GameState, before_json: str, verb: str) -> None:
    """Refuse to put back a state from before a character joined the game or a player joined or left the party:
    those write no log line, and going back would quietly undo them along with the turns."""
    before = GameState.model_validate_json(before_json)
    joined = [c.name for owner, c in now.characters.items() if owner not in before.characters]
    moved = [now.characters[owner].name for owner in set(now.party.player_ids) ^ set(before.party.player_ids)
             if owner in now.characters and owner in before.characters]
    if joined:
        raise BadInput(f"{' and '.join(sorted(joined))} joined the game after that, so it can no longer be {verb}: "
                       f"going back would take {'them' if len(joined) > 1 else 'that character'} out of the game.")
    if moved:
        raise BadInput(f"{' and '.join(sorted(moved))} joined or left the party after that, so it can no longer be "
                       f"{verb} (going back would undo that too).")


@dataclass(frozen=True)
class Undone:
    turns: int
    messages: int  # log lines now marked undone
    state: GameState  # the state the game is back at


@dataclass
class Deps:
    """Everything the engine uses, built once by the front end (bot/runtime.py) and passed in."""

    store: Store
    models: Mapping[AgentType, ModelClient]
    config: EngineConfig
    corpus_dir: Path
    lore: LoreIndex | None = None  # the lore index, when there is one (`lorekeeper lore ingest`)
    rng: random.Random = field(default_factory=random.Random)  # new sessions' seeds and table rolls
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class Engine(PlayerActions):
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._queued: defaultdict[str, int] = defaultdict(int)  # holders and waiters per channel
        self.last_request: dict[str, ModelRequest] = {}  # per channel, for admins debugging a prompt
        self.last_suggestions: dict[str, list[Suggestion]] = {}
        self.summary_backoff: dict[str, summary.Backoff] = {}
        self._summarizing: dict[str, asyncio.Task[None]] = {}  # at most one background summary per channel
        self._running: dict[str, asyncio.Task[None]] = {}  # other background work, one per key
        self._background: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def channel_lock(self, channel_id: str) -> AsyncIterator[None]:
        """Turns in one channel run one at a time, in arrival order; channels run in parallel."""
        self._queued[channel_id] += 1
        try:
            async with self._locks[channel_id]:
                yield
        finally:
            self._queued[channel_id] -= 1

    def busy(self, channel_id: str) -> bool:
        """Whether work holds or awaits this channel: a free asyncio.Lock may still have a waiter about to wake."""
        return self._queued[channel_id] > 0

    async def session(self, channel_id: str) -> Session:
        found = await self.deps.store.load_session(channel_id)
        if found is None:
            raise NoGameRunning()
        return found

    async def state(self, channel_id: str) -> GameState:
        return (await self.session(channel_id)).state

    async def _write(self, channel_id: str, change: Callable[[Session, list[Message]], T]) -> T:
        """Apply `change` to the channel's saved state (it may add log lines) and write both back, unless someone
        wrote first: then the change is made again on what they wrote. A change that raises writes nothing."""
        for attempt in range(1, WRITES + 1):
            async with self.channel_lock(channel_id):
                session = await self.session(channel_id)
                session.state = session.state.clone()  # the loaded state is the store's cached one: change a copy
                lines: list[Message] = []
                result = change(session, lines)
                try:
                    await self.deps.store.save_state(session.id, session.state, lines, version=session.version)
                    return result
                except StaleSession:
                    if attempt == WRITES:
                        raise
                    log.info("write_replayed", channel_id=channel_id, attempt=attempt)
        raise AssertionError("unreachable")

    # -- games ----------------------------------------------------------------------------------------------------

    async def check_start(self, channel_id: str | None, adventure: str | None = None) -> None:
        """Everything that would refuse /game start, before a front end shows anything or makes a thread
        (channel_id None: the game will get a channel of its own, so only the adventure is checked)."""
        find_adventure(self.deps.corpus_dir, adventure)
        if channel_id is not None and await self.deps.store.load_session(channel_id) is not None:
            raise GameAlreadyRunning()

    async def start_game(self, channel_id: str, guild_id: str | None = None, adventure: str | None = None,
                         started_by: str | None = None) -> tuple[GameState, str]:
        """A new game from an adventure in the corpus; returns the state and the opening narration."""
        chosen = find_adventure(self.deps.corpus_dir, adventure)
        state = chosen.new_game(seed=self.deps.rng.getrandbits(31))
        state.started_by = started_by
        async with self.channel_lock(channel_id):
            session = await self.deps.store.create_session(channel_id, guild_id, state)
            intro = Message(channel_id=channel_id, author_id=NARRATOR_ID, author_name="Narrator",
                            agent=AgentType.NARRATIVE, text=chosen.intro)
            await self.deps.store.save_state(session.id, state, [intro], version=session.version)
        log.info("game_started", channel_id=channel_id, adventure=chosen.id)
        return state, chosen.intro

    async def end_game(self, channel_id: str) -> None:
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            await self.deps.store.end_session(session.id)
        self.summary_backoff.pop(channel_id, None)
        log.info("game_ended", channel_id=channel_id)

    async def recover_interrupted(self, where: Callable[[str, str | None], bool] = lambda channel_id, guild_id: True
                                  ) -> list[Message]:
        """Player messages (in the channels `where(channel_id, guild_id)` accepts) whose turn a crashed or killed process never answered;
        each is marked interrupted and returned once, for the front end to tell the table."""
        return await self.deps.store.recover_interrupted(where)

    # -- characters and the party ---------------------------------------------------------------------------------

    async def create_character(self, channel_id: str, owner_id: str, name: str, char_class: str, level: int = 1,
                               scores: str | None = None, species: str | None = None,
                               background: str | None = None) -> Character:
        return (await self.create_character_scored(channel_id, owner_id, name, char_class, level, scores, species,
                                                   background))[0]

    async def create_character_scored(self, channel_id: str, owner_id: str, name: str, char_class: str,
                                      level: int = 1, scores: str | None = None, species: str | None = None,
                                      background: str | None = None) -> tuple[Character, str]:
        """A new character and how its ability scores were made. `scores`: standard, roll (4d6 dropping the
        lowest, with the engine's dice) or six numbers (STR DEX CON INT WIS CHA: the standard array in any order,
        or a point buy), before the species' increases. `species` defaults to human, `background` to the class's
        usual one. Chosen or rolled scores are kept in the game's history, so a roll can be checked."""
        make_character(owner_id, name, char_class, level, None, species, background)  # refusals before any roll
        abilities, made = ability_scores(scores, char_class, self.deps.rng)
        character = await self._join(channel_id, owner_id,
                                     lambda: make_character(owner_id, name, char_class, level, abilities, species,
                                                            background),
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
            state.characters[owner_id] = character
            state.party.player_ids.append(owner_id)
            if said is not None:
                lines.append(Message(channel_id=channel_id, author_id=owner_id, author_name=name,
                                     agent=AgentType.PLAYER, text=name + said))
            return character

        return await self._write(channel_id, change)

    async def character(self, channel_id: str, owner_id: str) -> Character:
        state = await self.state(channel_id)
        if owner_id not in state.characters:
            raise NoCharacter()
        return state.characters[owner_id]

    async def set_party_membership(self, channel_id: str, owner_id: str, member: bool) -> Character:
        """A player's character joins or leaves the party; only members' plain messages are actions."""
        def change(session: Session, _: list[Message]) -> Character:
            state = session.state
            character = state.characters.get(owner_id)
            if character is None:
                raise NoCharacter()
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

    # -- reading the game -----------------------------------------------------------------------------------------

    async def recap(self, channel_id: str, last: int = 6) -> str:
        """The story so far: the running summary, then the latest exchanges."""
        session = await self.session(channel_id)
        recent = await self.deps.store.messages(session.id, after_id=0, limit=last)
        lines = [session.state.summary] if session.state.summary else []
        lines += [f"**{speaker_label(m, session.state)}:** {m.text}" for m in recent]
        return "\n\n".join(lines) or "Nothing has happened yet."

    async def debug(self, channel_id: str) -> bool:
        """Whether debug mode is on here: the channel's switch, or else the config's default."""
        chosen = await self.deps.store.debug(channel_id)
        return self.deps.config.turn.debug if chosen is None else chosen

    async def set_debug(self, channel_id: str, on: bool) -> None:
        await self.deps.store.set_debug(channel_id, on)

    async def show_sources(self, channel_id: str, guild_id: str | None = None) -> bool:
        """Whether replies here get a "Sources" line naming the lore they cited: the channel's switch, else its
        server's setting, else the config's default."""
        chosen = await self.deps.store.sources(channel_id)
        if chosen is None and guild_id is not None:
            chosen = (await self.server_settings(guild_id)).sources
        return self.deps.config.lore.sources if chosen is None else chosen

    async def server_settings(self, guild_id: str) -> ServerSettings:
        return server_settings.load(guild_id, await self.deps.store.server_settings(guild_id))

    async def configure_server(self, guild_id: str, **changes: object) -> ServerSettings:
        """Change some of a server's settings (None: unchanged); the whole is checked before it is stored."""
        updated = server_settings.changed(await self.server_settings(guild_id), **changes)
        await self.deps.store.set_server_settings(guild_id, updated.model_dump_json())
        log.info("server_configured", guild_id=guild_id, **{k: v for k, v in changes.items() if v is not None})
        return updated

    async def set_sources(self, channel_id: str, on: bool) -> None:
        await self.deps.store.set_sources(channel_id, on)

    async def last_feedback(self, channel_id: str) -> str | None:
        """The newest turn's debug-mode tool feedback here, as admins read it (None: no turn has any)."""
        from .feedback import describe

        session = await self.session(channel_id)
        turns = [t for t in await self.deps.store.turns(session.id) if t["feedback"] is not None]
        if not turns:
            return None
        last = turns[-1]
        return f"Turn {last['seq']} ({last['agent']}):\n{describe(last['feedback'])}"

    async def analysis(self, channel_id: str) -> str:
        """This channel's turn log as `lorekeeper analyze` prints it."""
        from .analysis import analyze, render

        return render(analyze(await self.deps.store.turns_for_analysis(channel_id), self.deps.config.prices))

    async def telemetry(self, channel_id: str) -> dict:
        return await self.deps.store.telemetry((await self.session(channel_id)).id)

    async def usage(self, guild_id: str) -> limits.Usage:
        """A server's use of the model today (UTC), against its daily budget."""
        day = limits.today()
        tokens, turns = await self.deps.store.usage(guild_id, day)
        return limits.Usage(day, tokens, turns, self.deps.config.limits.guild_daily_tokens)

    # -- turns ----------------------------------------------------------------------------------------------------

    async def check_action(self, channel_id: str, author_id: str, text: str) -> Route:
        """Everything that would refuse this action before any model call: cheap, so a front end can ask first."""
        session = await self.session(channel_id)
        chosen = turn.check(session, author_id, text, self.deps.config.turn.max_action_chars)
        await limits.enforce(self.deps.store, self.deps.config.limits, author_id, session.guild_id)
        return chosen

    async def take_turn(self, channel_id: str, author_id: str, author_name: str, text: str,
                        debug: bool | None = None, show: Callable[[str, str], None] | None = None) -> TurnResult:
        """One player message, answered by the agent it is routed to; the state changes only if the turn completes.

        `debug` switches debug mode for this action alone (an admin's choice; the front end checks who asks).
        `show(speaker, text)` is told the visible reply so far as it streams (it may start over: a retried
        generation, a replayed turn); the committed reply, which the result holds, is the one that counts."""
        async with self.channel_lock(channel_id):
            await fair.step()  # turns begin one per pass of the loop, in the order they came (engine/fair.py)
            playing = Turn(await self.session(channel_id), author_id, author_name, jsonio.well_formed(text.strip()),
                           debug_override=debug, show=show)
            try:
                result = await turn.play(playing, self.deps)
            finally:
                if playing.request is not None:
                    self.last_request[channel_id] = playing.request
                    self.last_suggestions[channel_id] = playing.hints
        # The reply goes out now; a due summary runs beside the next turns, not in front of them.
        if playing.unsummarised > self.deps.config.turn.summarize_after:
            self._summarize_later(channel_id)
        if self.deps.lore is not None:
            self._later(f"memory:{channel_id}", self.remember(playing.session.id, result.state))
        return result

    # -- undo and retry ---------------------------------------------------------------------------------------------

    async def undo(self, channel_id: str, n: int = 1) -> Undone:
        """Revert the channel's last `n` committed turns: the state goes back to what the oldest of them started
        from, byte for byte, and their log lines (and anything after) stay in the log marked undone."""
        if not 1 <= n <= MAX_UNDO:
            raise BadInput(f"Undo takes 1 to {MAX_UNDO} turns.")
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            turns = await self.deps.store.undoable_turns(session.id, n)
            if not turns:
                raise BadInput("There is no turn to undo in this game.")
            if len(turns) < n:
                raise BadInput(f"Only {len(turns)} turn{'s' if len(turns) > 1 else ''} of this game can be undone.")
            if any(t.state_before is None for t in turns):
                raise BadInput("That turn was played before this version of Lorekeeper kept what undo needs; "
                               "it cannot be undone.")
            _same_players(session.state, turns[-1].state_before or "{}", "undone")
            undone = await self.deps.store.undo_turns(session.id, turns, version=session.version)
        self._forget(session.id, [t.id for t in turns])
        log.info("turns_undone", channel_id=channel_id, turns=len(turns), messages=len(undone))
        return Undone(len(turns), len(undone), GameState.model_validate_json(turns[-1].state_before or "{}"))

    async def retry(self, channel_id: str, author_id: str, *, admin: bool = False,
                    show: Callable[[str, str], None] | None = None) -> TurnResult:
        """Play the channel's last turn again: reverted first if it committed (a failed one changed nothing), then
        asked again with the same words for the same player. Only while nothing newer happened, and only by the
        player who made it (or an admin). The dice are the same: the turn's seed comes from the state it started from."""
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            last = await self._retryable(session, author_id, admin)
            if last.committed:
                await self.deps.store.undo_turns(session.id, [last.turn], version=session.version)
            else:
                await self.deps.store.undo_turns_failed(session.id, last.turn)
        if last.committed:
            self._forget(session.id, [last.turn.id])
        return await self.take_turn(channel_id, last.author_id, last.author_name, last.text, show=show)

    async def check_retry(self, channel_id: str, author_id: str, *, admin: bool = False) -> None:
        """What would refuse a retry, before a front end shows anything (refusals can then stay private)."""
        session = await self.session(channel_id)
        await self._retryable(session, author_id, admin)
        await limits.enforce(self.deps.store, self.deps.config.limits, author_id, session.guild_id, rate=False)

    async def _retryable(self, session: Session, author_id: str, admin: bool) -> LastTurn:
        last = await self.deps.store.last_turn(session.id)
        if last is None:
            raise BadInput("There is no turn to retry in this game yet.")
        if last.author_id != author_id and not admin:
            raise BadInput(f"Only {last.author_name} can retry the last turn (it was theirs).")
        if last.newer:
            raise BadInput("Something happened after that turn, so it can no longer be retried.")
        if last.committed and last.turn.state_before is None:
            raise BadInput("That turn was played before this version of Lorekeeper kept what retry needs.")
        if last.committed:
            _same_players(session.state, last.turn.state_before or "{}", "retried")
        return last

    def _forget(self, session_id: int, turn_ids: list[int]) -> None:
        if self.deps.lore is not None:
            memory, game = self.deps.lore.memory, self.deps.store.game_key(session_id)
            self._later(f"forget:{session_id}", asyncio.to_thread(memory.forget, game, turn_ids))

    async def cancelled(self, channel_id: str) -> int:
        """The player stopped a turn of theirs (its task was cancelled): nothing of it was applied; its words stay
        in the log, marked failed, instead of waiting to be reported as interrupted at the next start."""
        return await self.deps.store.cancel_pending(channel_id)

    async def remember(self, session_id: int, state: GameState) -> int:
        """Index this game's committed exchanges that its memory lacks (embedding runs in a thread)."""
        assert self.deps.lore is not None
        memory = self.deps.lore.memory
        game = self.deps.store.game_key(session_id)
        upto = await asyncio.to_thread(memory.indexed_upto, game)
        fresh = await self.deps.store.messages(session_id, after_id=upto, limit=2000, oldest=True)
        return await asyncio.to_thread(memory.sync, game, fresh, state) if fresh else 0

    def _later(self, key: str, work: Awaitable[object]) -> None:
        """Background work, one at a time per key; a failure is logged (what it skipped is done next time)."""
        if key in self._running:
            work.close()  # type: ignore[attr-defined]  # the one running will be followed by the next turn's
            return

        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("background_failed", task=key)

        task = asyncio.create_task(guarded())
        self._running[key] = task
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(lambda _: self._running.pop(key, None))

    def _summarize_later(self, channel_id: str) -> None:
        if channel_id in self._summarizing:
            return  # one summary at a time per channel; the next turn asks again if more is due
        task = asyncio.create_task(self._summarize(channel_id))
        self._summarizing[channel_id] = task
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(lambda _: self._summarizing.pop(channel_id, None))

    async def _summarize(self, channel_id: str) -> None:
        try:
            await summary.summarize(self, channel_id)
        except Exception:  # nobody awaits this task: its failure is logged here, and a later turn tries again
            log.exception("summary_task_failed", channel_id=channel_id)

    async def drain(self) -> None:
        """Wait for background work (summaries) to finish: before shutting down, and in tests."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

