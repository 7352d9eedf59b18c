"""The running summary: old messages folded into a few paragraphs, in the background, without holding up play.

The channel is locked only to read what to fold and to write the result; the model call runs between, so turns go
on meanwhile. The write happens only if no one folded those messages in the meantime. One call folds a bounded
batch (the oldest first), and a summarizer that fails or answers nothing is asked again only after a growing
number of turns.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
import structlog

from .agents import speaker_line
from .instructions import system_prompt
from .core import Core
from .errors import StaleSession
from .loop import AgentRun, Limits, run_agent
from .models import ChatMessage, ModelRequest
from .basics import AgentType
from .state import GameState, Message
from .markup import escape
from .tools import ToolContext

log = structlog.get_logger(__name__)

MAX_BACKOFF = 32  # turns skipped at most after repeated failures


@dataclass
class Backoff:
    """A channel's summarizer failures in a row, and the turn before which it is not asked again."""

    failures: int = 0
    not_before: int = 0

    def failed(self, turn: int) -> None:
        self.failures += 1
        self.not_before = turn + min(MAX_BACKOFF, 2 ** self.failures)

    def allows(self, turn: int) -> bool:
        return turn >= self.not_before


async def summarize(engine: Core, channel_id: str, backoff: Backoff) -> bool:
    """Fold one batch of old messages into the channel's summary; True if the summary moved on. `backoff` is the
    channel's record of failures, kept by the engine between calls."""
    deps, cfg = engine.deps, engine.deps.config.turn
    async with engine.channel_lock(channel_id):
        session = await deps.store.load_session(channel_id)
        if session is None or not backoff.allows(session.state.turn):
            return False
        state = session.state
        unfolded = await deps.store.count_messages(session.id, state.summary_upto)
        if unfolded <= cfg.summarize_after:
            return False
        fold = await deps.store.messages(session.id, after_id=state.summary_upto, oldest=True,
                                         limit=min(cfg.summary_batch, unfolded - cfg.summary_keep))
    if not fold:
        return False
    text, tokens = await _ask(engine, state, [speaker_line(m, state) for m in fold])
    if tokens:
        await deps.store.add_usage(session.id, tokens)  # the server's budget pays for summaries too
    if not text:
        backoff.failed(state.turn)
        log.warning("summary_failed", channel_id=channel_id, failures=backoff.failures, retry_at_turn=backoff.not_before)
        return False
    backoff.failures = 0
    return await _store(engine, channel_id, expected_upto=state.summary_upto, summary=text, fold=fold)


async def _ask(engine: Core, state: GameState, lines: list[str]) -> tuple[str, int]:
    """The model's new summary, or '' when it failed or said nothing (the turn is already committed: no harm), and
    the tokens it used."""
    deps = engine.deps
    settings = deps.config.agent(AgentType.SUMMARIZER)
    request = ModelRequest(agent=AgentType.SUMMARIZER, model=settings.model, system=system_prompt(AgentType.SUMMARIZER),
                           context="", temperature=settings.temperature, max_tokens=settings.max_tokens,
                           messages=[ChatMessage("user", f"Earlier summary:\n{escape(state.summary) or '(none)'}\n\n"
                                                         f"New messages:\n" + "\n".join(lines))])
    ctx = ToolContext(state.clone(), random.Random(0), AgentType.SUMMARIZER)  # it has no tools to act
    limits = Limits(tool_quota=1, max_rounds=1, generation_timeout=deps.config.turn.generation_timeout)
    run = AgentRun()
    try:
        await run_agent(deps.models[AgentType.SUMMARIZER], request, ctx, limits, deps.sleep, run)
    except Exception as exc:
        log.warning("summary_model_failed", error=str(exc))
        return "", _tokens(run)
    return run.reply, _tokens(run)


def _tokens(run: AgentRun) -> int:
    return sum(c.input_tokens + c.output_tokens for c in run.model_calls)


async def _store(engine: Core, channel_id: str, *, expected_upto: int, summary: str, fold: list[Message]) -> bool:
    """Write the summary if those messages are still unfolded; another process's turn meanwhile is no conflict."""
    for _ in range(3):
        async with engine.channel_lock(channel_id):
            session = await engine.deps.store.load_session(channel_id)
            if session is None or session.state.summary_upto != expected_upto:
                return False  # the game ended, or someone else folded these messages first
            state = session.state.clone()  # the loaded state is the store's cached one: change a copy
            state.summary, state.summary_upto = summary, fold[-1].id
            try:
                await engine.deps.store.save_state(session.id, state, version=session.version)
            except StaleSession:
                continue  # another process wrote the game: read it again and try once more
        log.info("summary_updated", channel_id=channel_id, upto=fold[-1].id, folded=len(fold))
        return True
    return False
