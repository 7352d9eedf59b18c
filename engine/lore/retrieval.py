"""Lore in the turn: the query a player's message makes, the passages the agent may cite, and its citations.

Passages go into the per-turn context (never the cached system prompt), numbered [1]..[n]. The agent cites them
as [n]; the markers are taken out of the reply players read and become a "Sources" line instead. Only public lore
is retrieved for a turn, plus GM-only sections tied to a secret the reader may know (visibility.lore_secrets):
the rest of the GM-only lore is filtered out in the search itself, whoever the agent is.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import structlog

from ..entities import NPC
from ..state import GameState
from ..markup import escape
from . import roles
from .search import Hit
from .slices import compact

if TYPE_CHECKING:
    import numpy as np

    from ..config import LoreSettings
    from .index import LoreIndex

log = structlog.get_logger(__name__)

_CITATION = re.compile(r"[ \t]?\[(\d{1,2}(?:\s*[,;–-]\s*\d{1,2})*)\]")


@dataclass(frozen=True)
class Source:
    number: int
    title: str  # the slice's heading path, for players
    address: str  # scope:ref:slice
    chunk_id: str


def refs_of(state: GameState) -> list[tuple[str, str]]:
    """The lore a game may draw on: its adventure's, and its world's."""
    refs = [("adventure", state.adventure_id)]
    if state.world:
        refs.append(("world", state.world))
    return refs


def resolved(state: GameState, text: str) -> str:
    """The player's words with the names their role words stand for ("the innkeeper" → Odile Farrow): what the
    turn embeds and searches by (engine/lore/roles.py)."""
    names = roles.resolve(state, text)
    return f"{text} ({', '.join(names)})" if names else text


def query_for(state: GameState, text: str, npc: NPC | None) -> str:
    """The player's words (with the names their role words stand for), then the scene: where the party is and who
    is there (the words count most in BM25)."""
    loc = state.locations.get(state.current_location)
    names = [npc.name] if npc is not None else []
    names += [n.name for n in state.present_npcs() if npc is None or n.id != npc.id]
    scene = " ".join(filter(None, [loc.name if loc else "", *names]))
    return f"{resolved(state, text)}\n{scene}".strip()


async def passages_for(index: LoreIndex, settings: LoreSettings, state: GameState, text: str,
                       npc: NPC | None, secrets: frozenset[str] = frozenset(), *,
                       vector: np.ndarray | None = None) -> list[Hit]:
    """The relevant passages for this message (public lore, and that of the `secrets` the reader may know), best
    first, within the turn's lore budget. `vector`: the message's embedding (the turn's one); None: words alone."""
    query = query_for(state, text, npc)
    # The search reads the index (BM25, Chroma): work for a thread, not for the event loop.
    hits = await asyncio.to_thread(index.search, query, settings.passages, refs=refs_of(state), gm=False,
                                   secrets=secrets, vector=vector, embed=False)
    kept: list[Hit] = []
    budget = settings.turn_token_budget
    for hit in hits:
        if not hit.relevant(settings.min_similarity, settings.min_bm25):
            continue
        # A copy: the index's own chunk stays whole.
        short = replace(hit, chunk=replace(hit.chunk, text=compact(hit.chunk.text, settings.passage_tokens)))
        cost = len(short.chunk.text) // 4
        if cost > budget:
            break
        budget -= cost
        kept.append(short)
    log.info("lore_retrieved", found=len(hits), kept=len(kept), slices=[h.chunk.address for h in kept])
    return kept


def context_block(passages: list[Hit]) -> str:
    """The per-turn context section: numbered passages to cite, or a plain warning that the lore is silent."""
    if not passages:
        return ("## Lore\nNothing in this world's lore answers this. If you need a fact the game does not give you, "
                "say that you are improvising it (e.g. \"The records say nothing of it; let's say…\") rather than "
                "presenting invention as established lore.")
    lines = ["## Lore (quote or paraphrase it faithfully; cite a passage as [n] right after what it supports)"]
    for n, hit in enumerate(passages, 1):
        lines.append(f"[{n}] {escape(hit.chunk.heading)}\n{escape(hit.chunk.text)}")
    return "\n\n".join(lines)


def cite(reply: str, passages: list[Hit]) -> tuple[str, list[Source]]:
    """The reply without citation markers, and the passages it cited (in the order first cited)."""
    if not passages:
        return reply, []
    cited: list[int] = []

    def take(m: re.Match[str]) -> str:
        numbers = [int(x) for x in re.findall(r"\d+", m.group(1))]
        if re.search(r"[–-]", m.group(1)) and len(numbers) == 2 and numbers[0] <= numbers[1] <= len(passages):
            numbers = list(range(numbers[0], numbers[1] + 1))
        if not all(1 <= x <= len(passages) for x in numbers):
            return m.group(0)  # not a citation of ours (a year, a list number): left as written
        cited.extend(x for x in numbers if x not in cited)
        return ""

    text = _CITATION.sub(take, reply)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)  # "the bell [1]." → "the bell."
    sources = [Source(n, passages[n - 1].chunk.heading, passages[n - 1].chunk.address, passages[n - 1].chunk.id)
               for n in cited]
    return text, sources


def sources_line(sources: list[Source]) -> str:
    """What players see under a reply that drew on lore."""
    titles = list(dict.fromkeys(s.title for s in sources))
    return "Sources: " + "; ".join(titles) if titles else ""
