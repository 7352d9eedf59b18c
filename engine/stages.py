"""One player's turn as a short list of stages: checks → begin → planner → lore → referee → persona → context →
decide (two-step turns only) → run → verify → citations → commit.

Each stage is a plain async function of the turn's working data (engine/turn.py) and the engine's Deps; a new
stage (a referee, a planner, a verifier) is one function here and one line in STAGES. Whatever fails, the saved
game stays as it was: the player's message, stored the moment the turn began, is kept and marked failed; nothing
else changes. If another process wrote the game while this turn ran, the turn is played again on the new state
(a bounded number of times), never written over it.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import replace
from typing import Awaitable, Callable

import structlog

from . import decide, feedback, grounding, limits
from .basics import AgentType, utcnow
from .context import brief_context, game_context, history_messages, visible_history
from .deps import Deps
from .errors import BadInput, GameError, ModelError, NoGameRunning, ProviderConfigError, StaleSession, TurnFailed
from .loop import AgentRun, Limits, run_agent
from .lore.memory import Memory, recall_lines
from .lore.retrieval import cite, context_block, passages_for, resolved
from .recall import recall, stored
from .instructions import system_prompt
from .models import ChatMessage, ModelRequest
from .state import GameState, Message
from .store import TurnRecord, call_rows
from .suggestions import format_suggestions, suggest
from .tools import ToolContext, tools_for
from .turn import APOLOGY, NARRATOR_ID, RETRY_FAILED, Turn, TurnResult, check, going_back, turn_seed
from .verify import Verification, correction_request
from .verify import verify as verify_reply
from .journal import observe
from .visibility import Viewer, lore_secrets

log = structlog.get_logger(__name__)

PLAYS = 3  # times a turn is played when other processes keep changing the game under it
# Tests set LOREKEEPER_CHECK_SHARED_STATE=1: every turn then checks that the state it was played from (shared with
# the store's cache, and with its working copy until that is made deep) came out of it unchanged.
CHECK_SHARED = os.environ.get("LOREKEEPER_CHECK_SHARED_STATE") == "1"


async def accept(turn: Turn, deps: Deps) -> None:
    """Before the message waits for its channel: everything that refuses it, then its words stored (pending), so
    a crash while it waits behind other turns cannot lose it. A refusal stores nothing."""
    await rewind(turn, deps)
    await checks(turn, deps)
    await _store_player(turn, deps, queued=True)


async def rewind(turn: Turn, deps: Deps) -> None:
    """A retry: refused unless the turn it plays again is still the last thing that happened; it is played from the
    state that turn started from (the same dice), and the old turn is taken back only when this one commits."""
    old = turn.replaces
    if old is None:
        return
    last = await deps.store.last_turn(turn.session.id, besides=turn.player.id if turn.player else None)
    if last is None or last.turn.id != old.turn.id or last.newer:
        raise BadInput("Something happened after that turn, so it can no longer be retried.")
    if old.committed:
        if old.turn.state_before is None:
            raise BadInput("That turn is too old to retry.")
        going_back(turn.session.state, old.turn.state_before, "retried")
        turn.session = replace(turn.session, state=GameState.model_validate_json(old.turn.state_before))


async def checks(turn: Turn, deps: Deps) -> None:
    turn.route = check(turn.session, turn.author_id, turn.text, deps.config.turn.max_action_chars)
    # A turn played again (a replay after a race, a turn that waited for its channel) was admitted once: only the
    # budget is judged again.
    await deps.store.enforce_limits(deps.config.limits, turn.author_id, turn.session.guild_id,
                                    rate=turn.player is None)


def _said(turn: Turn) -> Message:
    """The player's words as the log keeps them: whom they speak to and who hears them, as the game is now."""
    assert turn.route is not None
    return Message(channel_id=turn.session.channel_id, author_id=turn.author_id, author_name=turn.author_name,
                   agent=AgentType.PLAYER, npc_id=turn.route.npc.id if turn.route.npc else None, text=turn.text,
                   witnesses=list(turn.session.state.party.npc_ids))


async def _store_player(turn: Turn, deps: Deps, *, queued: bool = False) -> None:
    # A refusal here (the player's turn rate, judged again under the write) stores nothing, as the checks' do.
    fresh = _said(turn)
    await deps.store.begin_turn(turn.session.id, fresh, limits.rate(deps.config.limits, turn.session.guild_id),
                                queued=queued)
    turn.player = fresh


