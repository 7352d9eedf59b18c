"""Grounding stages: a rules referee, a scene planner and just-in-time NPC personas.

Each is one short model call answering with a JSON object, validated with pydantic; anything else (a model
failure, text that is not the object, ids that do not exist) falls back to what the turn would have done
without it, with a logged warning. Each runs only when it has something to decide, and at most one of them
runs in a turn, so an ordinary turn costs at most two model calls plus tool continuations:
- the referee, when the action meets retrieved rules passages (it may approve, warn the agent, or refuse);
- the planner, when a message names no one while an NPC is present (who answers; whether the party moves);
- the persona, the first time an NPC with lore speaks (its card is kept in the game state afterwards).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from typing import Literal, TypeVar

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .instructions import system_prompt
from .deps import Deps
from .errors import GameError
from .loop import AgentRun, Limits, run_agent
from .lore.retrieval import refs_of
from .lore.slices import compact
from .models import ChatMessage, ModelRequest
from .orchestrator import Route
from .basics import AgentType
from .entities import PersonaCard
from .markup import escape
from .tags import TagScanner
from .tools import TOOLS, ToolContext, arun_tool
from .turn import Turn
from .visibility import Viewer, lore_secrets

log = structlog.get_logger(__name__)

J = TypeVar("J", bound=BaseModel)
_OBJECT = re.compile(r"\{.*\}", re.S)


class RulesRefusal(GameError):
    """The referee found the action impossible under the rules: said to the player, nothing happens."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class Verdict(_Strict):
    verdict: Literal["approve", "warn", "block"]
    reason: str = Field("", max_length=400)
    cite: int | None = None
    alternative: str | None = Field(None, max_length=300)


class Plan(_Strict):
    answerer: str = Field("narrator", max_length=80)
    move_to: str | None = Field(None, max_length=80)


class CardDraft(_Strict):
    speech_style: str = Field("", max_length=400)
    traits: list[str] = Field(default_factory=list)
    background: str = Field("", max_length=800)
    knows: list[str] = Field(default_factory=list)
    example_lines: list[str] = Field(default_factory=list)
    citations: list[int] = Field(default_factory=list)


async def _ask(turn: Turn, deps: Deps, agent: AgentType, user: str, schema: type[J]) -> J | None:
    """One grounding call; its answer as `schema`, or None when there is none to trust."""
    settings = deps.config.agent(agent)
    request = ModelRequest(agent=agent, model=settings.model, system=system_prompt(agent), context="",
                           messages=[ChatMessage("user", user)], temperature=settings.temperature,
                           max_tokens=settings.max_tokens)
    assert turn.work is not None
    ctx = ToolContext(turn.work.clone(), random.Random(0), agent)  # it has no tools: a copy for form
    run = AgentRun()
    limits = Limits(tool_quota=1, max_rounds=1, generation_timeout=deps.config.turn.generation_timeout)
    try:
        await run_agent(deps.models[agent], request, ctx, limits, deps.sleep, run)
    except Exception as exc:
        log.warning("grounding_failed", agent=agent.value, error=f"{type(exc).__name__}: {exc}")
        return None
    finally:
        turn.grounding_calls.extend(run.model_calls)
    found = _OBJECT.search(run.reply or "")
    try:
        return schema.model_validate(json.loads(found.group())) if found else None
    except (ValueError, ValidationError) as exc:
        log.warning("grounding_unreadable", agent=agent.value, error=str(exc)[:200], reply=(run.reply or "")[:200])
        return None


def _free(turn: Turn, deps: Deps, agent: AgentType) -> bool:
    return deps.config.enabled(agent) and not turn.grounding_calls and turn.route is not None


# -- the stages ------------------------------------------------------------------------------------------------------

async def planner(turn: Turn, deps: Deps) -> None:
    """Who answers a message that names no one while NPCs are present, and whether the party goes somewhere."""
    if not _free(turn, deps, AgentType.PLANNER) or turn.route.agent is not AgentType.NARRATIVE or turn.route.npc:
        return
    state = turn.work
    assert state is not None and turn.ctx is not None and turn.player is not None
    present = state.present_npcs()
    if not present:
        return
    loc = state.location()
    exits = [e.to for e in loc.exits if loc.exit_open(e)]
    actor = state.characters.get(turn.author_id)
    user = (f"Message from {escape(actor.name if actor else turn.author_name)}: {escape(turn.text)}\n"
            f"Present: {', '.join(f'{n.id} ({escape(n.name)})' for n in present)}\n"
            f"Exits: {', '.join(f'{i} ({escape(state.locations[i].name)})' for i in exits) or 'none'}")
    plan = await _ask(turn, deps, AgentType.PLANNER, user, Plan)
    if plan is None:
        return
    if plan.move_to and plan.move_to in exits:
        scanner = TagScanner(TOOLS)
        event = scanner.feed(f'<change_location location="{plan.move_to}"/>') or scanner.finish()
        assert event is not None
        moved = await arun_tool(event, turn.ctx)  # on the turn's working copy, committed with it
        turn.grounding_tools.append(moved)
        log.info("planner_moved", to=plan.move_to, ok=moved.ok)
    # Who is present is read again: a planned move may have left someone behind.
    chosen = next((n for n in state.present_npcs() if n.id == plan.answerer), None)
    if chosen is not None:
        turn.route = Route(AgentType.NPC, chosen)
        turn.player.npc_id = chosen.id
        turn.ctx = ToolContext(turn.work, turn.ctx.rng, AgentType.NPC, turn.author_id, chosen.id, deps,
                               session_id=turn.session.id, counters=turn.ctx.counters, passages=turn.ctx.passages)
        turn.record.agent, turn.record.npc_id = AgentType.NPC, chosen.id
        log.info("planner_routed", npc=chosen.id)


