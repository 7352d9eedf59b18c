"""Lore in the turn: passages in the context, citations out of the prose, GM-only lore never retrieved."""

from __future__ import annotations

import threading

import pytest

from engine.lore.embed import MiniLM
from engine.lore.index import LoreIndex
from engine.lore.retrieval import cite, compact, sources_line
from engine.state import AgentType
from tests.conftest import CHANNEL, make_table

TAVERN = """# The Brine Cup
## Wrack Stout
Odile Farrow brews a dark ale called Wrack Stout from kelp and burnt barley; a mug costs two copper pieces.

## The Cellar Door (GM only)
Behind the third cask in the cellar a door opens on the tide tunnel.

## The Harbor Bell
A bronze bell on the quay, cast in 1022 and rung three times in fog.
"""

RULES = """# Combat
## Critical Hits
When an attack roll shows a natural 20, the attack hits and its damage dice are rolled twice.
"""


@pytest.fixture(scope="module")
def embedder():
    return MiniLM()


@pytest.fixture
async def lore_table(tmp_path, embedder):
    corpus = tmp_path / "corpus"
    (corpus / "adventures" / "saltmere-lantern" / "lore").mkdir(parents=True)
    (corpus / "adventures" / "saltmere-lantern" / "lore" / "tavern.md").write_text(TAVERN)
    (corpus / "world" / "sundered-coast").mkdir(parents=True)
    (corpus / "world" / "sundered-coast" / "combat.md").write_text(RULES)
    (corpus / "world" / "elsewhere").mkdir(parents=True)  # another world's lore: never this game's
    (corpus / "world" / "elsewhere" / "ale.md").write_text("# Ales\n## Glimmer Ale\nA dark ale brewed by Odile's rival.\n")
    index = LoreIndex(tmp_path / "lore", embedder=embedder)
    index.ingest(corpus)
    t, ctx = await make_table(tmp_path / "g.db")
    t.engine.deps.lore = index
    yield t
    await ctx.__aexit__(None, None, None)


async def test_passages_are_numbered_in_the_context_and_citations_become_sources(lore_table):
    result = await lore_table.turn("What ale does Odile brew here?", "She pours Wrack Stout [1], dark as the sea [1].")
    context = lore_table.model.requests[-1].context
    assert "## Lore" in context and "[1] The Brine Cup › Wrack Stout" in context and "kelp and burnt barley" in context
    assert lore_table.model.requests[-1].system.count("Lore") == 0  # never in the cached system prompt
    assert "Glimmer" not in context  # another world's lore is not this game's
    assert result.reply == "She pours Wrack Stout, dark as the sea."
    assert [s.address for s in result.sources] == ["adventure:saltmere-lantern:the-brine-cup.wrack-stout"]
    assert sources_line(result.sources) == "Sources: The Brine Cup › Wrack Stout"
    session = await lore_table.engine.session(CHANNEL)
    stored = await lore_table.store.messages(session.id, limit=1)
    assert stored[-1].text == "She pours Wrack Stout, dark as the sea."  # the log keeps what players saw
    [turn] = [r for r in await lore_table.store.turns(session.id) if r["status"] == "ok"]
    assert turn["sources"] == ["adventure:saltmere-lantern:the-brine-cup.wrack-stout#0"]


async def test_gm_only_lore_reaches_no_agent(lore_table):
    await lore_table.turn("I search behind the third cask in the cellar for a door.", "Dust and cobwebs.")
    assert "tide tunnel" not in lore_table.model.requests[-1].context.split("## Lore", 1)[1]
    await lore_table.turn("@Ysolde where does the cellar door behind the cask lead?", "\"What door?\"")
    request = lore_table.model.requests[-1]
    assert request.agent is AgentType.NPC and "opens on the tide tunnel" not in request.context


async def test_when_no_lore_is_relevant_the_narrator_is_told_to_say_it_improvises(lore_table):
    await lore_table.turn("I whistle a tune.", "You whistle.")
    context = lore_table.model.requests[-1].context
    assert "Nothing in this world's lore answers this" in context and "improvising" in context


async def test_without_an_index_or_when_search_fails_the_turn_goes_on(lore_table, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("chroma is down")

    monkeypatch.setattr(lore_table.engine.deps.lore, "search", broken)
    result = await lore_table.turn("What ale does Odile brew?", "Ale [1].")
    assert result.reply == "Ale [1]." and "## Lore" not in lore_table.model.requests[-1].context
    lore_table.engine.deps.lore = None
    assert (await lore_table.turn("Hello.", "Hi.")).sources == []


async def test_retrieval_runs_off_the_event_loop(lore_table, monkeypatch):
    seen = []
    search = lore_table.engine.deps.lore.search

    def recording(*args, **kwargs):
        seen.append(threading.current_thread() is threading.main_thread())
        return search(*args, **kwargs)

    monkeypatch.setattr(lore_table.engine.deps.lore, "search", recording)
    await lore_table.turn("Tell me about the harbor bell.", "It tolls.")
    assert seen == [False]


def test_citation_markers_are_read_and_removed():
    class P:  # a passage as cite() reads it
        def __init__(self, n):
            from engine.lore.corpus import Chunk
            self.chunk = Chunk(f"adventure:a:s{n}#0", "adventure", "a", f"s{n}", f"Title {n}", "text", False, "a.md")

    passages = [P(1), P(2), P(3)]
    text, sources = cite("The bell [2] rang [1, 3]. In 1022 [7] it was cast [1-2]; see [x].", passages)
    assert text == "The bell rang. In 1022 [7] it was cast; see [x]."
    assert [s.number for s in sources] == [2, 1, 3]
    assert cite("No lore [1].", []) == ("No lore [1].", [])


def test_compaction_cuts_at_a_sentence():
    text = "First sentence here. Second one is longer than that. Third."
    assert compact(text, 100) == text
    assert compact(text, 10) == "First sentence here. …"
    assert compact("word " * 100, 10).endswith("…") and len(compact("word " * 100, 10)) <= 45