async def begin(turn: Turn, deps: Deps) -> None:
    """Number the turn, copy the state to work on, and store the player's words (if not yet) before anything can fail."""
    state, chosen = turn.session.state, turn.route
    assert chosen is not None
    turn.seq = state.turn + 1
    turn.seed = turn_seed(state.seed, turn.seq)
    turn.work = state.working_copy()  # made deep by the first tool that changes something
    npc_id = chosen.npc.id if chosen.npc else None
    turn.ctx = ToolContext(turn.work, random.Random(turn.seed), chosen.agent, turn.author_id, npc_id, deps,
                           session_id=turn.session.id)
    if turn.player is None:
        await _store_player(turn, deps)
    else:  # stored earlier, or played again on a newer state: whom it speaks to and who hears it may have changed
        fresh = _said(turn)
        turn.player.npc_id, turn.player.witnesses = fresh.npc_id, fresh.witnesses
        if turn.player.status == "queued":  # its turn has come: to the end of the log, pending
            await deps.store.start_turn(turn.session.id, turn.player)
    turn.record = TurnRecord(seq=turn.seq, agent=chosen.agent, npc_id=npc_id, status="ok", seed=turn.seed,
                             started_at=utcnow())
    turn.grounding_calls, turn.grounding_tools, turn.referee_note, turn.verification = [], [], "", None
    turn.debug = await debug_mode(turn, deps)


async def lore(turn: Turn, deps: Deps) -> None:
    """Public lore passages relevant to the message and the scene, for the agent to cite (no index: none); and the
    turn's one embedding of the player's words, which the lore search, the recall and the game's memory share."""
    settings = deps.config.lore
    turn.passages, turn.lore_checked = [], False
    if deps.lore is None or turn.route is None or not (settings.enabled or settings.recall):
        return
    if turn.route.agent not in (AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC):
        return
    state = turn.work or turn.session.state
    if turn.query_vector is None:  # a turn played again keeps the one it made; None when the embedder is busy
        turn.query_vector = await deps.lore.queries.embed(resolved(state, turn.text))
    if not settings.enabled or not len(deps.lore):
        return
    try:
        npc = state.npcs.get(turn.route.npc.id) if turn.route.npc else None
        viewer = Viewer(turn.route.agent, npc.id if npc else None, turn.author_id)
        turn.passages = await passages_for(deps.lore, settings, state, turn.text, npc, lore_secrets(state, viewer),
                                           vector=turn.query_vector)
        turn.lore_checked = True
        if turn.ctx is not None:
            turn.ctx.passages = turn.passages  # search_lore numbers its passages after these, in the same list
    except Exception as exc:  # the turn goes on without lore rather than failing: say so in the log
        log.warning("lore_search_failed", channel_id=turn.session.channel_id, error=f"{type(exc).__name__}: {exc}")


async def debug_mode(turn: Turn, deps: Deps) -> bool:
    """Whether to ask for tool feedback: this action's choice, else the channel's, else the agent's, else the config's
    (which LOREKEEPER_DEBUG sets)."""
    if turn.debug_override is not None:
        return turn.debug_override
    if turn.session.debug is not None:  # the channel's switch, read with the session
        return turn.session.debug
    agent = deps.config.agent(turn.route.agent).debug if turn.route is not None else None
    return deps.config.turn.debug if agent is None else agent


