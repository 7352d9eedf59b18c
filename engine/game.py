"""The engine: games per channel, turns that commit whole or not at all, and the table's commands."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable, Mapping

import structlog

from .characters import make_character
from .config import EngineConfig
from .content import find_adventure
from .context import game_context, history_messages, speaker_label, speaker_line, visible_history
from .dice import Roll, roll as roll_dice
from .errors import BadInput, ModelError, NoCharacter, NoGameRunning, ProviderConfigError, ToolError, TurnFailed
from .loop import AgentRun, Limits, ModelCall, run_agent
from .models import ChatMessage, ModelClient, ModelRequest
from .orchestrator import Route, route
from .prompts import system_prompt
from .state import NPC, AgentType, Character, GameState, Message, utcnow
from .store import Session, Store, TurnRecord, call_rows
from .suggestions import Suggestion, format_suggestions, suggest
from .tags import escape
from .tools import TOOLS, ToolCall, ToolContext, tools_for
from .tools.character import RestArgs, ShortRestArgs, long_rest, short_rest

log = structlog.get_logger(__name__)

APOLOGY = ("*The Game Master's quill snaps mid-sentence, and the world holds its breath.* "
           "Nothing happened — your action was kept; try it again in a moment.")
NARRATOR_ID = "narrator"


@dataclass
class Deps:
    """Everything the engine uses, built once by the front end and passed in."""

    store: Store
    models: Mapping[AgentType, ModelClient]
    config: EngineConfig
    corpus_dir: Path
    rng: random.Random = field(default_factory=random.Random)  # new sessions' seeds and table rolls
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


@dataclass
class TurnResult:
    reply: str
    agent: AgentType
    npc: NPC | None
    calls: list[ToolCall]
    model_calls: list[ModelCall]
    turn_id: int
    state: GameState
    request: ModelRequest

    def mechanics(self) -> list[str]:
        """What players may see of the turn's tools: dice, and the first sentence of each change (no GM notes)."""
        lines = []
        for call in self.calls:
            spec = TOOLS.get(call.name)
            if not call.ok or spec is None:
                continue
            if call.name == "roll":
                lines.append(f"🎲 {call.observation}")
            elif spec.changes_state:
                first = call.observation.split(". ", 1)[0].rstrip(".")
                lines.append(f"• {first}.")
        return lines


def turn_seed(session_seed: int, turn: int) -> int:
    """Each turn's dice come from the session's seed and the turn's number, so a turn can be replayed."""
    return random.Random(f"{session_seed}:{turn}").getrandbits(63)


