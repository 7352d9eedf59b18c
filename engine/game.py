"""The engine: games per channel and the table's commands; one player's turn is played by `stages.play`.

Engine is put together from parts that share `Core` (the deps, the channel locks, reading and writing a game):
the players' direct commands (actions.py), the characters and the party (roster.py), undo (rewind.py); the games,
turns and background work are here."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Callable

import structlog

from . import fair, jsonio, limits, recall, server_settings, stages, summary, worldgen
from .actions import PlayerActions
from .agents import speaker_label
from .content import Adventure, find_adventure
from .deps import Deps
from .errors import BadInput, GameAlreadyRunning
from .models import ModelRequest
from .orchestrator import Route
from .rewind import Rewind
from .roster import Roster
from .journal import observe
from .world import WorldAdmin
from .server_settings import ServerSettings
from .basics import AgentType
from .state import GameState, Message
from .store import LastTurn, Session
from .suggestions import Suggestion
from .turn import APOLOGY, NARRATOR_ID, Turn, TurnResult, check, turn_seed

__all__ = ["APOLOGY", "NARRATOR_ID", "Deps", "Engine", "TurnResult", "turn_seed"]

log = structlog.get_logger(__name__)


class Engine(PlayerActions, Roster, Rewind, WorldAdmin):
    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.last_request: dict[str, ModelRequest] = {}  # per channel, for admins debugging a prompt
        self.last_suggestions: dict[str, list[Suggestion]] = {}
        self.summary_backoff: dict[str, summary.Backoff] = {}
        self._summarizing: dict[str, asyncio.Task[None]] = {}  # at most one background summary per channel
        self._accepting: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)  # arrival order per channel

    # -- games ----------------------------------------------------------------------------------------------------

    async def check_start(self, channel_id: str | None, adventure: str | None = None) -> None:
        """Everything that would refuse /game start, before a front end shows anything or makes a thread
        (channel_id None: the game will get a channel of its own, so only the adventure is checked)."""
        find_adventure(self.deps.corpus_dir, adventure)
        if channel_id is not None and await self.deps.store.load_session(channel_id) is not None:
            raise GameAlreadyRunning()

    async def make_world(self, premise: str) -> Adventure:
        """A new adventure from a premise, made by the world-builder agent, checked and saved in the corpus
        (engine/worldgen.py); WorldError, with nothing saved, when it cannot be made to hold together."""
        return await worldgen.build(self.deps, premise)

    async def start_game(self, channel_id: str, guild_id: str | None = None, adventure: str | None = None,
                         started_by: str | None = None) -> tuple[GameState, str]:
        """A new game from an adventure in the corpus; returns the state and the opening narration."""
        chosen = find_adventure(self.deps.corpus_dir, adventure)
        state = chosen.new_game(seed=self.deps.rng.getrandbits(31))
        state.started_by = started_by
        rules = (await self.server_settings(guild_id)) if guild_id is not None else server_settings.ServerSettings()
        state.leveling, state.starting_level = rules.rules(self.deps.config.game)
        if rules.starting_level is None:  # an adventure for levels 3-5 begins its characters at 3, unless a server chose
            state.starting_level = max(state.starting_level, chosen.lowest_level)
        observe(state)  # the journal begins where the party does
        async with self.channel_lock(channel_id):
            session = await self.deps.store.create_session(channel_id, guild_id, state)
            intro = Message(channel_id=channel_id, author_id=NARRATOR_ID, author_name="Narrator",
                            agent=AgentType.NARRATIVE, text=chosen.intro)
            await self.deps.store.save_state(session.id, state, [intro], version=session.version)
        log.info("game_started", channel_id=channel_id, adventure=chosen.id)
        return state, chosen.intro

    async def end_game(self, channel_id: str, game: int | None = None) -> None:
        """End the channel's game; with `game` (the id a confirmation was asked for), only if it is still that one."""
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            if game is not None and session.id != game:
                raise BadInput("That game has already ended; this question was about it, not the game here now.")
            await self.deps.store.end_session(session.id)
        self.summary_backoff.pop(channel_id, None)
        log.info("game_ended", channel_id=channel_id)

    async def recover_interrupted(self, where: Callable[[str, str | None], bool] = lambda channel_id, guild_id: True
                                  ) -> list[Message]:
        """Player messages (in the channels `where(channel_id, guild_id)` accepts) whose turn a crashed or killed process never answered;
        each is marked interrupted and returned once, for the front end to tell the table."""
        return await self.deps.store.recover_interrupted(where)

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

    async def set_debug(self, channel_id: str, on: bool, by: str | None = None) -> None:
        """Debug mode here on or off; `by`: the admin who reads its reports (they name undiscovered secrets)."""
        await self.deps.store.set_debug(channel_id, on, by)

    async def debug_reader(self, channel_id: str) -> str | None:
        return await self.deps.store.debug_reader(channel_id)

    async def show_sources(self, channel_id: str, guild_id: str | None = None) -> bool:
        """Whether replies here get a "Sources" line naming the lore they cited: the channel's switch, else its
        server's setting, else the config's default."""
        chosen = await self.deps.store.sources(channel_id)
        if chosen is None and guild_id is not None:
            chosen = (await self.server_settings(guild_id)).sources
        return self.deps.config.lore.sources if chosen is None else chosen

    async def server_settings(self, guild_id: str) -> ServerSettings:
        return server_settings.load(guild_id, await self.deps.store.server_settings(guild_id))

    async def configure_server(self, guild_id: str, channel_id: str | None = None, **changes: object) -> ServerSettings:
        """Change some of a server's settings (None: unchanged); the whole is checked before it is stored. The house
        rules (leveling, starting_level) are for new games, and for the game in `channel_id` if one runs there."""
        updated = server_settings.changed(await self.server_settings(guild_id), **changes)
        await self.deps.store.set_server_settings(guild_id, updated.model_dump_json())
        house = {k: v for k, v in changes.items() if k in ("leveling", "starting_level") and v is not None}
        if house and channel_id is not None and await self.deps.store.load_session(channel_id) is not None:
            def change(session: Session, _: list[Message]) -> None:
                for key, value in house.items():
                    setattr(session.state, key, value)
            await self._write(channel_id, change)
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
        chosen = check(session, author_id, text, self.deps.config.turn.max_action_chars)
        await self.deps.store.enforce_limits(self.deps.config.limits, author_id, session.guild_id)
        return chosen

    async def take_turn(self, channel_id: str, author_id: str, author_name: str, text: str,
                        debug: bool | None = None, show: Callable[[str, str], None] | None = None) -> TurnResult:
        """One player message, answered by the agent it is routed to; the state changes only if the turn completes.

        `debug` switches debug mode for this action alone (an admin's choice; the front end checks who asks).
        `show(speaker, text)` is told the visible reply so far as it streams (it may start over: a retried
        generation, a replayed turn); the committed reply, which the result holds, is the one that counts."""
        return await self.play_turn(await self.accept_turn(channel_id, author_id, author_name, text, debug), show)

    async def accept_turn(self, channel_id: str, author_id: str, author_name: str, text: str,
                          debug: bool | None = None, *, replaces: LastTurn | None = None) -> Turn:
        """A message judged and stored (pending) the moment it arrives, before it waits for the turns ahead of it:
        a crash while it waits is reported at the next start, never lost. Refusals store nothing. Accepted in
        arrival order per channel, so a front end that queues the turns itself keeps that order by queueing each
        as soon as this returns (no await between)."""
        async with self._accepting[channel_id]:
            playing = Turn(await self.session(channel_id), author_id, author_name, jsonio.well_formed(text.strip()),
                           debug_override=debug, replaces=replaces)
            await stages.accept(playing, self.deps)
        return playing

    async def play_turn(self, playing: Turn, show: Callable[[str, str], None] | None = None) -> TurnResult:
        """Play a turn `accept_turn` took, once the turns ahead of it in its channel are done."""
        channel_id = playing.session.channel_id
        playing.show = show
        async with self.channel_lock(channel_id):
            await fair.step()  # turns begin one per pass of the loop, in the order they came (engine/fair.py)
            try:
                result = await stages.play(playing, self.deps)
            finally:
                if playing.request is not None:
                    self.last_request[channel_id] = playing.request
                    self.last_suggestions[channel_id] = playing.hints
        if playing.replaces is not None and playing.replaces.committed:
            self._forget(playing.session.id, [playing.replaces.turn.id])
        # The reply goes out now; a due summary runs beside the next turns, not in front of them.
        if playing.unsummarised > self.deps.config.turn.summarize_after:
            self._summarize_later(channel_id)
        if self.deps.lore is not None:
            self._later(f"memory:{channel_id}", self.remember(playing.session.id, result.state))
        return result

    async def abandon(self, playing: Turn) -> None:
        """A turn accepted but never played (the front end failed before it could): its words kept, marked failed."""
        if playing.player is not None and not playing.settled:
            await stages.abandon(playing, self.deps)

    async def retry(self, channel_id: str, author_id: str, *, admin: bool = False,
                    show: Callable[[str, str], None] | None = None) -> TurnResult:
        """Play the channel's last turn again, with the same words for the same player, from the state it started
        from (so the dice fall the same); the old turn is taken back only when the new one commits, so a retry that
        fails changes nothing. Only while nothing newer happened, and only by the player who made it (or an admin)."""
        last = await self._retryable(await self.session(channel_id), author_id, admin)
        playing = await self.accept_turn(channel_id, last.author_id, last.author_name, last.text, replaces=last)
        return await self.play_turn(playing, show)

    async def cancelled(self, channel_id: str) -> int:
        """The player stopped a turn of theirs (its task was cancelled): nothing of it was applied; its words stay
        in the log, marked failed, instead of waiting to be reported as interrupted at the next start."""
        return await self.deps.store.cancel_pending(channel_id)

    async def remember(self, session_id: int, state: GameState) -> int:
        """The game's new exchanges into this process's memory of it, and vectors made for those without; returns
        how many were embedded (engine/recall.py)."""
        return await recall.remember(self.deps, session_id, state)

    def _summarize_later(self, channel_id: str) -> None:
        if channel_id in self._summarizing:
            return  # one summary at a time per channel; the next turn asks again if more is due
        task = self._track(asyncio.create_task(self._summarize(channel_id)))
        self._summarizing[channel_id] = task
        task.add_done_callback(lambda _: self._summarizing.pop(channel_id, None))

    async def _summarize(self, channel_id: str) -> None:
        try:
            await summary.summarize(self, channel_id, self.summary_backoff.setdefault(channel_id, summary.Backoff()))
        except Exception:  # nobody awaits this task: its failure is logged here, and a later turn tries again
            log.exception("summary_task_failed", channel_id=channel_id)