async def context(turn: Turn, deps: Deps) -> None:
    """What the agent is told: its system prompt, the state as it may know it, the history it witnessed, hints."""
    # The working copy: what grounding stages before this one changed (a move, a persona card) is already in it.
    state, chosen, cfg = turn.work or turn.session.state, turn.route, deps.config
    assert chosen is not None and turn.player is not None
    npc_id = chosen.npc.id if chosen.npc else None
    npc = state.npcs.get(npc_id) if npc_id else None
    npc_agent = chosen.agent is AgentType.NPC
    history = await deps.store.messages(turn.session.id, after_id=0 if npc_agent else state.summary_upto,
                                        limit=cfg.turn.history_messages * (4 if npc_agent else 1),
                                        before_id=turn.replaces.turn.first_message if turn.replaces else None)
    seen = visible_history(history, chosen.agent, npc_id)[-cfg.turn.history_messages:]
    memories = await _recall(turn, deps, before_id=seen[0].id if seen else None)
    turn.hints = (decide.found_by_checks(suggest(state, turn.text, chosen.agent, npc, cfg.turn.suggestion_limit,
                                                 turn.author_id, turn.query_vector), state, chosen.agent,
                                         turn.author_id)
                  if cfg.turn.suggestions else [])
    settings = cfg.agent(chosen.agent)
    # A two-step turn's agent only narrates what the decide stage did: no tools, tool hints or tool feedback, and
    # a speaker's label on a new line ends its reply (a small model goes on to write the players' next lines).
    tools = not decide.two_step(deps, chosen.agent)
    stop = ["<observation>"] + ([f"</{t.name}>" for t in tools_for(chosen.agent)] if tools else ["\n["])
    # A small model (the local one) reads a few lines of the game and one lore passage: given more, it copies.
    brief = getattr(deps.models.get(chosen.agent), "brief", False)
    describe = brief_context if brief else game_context
    if brief and len(turn.passages) > 1:  # only what it was shown may be cited
        turn.passages = turn.passages[:1]
        if turn.ctx is not None:
            turn.ctx.passages = turn.passages
    turn.request = ModelRequest(
        agent=chosen.agent, model=settings.model, system=system_prompt(chosen.agent, npc, tools=tools),
        context="\n\n".join(filter(None, [describe(state, chosen.agent, turn.author_id, npc),
                                          context_block(turn.passages) if turn.lore_checked else "",
                                          turn.referee_note,
                                          ("## Earlier in this game (from the log; older than the history below)\n"
                                           + recall_lines(memories)) if memories else "",  # escaped when stored
                                          format_suggestions(turn.hints) if tools else "",
                                          feedback.REQUEST if turn.debug and tools else ""])),
        messages=history_messages([*seen, turn.player], chosen.agent, npc_id, state), stop=stop,
        temperature=settings.temperature, max_tokens=settings.max_tokens, tools=tools)


async def _recall(turn: Turn, deps: Deps, before_id: int | None) -> list[Memory]:
    """Exchanges from earlier in the game, older than the history the agent reads, that bear on the message."""
    settings = deps.config.lore
    if deps.lore is None or not settings.recall or before_id is None or turn.route is None:
        return []
    if turn.query_vector is None:  # the embedder was too busy for this turn: it goes on without recall
        log.info("recall_skipped", channel_id=turn.session.channel_id)
        return []
    npc = turn.route.npc
    try:
        found = await recall(deps, turn.session.id, turn.session.state, turn.text, turn.query_vector,
                             settings.recall, npc_id=npc.id if turn.route.agent is AgentType.NPC and npc else None,
                             before_id=before_id)
    except Exception as exc:  # memory is a help, not a requirement: the turn goes on without it
        log.warning("recall_failed", channel_id=turn.session.channel_id, error=f"{type(exc).__name__}: {exc}")
        return []
    return [m for m in found if m.similarity is not None and m.similarity >= settings.recall_min_similarity]


async def run(turn: Turn, deps: Deps) -> None:
    """The agent answers, calling tools on the working copy; an empty reply is a failed turn."""
    assert turn.route is not None and turn.request is not None and turn.ctx is not None
    cfg = deps.config.turn
    turn.run = AgentRun()
    limits = Limits(cfg.tool_quota, cfg.max_rounds, generation_timeout=cfg.generation_timeout)
    show = None
    if turn.show is not None:
        speaker, tell = turn.route.npc.name if turn.route.npc else "GM", turn.show
        show = lambda text: tell(speaker, text)  # noqa: E731
    await run_agent(deps.models[turn.route.agent], turn.request, turn.ctx, limits, deps.sleep, turn.run, show,
                    tools=turn.request.tools)
    turn.reply = unlabelled(turn.run.reply)
    if not turn.reply:
        raise ModelError("the model's reply was empty once tags and thinking were removed")


_LABEL = re.compile(r"^\s*\[[^\]\n]{1,100}\]:[ \t]*")


def unlabelled(reply: str) -> str:
    """The reply without a speaker's label at its start: the engine labels who speaks, and a model that copies
    the history's `[Aria (player sam)]:` would otherwise open its answer in someone else's name."""
    while (m := _LABEL.match(reply)) is not None:
        reply = reply[m.end():]
    return reply.strip()