class Engine:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._queued: defaultdict[str, int] = defaultdict(int)  # holders and waiters per channel
        self.last_request: dict[str, ModelRequest] = {}  # per channel, for admins debugging a prompt
        self.last_suggestions: dict[str, list[Suggestion]] = {}
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

    async def start_game(self, channel_id: str, guild_id: str | None = None, adventure: str | None = None) -> tuple[GameState, str]:
        """A new game from an adventure in the corpus; returns the state and the opening narration."""
        chosen = find_adventure(self.deps.corpus_dir, adventure)
        state = chosen.new_game(seed=self.deps.rng.getrandbits(31))
        async with self.channel_lock(channel_id):
            session = await self.deps.store.create_session(channel_id, guild_id, state)
            intro = Message(channel_id=channel_id, author_id=NARRATOR_ID, author_name="Narrator",
                            agent=AgentType.NARRATIVE, text=chosen.intro)
            await self.deps.store.save_state(session.id, state, [intro])
        log.info("game_started", channel_id=channel_id, adventure=chosen.id)
        return state, chosen.intro

    async def end_game(self, channel_id: str) -> None:
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            await self.deps.store.end_session(session.id)
        log.info("game_ended", channel_id=channel_id)

    async def create_character(self, channel_id: str, owner_id: str, name: str, char_class: str, level: int = 1) -> Character:
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            state = session.state
            if owner_id in state.characters:
                raise BadInput(f"You already play {state.characters[owner_id].name} in this game.")
            if state.find_character(name) is not None or state.find_npc(name) is not None:
                raise BadInput(f"Someone called {name} is already in this game; choose another name.")
            if state.combat.active:
                raise BadInput("A fight is under way; make your character when it is over.")
            character = make_character(owner_id, name, char_class, level)
            state.characters[owner_id] = character
            state.party.player_ids.append(owner_id)
            await self.deps.store.save_state(session.id, state)
        return character

    async def character(self, channel_id: str, owner_id: str) -> Character:
        state = await self.state(channel_id)
        if owner_id not in state.characters:
            raise NoCharacter()
        return state.characters[owner_id]

    async def set_party_membership(self, channel_id: str, owner_id: str, member: bool) -> Character:
        """A player's character joins or leaves the party; only members' plain messages are actions."""
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
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
            await self.deps.store.save_state(session.id, state)
            return character

    async def recap(self, channel_id: str, last: int = 6) -> str:
        """The story so far: the running summary, then the latest exchanges."""
        session = await self.session(channel_id)
        recent = await self.deps.store.messages(session.id, after_id=0, limit=last)
        lines = [session.state.summary] if session.state.summary else []
        lines += [f"**{speaker_label(m, session.state)}:** {m.text}" for m in recent]
        return "\n\n".join(lines) or "Nothing has happened yet."

    async def debug(self, channel_id: str) -> bool:
        return await self.deps.store.debug(channel_id)

    async def set_debug(self, channel_id: str, on: bool) -> None:
        await self.deps.store.set_debug(channel_id, on)

    async def telemetry(self, channel_id: str) -> dict:
        return await self.deps.store.telemetry((await self.session(channel_id)).id)

    def roll(self, expression: str) -> Roll:
        """A roll at the table, outside any turn."""
        return roll_dice(expression, self.deps.rng)

    async def rest(self, channel_id: str, owner_id: str, author_name: str, kind: str) -> str:
        """A short or long rest for the caller's character, without asking the model."""
        if kind not in ("short", "long"):
            raise BadInput("Rest is either short or long.")
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            state = session.state
            if owner_id not in state.characters:
                raise NoCharacter()
            work = state.model_copy(deep=True)
            ctx = ToolContext(work, random.Random(turn_seed(state.seed, state.turn + 1)), AgentType.NARRATIVE, owner_id)
            name = work.characters[owner_id].name
            try:
                if kind == "short":
                    text = short_rest(ctx, ShortRestArgs(character=name))
                else:
                    text = long_rest(ctx, RestArgs(character=name))
            except ToolError as exc:
                raise BadInput(f"{name} cannot rest now: {exc}.") from None
            work.turn = state.turn + 1
            lines = [Message(channel_id=channel_id, author_id=owner_id, author_name=author_name, agent=AgentType.PLAYER,
                             text=f"{name} takes a {kind} rest.", witnesses=list(work.party.npc_ids)),
                     Message(channel_id=channel_id, author_id=NARRATOR_ID, author_name="Narrator", agent=AgentType.NARRATIVE,
                             text=text, witnesses=list(work.party.npc_ids))]
            await self.deps.store.save_state(session.id, work, lines)
            return text

    async def check_action(self, channel_id: str, author_id: str, text: str) -> Route:
        """Everything that would refuse this action before any model call: cheap, so a front end can ask first."""
        return self._check(await self.session(channel_id), author_id, text)

    def _check(self, session: Session, author_id: str, text: str) -> Route:
        text = text.strip()
        limit = self.deps.config.turn.max_action_chars
        if not text:
            raise BadInput("Say what you do — the message was empty.")
        if len(text) > limit:
            raise BadInput(f"That is {len(text)} characters; an action can be at most {limit}. Split it up.")
        if author_id not in session.state.characters:
            raise NoCharacter()
        if author_id not in session.state.party.player_ids:
            name = session.state.characters[author_id].name
            if session.state.combat.active:
                raise BadInput(f"{name} is not with the party, and cannot join in the middle of a fight.")
            raise BadInput(f"{name} is not with the party: /party join first.")
        return route(session.state, text)

    async def take_turn(self, channel_id: str, author_id: str, author_name: str, text: str) -> TurnResult:
        """One player message, answered by the agent it is routed to; the state changes only if the turn completes."""
        async with self.channel_lock(channel_id):
            session = await self.session(channel_id)
            chosen = self._check(session, author_id, text)
            result = await self._run_turn(session, chosen, author_id, author_name, text.strip())
        # The reply goes out now; a due summary (a model call) waits its turn on the channel lock.
        if await self.deps.store.count_messages(session.id, result.state.summary_upto) > self.deps.config.turn.summarize_after:
            task = asyncio.create_task(self._summarize_when_free(channel_id))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        return result

    async def drain(self) -> None:
        """Wait for background work (summaries) to finish: before shutting down, and in tests."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def _summarize_when_free(self, channel_id: str) -> None:
        try:
            async with self.channel_lock(channel_id):
                session = await self.deps.store.load_session(channel_id)
                if session is not None:
                    await self._maybe_summarize(session.id, session.state)
        except Exception:  # nobody awaits this task: its failure is logged here, and the next turn tries again
            log.exception("summary_task_failed", channel_id=channel_id)

    async def _run_turn(self, session: Session, chosen: Route, author_id: str, author_name: str, text: str) -> TurnResult:
        state, cfg = session.state, self.deps.config
        seq = state.turn + 1
        seed = turn_seed(state.seed, seq)
        npc_id = chosen.npc.id if chosen.npc else None
        work = state.model_copy(deep=True)
        ctx = ToolContext(work, random.Random(seed), chosen.agent, author_id, npc_id)
        history = await self.deps.store.messages(session.id, after_id=0 if chosen.agent is AgentType.NPC else state.summary_upto,
                                                 limit=cfg.turn.history_messages * (4 if chosen.agent is AgentType.NPC else 1))
        seen = visible_history(history, chosen.agent, npc_id)[-cfg.turn.history_messages:]
        player = Message(channel_id=session.channel_id, author_id=author_id, author_name=author_name,
                         agent=AgentType.PLAYER, npc_id=npc_id, text=text, witnesses=list(state.party.npc_ids))
        hints = suggest(state, text, chosen.agent, chosen.npc) if cfg.turn.suggestions else []
        self.last_suggestions[session.channel_id] = hints
        request = self._request(state, chosen, author_id, seen, player, hints)
        self.last_request[session.channel_id] = request
        model = self.deps.models[chosen.agent]
        started = utcnow()
        record = TurnRecord(seq=seq, agent=chosen.agent, npc_id=npc_id, status="ok", seed=seed, started_at=started)
        run = AgentRun()
        try:
            limits = Limits(cfg.turn.tool_quota, cfg.turn.max_rounds, generation_timeout=cfg.turn.generation_timeout)
            await run_agent(model, request, ctx, limits, self.deps.sleep, run)
            reply = run.reply
            if not reply:
                raise ModelError("the model's reply was empty once tags and thinking were removed")
        except Exception as exc:
            record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
            record.model_calls = [asdict(c) for c in run.model_calls]
            if isinstance(exc, ModelError):
                log.warning("turn_failed", channel_id=session.channel_id, error=record.error)
            else:
                log.exception("turn_crashed", channel_id=session.channel_id)
            await self.deps.store.record_failed_turn(session.id, player, record)
            # A configuration mistake will not fix itself: say what it is, so the admin can.
            message = f"{APOLOGY}\n({exc})" if isinstance(exc, ProviderConfigError) else APOLOGY
            raise TurnFailed(message, reason=record.error) from exc
        work.turn = seq
        record.model_calls = [asdict(c) for c in run.model_calls]
        speaker = chosen.npc
        answer = Message(channel_id=session.channel_id, author_id=f"npc:{speaker.id}" if speaker else NARRATOR_ID,
                         author_name=speaker.name if speaker else "Narrator", agent=chosen.agent, npc_id=npc_id,
                         text=reply, witnesses=list(work.party.npc_ids))
        turn_id = await self.deps.store.commit_turn(session.id, work, [player, answer], record, call_rows(run.calls))
        log.info("turn_done", channel_id=session.channel_id, agent=chosen.agent.value, npc=npc_id, tools=len(run.calls))
        return TurnResult(reply, chosen.agent, work.npcs.get(npc_id) if npc_id else None, run.calls, run.model_calls,
                          turn_id, work, request)

    def _request(self, state: GameState, chosen: Route, actor_id: str, history: list[Message], player: Message,
                 hints: list[Suggestion]) -> ModelRequest:
        settings = self.deps.config.agent(chosen.agent)
        npc_id = chosen.npc.id if chosen.npc else None
        messages = history_messages([*history, player], chosen.agent, npc_id, state)
        stop = ["<observation>"] + [f"</{t.name}>" for t in tools_for(chosen.agent)]
        return ModelRequest(agent=chosen.agent, model=settings.model, system=system_prompt(chosen.agent, chosen.npc),
                            context="\n\n".join(filter(None, [game_context(state, chosen.agent, actor_id, chosen.npc),
                                                                format_suggestions(hints)])), messages=messages,
                            stop=stop, temperature=settings.temperature, max_tokens=settings.max_tokens)

    async def _maybe_summarize(self, session_id: int, state: GameState) -> None:
        """Fold old messages into the running summary once enough pile up; a failure here costs nothing."""
        cfg = self.deps.config.turn
        if await self.deps.store.count_messages(session_id, state.summary_upto) <= cfg.summarize_after:
            return
        pending = await self.deps.store.messages(session_id, after_id=state.summary_upto, limit=10_000)
        fold = pending[: len(pending) - cfg.summary_keep]
        if not fold:
            return
        transcript = "\n".join(speaker_line(m, state) for m in fold)
        settings = self.deps.config.agent(AgentType.SUMMARIZER)
        request = ModelRequest(agent=AgentType.SUMMARIZER, model=settings.model, system=system_prompt(AgentType.SUMMARIZER),
                               context="", temperature=settings.temperature, max_tokens=settings.max_tokens,
                               messages=[ChatMessage("user", f"Earlier summary:\n{escape(state.summary) or '(none)'}\n\n"
                                                             f"New messages:\n{transcript}")])
        model = self.deps.models[AgentType.SUMMARIZER]
        ctx = ToolContext(state.model_copy(deep=True), random.Random(0), AgentType.SUMMARIZER)
        try:
            limits = Limits(tool_quota=1, max_rounds=1, generation_timeout=self.deps.config.turn.generation_timeout)
            run = await run_agent(model, request, ctx, limits, self.deps.sleep)
        except Exception as exc:  # the turn is already committed; the summary can wait until after the next one
            log.warning("summary_failed", session_id=session_id, error=str(exc))
            return
        if not run.reply:
            return
        state.summary, state.summary_upto = run.reply, fold[-1].id
        await self.deps.store.save_state(session_id, state)
        log.info("summary_updated", session_id=session_id, upto=state.summary_upto)