async def referee(turn: Turn, deps: Deps) -> None:
    """Check an action against the rules passages retrieved for it: approve, warn the agent, or refuse it."""
    if not _free(turn, deps, AgentType.REFEREE) or turn.route.agent not in (AgentType.NARRATIVE, AgentType.COMBAT):
        return
    if not any("/rules/" in f"/{p.chunk.source}" for p in turn.passages):
        return  # nothing rule-like was found for this action: nothing to judge
    state = turn.work
    assert state is not None
    actor = state.characters.get(turn.author_id)
    passages = "\n\n".join(f"[{n}] {escape(p.chunk.heading)}\n{escape(p.chunk.text)}"
                           for n, p in enumerate(turn.passages, 1))
    user = f"Action by {escape(actor.name if actor else turn.author_name)}: {escape(turn.text)}\n\nPassages:\n{passages}"
    verdict = await _ask(turn, deps, AgentType.REFEREE, user, Verdict)
    if verdict is None or verdict.verdict == "approve":
        return
    cited = turn.passages[verdict.cite - 1] if verdict.cite and 1 <= verdict.cite <= len(turn.passages) else None
    if verdict.verdict == "block" and verdict.reason and cited is not None:
        log.info("referee_blocked", channel_id=turn.session.channel_id, cite=cited.chunk.address)
        alternative = f" You could {verdict.alternative[0].lower()}{verdict.alternative[1:]}" if verdict.alternative else ""
        raise RulesRefusal(f"{verdict.reason.rstrip('.')}. (Rules: {cited.chunk.heading}){alternative}")
    # A warning, or a block without a reason and a passage to show for it: the agent is told, the action goes on.
    where = f" (see [{verdict.cite}])" if cited is not None else ""
    turn.referee_note = f"## Rules referee\n{escape(verdict.reason or 'Mind the rules above.')}{where}"
    log.info("referee_warned", channel_id=turn.session.channel_id)


async def persona(turn: Turn, deps: Deps) -> None:
    """The first time an NPC with lore speaks, draw its character card from that lore and keep it in the game."""
    if not _free(turn, deps, AgentType.PERSONA) or turn.route.agent is not AgentType.NPC or turn.route.npc is None:
        return
    if deps.lore is None or not len(deps.lore):
        return
    state = turn.work
    assert state is not None
    npc = state.npcs.get(turn.route.npc.id)
    if npc is None or npc.card is not None:
        return
    settings = deps.config.lore
    secrets = lore_secrets(state, Viewer(AgentType.NPC, npc.id))
    hits = await asyncio.to_thread(deps.lore.search, f"{npc.name} {npc.persona[:200]}", 4, refs=refs_of(state),
                                   secrets=secrets)
    hits = [h for h in hits if h.relevant(settings.min_similarity, settings.min_bm25)]
    if not hits:
        return  # no lore about it: the adventure's persona is all there is
    passages = "\n\n".join(f"[{n}] {escape(h.chunk.heading)}\n{escape(compact(h.chunk.text, 200))}"
                           for n, h in enumerate(hits, 1))
    user = f"Character: {escape(npc.name)} ({npc.id}). Description: {escape(npc.persona)}\n\nPassages:\n{passages}"
    draft = await _ask(turn, deps, AgentType.PERSONA, user, CardDraft)
    if draft is None:
        return
    try:
        card = PersonaCard(speech_style=draft.speech_style, traits=draft.traits[:6], background=draft.background,
                           knows=draft.knows[:6], example_lines=draft.example_lines[:4],
                           citations=[hits[n - 1].chunk.address for n in draft.citations if 1 <= n <= len(hits)][:12])
    except ValidationError as exc:
        log.warning("persona_unusable", npc=npc.id, error=str(exc)[:200])
        return
    state.own()  # the working copy's NPC changes: its own, not the saved game's shared one
    state.npcs[npc.id].card = card
    log.info("persona_drawn", npc=npc.id, citations=card.citations)