async def verify(turn: Turn, deps: Deps) -> None:
    """Compare the story with what the tools did; record each miss, and in `correct` mode ask the agent once to fix it."""
    mode = deps.config.turn.verify
    if mode == "off" or turn.route is None or turn.work is None or turn.request is None or turn.ctx is None:
        return
    calls = [*turn.grounding_tools, *turn.run.calls]
    misses = verify_reply(turn.session.state, turn.work, turn.reply, calls, turn.route.agent)
    turn.verification = Verification(misses, "flagged" if misses else "clean")
    if not misses:
        return
    log.info("verifier_missed", channel_id=turn.session.channel_id, rules=[m.rule for m in misses], mode=mode)
    if mode != "correct" or not turn.request.tools:  # a two-step turn's narrator has no tools to correct it with
        return
    cfg = deps.config.turn
    rounds_left = cfg.max_rounds - turn.run.rounds - 1
    if rounds_left < 1:
        turn.verification.outcome = "uncorrected"  # the round cap is spent: it is recorded, not fixed
        return
    request = replace(turn.request, prefill="", messages=[
        *turn.request.messages, ChatMessage("assistant", turn.run.transcript),
        ChatMessage("user", correction_request(misses))])
    snapshot = turn.work.clone()
    again = AgentRun()
    quota = max(1, cfg.tool_quota - sum(1 for c in turn.run.calls if c.ok))
    try:
        await run_agent(deps.models[turn.route.agent], request, turn.ctx,
                        Limits(quota, rounds_left, generation_timeout=cfg.generation_timeout), deps.sleep, again)
    except Exception as exc:  # the correction failed: the turn keeps its first reply and state
        turn.work.__dict__.update(snapshot.__dict__)
        turn.run.model_calls.extend(again.model_calls)
        turn.verification.outcome = "uncorrected"
        log.warning("verifier_correction_failed", channel_id=turn.session.channel_id, error=str(exc))
        return
    turn.run.model_calls.extend(again.model_calls)
    turn.run.calls.extend(again.calls)
    turn.run.rounds += again.rounds + 1
    if again.reply:
        turn.reply = again.reply
    left = verify_reply(turn.session.state, turn.work, turn.reply, [*turn.grounding_tools, *turn.run.calls],
                        turn.route.agent)
    turn.verification.outcome = "corrected" if not left else "uncorrected"
    log.info("verifier_corrected" if not left else "verifier_uncorrected", channel_id=turn.session.channel_id)


async def citations(turn: Turn, deps: Deps) -> None:
    """The reply players read has no [n] markers; the passages it cited become its sources. The Sources line
    players read names only lore they may know of: an NPC may draw on a section tied to a secret it knows, but the
    section's title is not shown while the party has not discovered that secret (its record keeps every citation)."""
    turn.reply, cited = cite(turn.reply, turn.passages)
    state = turn.work if turn.work is not None else turn.session.state if turn.session is not None else None
    party = lore_secrets(state, Viewer(AgentType.NARRATIVE)) if state is not None else frozenset()
    chunks = {hit.chunk.id: hit.chunk for hit in turn.passages}
    turn.cited = cited
    turn.sources = [s for s in cited if s.chunk_id in chunks and chunks[s.chunk_id].visible(False, party)]
    if not turn.reply.strip():
        raise ModelError("the model's reply held nothing but citations")


async def commit(turn: Turn, deps: Deps) -> None:
    """The player's message, the reply, every state change and the tool log, in one write, if nobody wrote first."""
    assert turn.work is not None and turn.route is not None and turn.player is not None and turn.record is not None
    turn.work.turn = turn.seq
    observe(turn.work)  # the journal: where the party is now, and who is there
    turn.record.model_calls = [c.as_record() for c in [*turn.grounding_calls, *turn.run.model_calls]]
    turn.record.sources = [s.chunk_id for s in turn.cited]
    turn.record.checks = turn.verification.as_record() if turn.verification else []
    turn.record.suggestions = [{"tool": h.tool, "confidence": h.confidence, "args": h.args} for h in turn.hints]
    if turn.debug:
        turn.record.feedback = feedback.extract(turn.run.transcript, [*turn.grounding_tools, *turn.run.calls])
    speaker = turn.route.npc
    answer = Message(channel_id=turn.session.channel_id, author_id=f"npc:{speaker.id}" if speaker else NARRATOR_ID,
                     author_name=speaker.name if speaker else "Narrator", agent=turn.route.agent,
                     npc_id=speaker.id if speaker else None, text=turn.reply, witnesses=list(turn.work.party.npc_ids))
    committed = await deps.store.commit_turn(turn.session.id, turn.work, [turn.player, answer], turn.record,
                                             call_rows([*turn.grounding_tools, *turn.run.calls]),
                                             version=turn.session.version, replaces=turn.replaces,
                                             vector=stored(turn.query_vector))
    turn.turn_id, turn.unsummarised, turn.settled = committed.turn_id, committed.unsummarised, True


