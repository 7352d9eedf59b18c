"""Lore tools: get_lore_slice (one named section, compacted) and search_lore (the best passages for a question).

Both read only the game's own adventure and world lore: public sections, and GM-only ones tied to a secret the
asking agent may know (discovered by the party, or known to the NPC); the index filters the rest out itself. Each turn may make `[lore] max_calls_per_turn` of these calls (a refused one is
an error observation that costs nothing of the turn's general tool quota) within `[lore] turn_token_budget`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any, Literal

import structlog
from pydantic import Field

from ..errors import ToolError
from ..recall import recall as recall_exchanges
from ..lore.memory import recall_lines
from ..lore.retrieval import refs_of
from ..lore.slices import SliceResult, closest, compact, digest
from ..basics import AgentType
from ..markup import escape
from ..visibility import lore_secrets
from .registry import EVERY_AGENT, Args, ToolContext, tool

log = structlog.get_logger(__name__)


class LoreSliceArgs(Args):
    scope: Literal["world", "adventure"]
    ref: str = Field(min_length=1, max_length=80, pattern=r"^[a-z0-9][a-z0-9-]*$")
    slice: str = Field(min_length=1, max_length=300, pattern=r"^[a-z0-9][a-z0-9.-]*$")
    max_tokens: int | None = Field(None, ge=1, le=100_000)


class SearchLoreArgs(Args):
    query: str = Field(min_length=2, max_length=300)


def _lore(ctx: ToolContext) -> tuple[Any, Any]:
    deps = ctx.deps
    index = getattr(deps, "lore", None)
    if index is None or not len(index):
        raise ToolError("this game has no lore index (an admin builds it with `lorekeeper lore ingest`)")
    return index, deps.config.lore


def _spend(ctx: ToolContext, settings: Any, tool_name: str) -> None:
    """Count this call against the turn's lore quota, or refuse it without counting it anywhere."""
    used = ctx.counters.get("lore_calls", 0)
    if used >= settings.max_calls_per_turn:
        ctx.meta["denied"] = True
        log.info("lore_call_denied", tool=tool_name, used=int(used), limit=settings.max_calls_per_turn)
        raise ToolError(f"the limit of {settings.max_calls_per_turn} lore look-ups a turn is reached; "
                        "answer from what you have")
    ctx.counters["lore_calls"] = used + 1


def _budget(ctx: ToolContext, settings: Any) -> int:
    """Tokens the turn may still spend on lore (passages already given count)."""
    spent = ctx.counters.get("lore_tokens", 0) + sum(len(p.chunk.text) // 4 for p in ctx.passages)
    return int(settings.turn_token_budget - spent)


@tool(example='<get_lore_slice scope="world" ref="example-world" slice="history.the-old-war" max_tokens="200"/>',
      agents=EVERY_AGENT, changes_state=False)
def get_lore_slice(ctx: ToolContext, args: LoreSliceArgs) -> str:
    """One section of this game's lore by its address (scope, ref and slice, as the Lore passages name them), compacted to max_tokens."""
    started = time.perf_counter()
    index, settings = _lore(ctx)
    refs = refs_of(ctx.state)
    if (args.scope, args.ref) not in refs:
        known = ", ".join(f'scope="{s}" ref="{r}"' for s, r in refs)
        raise ToolError(f"this game's lore is {known}; there is no {args.scope} '{args.ref}' here")
    address = f"{args.scope}:{args.ref}:{args.slice}"
    _spend(ctx, settings, "get_lore_slice")
    secrets = lore_secrets(ctx.state, ctx.viewer)
    found = index.slice_text(address, secrets=secrets)  # public lore, and the secrets this reader may know
    if found is None:
        names = [a.split(":", 2)[2] for a in index.slices(refs=[(args.scope, args.ref)], secrets=secrets)]
        near = closest(args.slice, names)
        raise ToolError(f"there is no slice '{args.slice}' in {args.scope} {args.ref}"
                        + (f"; the nearest are: {', '.join(near)}" if near else ""))
    heading, text = found
    room = _budget(ctx, settings)
    wanted = args.max_tokens or settings.max_return_tokens
    limit = max(settings.min_tokens, min(wanted, settings.max_return_tokens, room))
    if room < settings.min_tokens:
        ctx.counters["lore_calls"] -= 1  # refused: it does not count against the quota either
        ctx.meta["denied"] = True
        raise ToolError("this turn's lore budget is spent; answer from what you have")
    key = f"{address}:{limit}"
    whole = digest(text)
    result = index.slice_cache.get(key, whole, settings.cache_ttl_s)
    hit = result is not None
    if result is None:
        short = compact(text, limit)
        result = SliceResult(address, heading, short, max(1, len(short) // 4), whole)
        index.slice_cache.put(key, result)
    ctx.counters["lore_tokens"] = ctx.counters.get("lore_tokens", 0) + result.tokens_est
    ctx.meta.update(cache_hit=hit, tokens=result.tokens_est, latency_ms=round((time.perf_counter() - started) * 1000, 2))
    log.info("lore_slice", address=address, max_tokens=limit, tokens=result.tokens_est, cache_hit=hit,
             hash=result.hash, latency_ms=ctx.meta["latency_ms"])
    return (f"{escape(result.heading)} ({result.address}; about {result.tokens_est} tokens; hash {result.hash})\n"
            f"{escape(result.text)}")


@tool(example="<search_lore>who built the old bridge</search_lore>", agents=EVERY_AGENT, changes_state=False,
      body="query")
async def search_lore(ctx: ToolContext, args: SearchLoreArgs) -> str:
    """The passages of this game's lore that best answer a question, numbered so you can cite them as [n]."""
    started = time.perf_counter()
    index, settings = _lore(ctx)
    _spend(ctx, settings, "search_lore")
    vector = await index.queries.embed(args.query)  # in the turns' embedding queue (None when busy: words alone)
    hits = await asyncio.to_thread(index.search, args.query, settings.passages, refs=refs_of(ctx.state), gm=False,
                                   secrets=lore_secrets(ctx.state, ctx.viewer), vector=vector, embed=False)
    hits = [h for h in hits if h.relevant(settings.min_similarity, settings.min_bm25)]
    room = _budget(ctx, settings)
    lines: list[str] = []
    tokens = 0
    seen = {p.chunk.id for p in ctx.passages}
    for hit in hits:
        if hit.chunk.id in seen:
            number = next(i for i, p in enumerate(ctx.passages, 1) if p.chunk.id == hit.chunk.id)
            lines.append(f"[{number}] {escape(hit.chunk.heading)} (already given above)")
            continue
        text = compact(hit.chunk.text, min(settings.passage_tokens, max(0, room - tokens)))
        cost = len(text) // 4
        if cost < 20:
            break  # the turn's lore budget is spent
        ctx.passages.append(replace(hit, chunk=replace(hit.chunk, text=text)))
        tokens += cost
        lines.append(f"[{len(ctx.passages)}] {escape(hit.chunk.heading)}\n{escape(text)}")
    ctx.counters["lore_tokens"] = ctx.counters.get("lore_tokens", 0) + tokens
    ctx.meta.update(tokens=tokens, latency_ms=round((time.perf_counter() - started) * 1000, 2), found=len(lines))
    log.info("lore_search", query=args.query[:80], found=len(lines), tokens=tokens, latency_ms=ctx.meta["latency_ms"])
    if not lines:
        return "Nothing in this game's lore answers that. If you must invent, say you are improvising."
    return "Lore passages (cite them as [n]):\n" + "\n\n".join(lines)


class RecallArgs(Args):
    query: str = Field(min_length=2, max_length=300)


@tool(example="<recall>what the innkeeper said about the key</recall>", agents=EVERY_AGENT, changes_state=False,
      body="query")
async def recall(ctx: ToolContext, args: RecallArgs) -> str:
    """Look up what happened earlier in this game, beyond the history you see (an NPC recalls only what it witnessed)."""
    started = time.perf_counter()
    deps = ctx.deps
    index = getattr(deps, "lore", None)
    if index is None or ctx.session_id is None:
        raise ToolError("this game keeps no searchable memory")
    settings = deps.config.lore
    _spend(ctx, settings, "recall")
    npc_id = ctx.npc_id if ctx.agent is AgentType.NPC else None
    vector = await index.queries.embed(args.query)
    found = await recall_exchanges(deps, ctx.session_id, ctx.state, args.query, vector, 3, npc_id=npc_id)
    text = recall_lines(found)
    tokens = len(text) // 4
    ctx.counters["lore_tokens"] = ctx.counters.get("lore_tokens", 0) + tokens
    ctx.meta.update(tokens=tokens, found=len(found), latency_ms=round((time.perf_counter() - started) * 1000, 2))
    log.info("memory_recall", query=args.query[:80], found=len(found), latency_ms=ctx.meta["latency_ms"])
    return f"From earlier in this game:\n{text}" if found else "Nothing earlier in this game matches that."