Stage = Callable[[Turn, Deps], Awaitable[None]]
STAGES: tuple[Stage, ...] = (rewind, checks, begin, grounding.planner, lore, grounding.referee, grounding.persona, context,
                             decide.decide, run, verify, citations, commit)


# -- playing the stages ----------------------------------------------------------------------------------------------

async def play(turn: Turn, deps: Deps) -> TurnResult:
    """Run every stage; on a failure after the message was stored, record it and raise a sentence for the player.
    A turn accepted earlier (its words stored while it waited for the channel) plays on the game as it is now."""
    if turn.player is not None:
        fresh = await deps.store.load_session(turn.session.channel_id)
        if fresh is None or fresh.id != turn.session.id:
            raise await _failed(turn, deps, NoGameRunning())
        turn.session = fresh
    for attempt in range(1, PLAYS + 1):
        played_from = turn.session.state
        before = played_from.model_dump_json() if CHECK_SHARED else None
        try:
            for stage in STAGES:
                await stage(turn, deps)
            break
        except StaleSession:
            if attempt == PLAYS or turn.player is None:
                await _failed(turn, deps, StaleSession())
                raise
            log.info("turn_replayed", channel_id=turn.session.channel_id, attempt=attempt)
            fresh = await deps.store.load_session(turn.session.channel_id)
            if fresh is None:
                await _failed(turn, deps, NoGameRunning())
                raise NoGameRunning() from None
            turn.session = fresh
        except Exception as exc:
            if turn.player is None:  # refused before anything was stored: nothing to record
                raise
            raise await _failed(turn, deps, exc) from exc
        finally:
            if before is not None and played_from.model_dump_json() != before:
                raise AssertionError("a turn changed the state it was played from (the store's shared copy): "
                                     "something changed the working copy's contents without GameState.own()")
    assert turn.route is not None and turn.work is not None and turn.request is not None
    log.info("turn_done", channel_id=turn.session.channel_id, agent=turn.route.agent.value,
             npc=turn.route.npc.id if turn.route.npc else None, tools=len(turn.run.calls))
    npc = turn.work.npcs.get(turn.route.npc.id) if turn.route.npc else None
    return TurnResult(turn.reply, turn.route.agent, npc, [*turn.grounding_tools, *turn.run.calls],
                      [*turn.grounding_calls, *turn.run.model_calls], turn.turn_id, turn.work, turn.request, turn.sources,
                      turn.verification.as_record() if turn.verification else [], turn.debug, turn.text)


async def abandon(turn: Turn, deps: Deps) -> None:
    """A turn accepted but never played (its front end failed first): its words kept, marked failed."""
    await _failed(turn, deps, TurnFailed("The turn was not played.", reason="its front end gave it up"))


async def _failed(turn: Turn, deps: Deps, exc: BaseException) -> GameError:
    """Keep the player's words, marked failed, with why; return the error to show the player."""
    assert turn.player is not None
    record = turn.record or TurnRecord(seq=turn.seq or turn.session.state.turn + 1, agent=AgentType.NARRATIVE,
                                       npc_id=None, status="failed", seed=turn.seed, started_at=utcnow())
    record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
    record.model_calls = [c.as_record() for c in [*turn.grounding_calls, *turn.run.model_calls]]
    if isinstance(exc, (ModelError, GameError)):
        log.warning("turn_failed", channel_id=turn.session.channel_id, error=record.error)
    else:
        log.error("turn_crashed", channel_id=turn.session.channel_id, exc_info=exc)
    await deps.store.record_failed_turn(turn.session.id, turn.player, record, retry=turn.replaces is not None)
    turn.settled = True
    if isinstance(exc, GameError) and not isinstance(exc, TurnFailed):
        return exc  # a refusal in the player's own terms (the game changed under the turn): say it as it is
    if turn.replaces is not None:
        return TurnFailed(RETRY_FAILED, reason=record.error)
    # A configuration mistake will not fix itself: say what it is, so the admin can.
    message = f"{APOLOGY}\n({exc})" if isinstance(exc, ProviderConfigError) else APOLOGY
    return TurnFailed(message, reason=record.error)
