"""Lore in the turn: passages in the context, citations out of the prose, GM-only lore never retrieved."""

from __future__ import annotations

import threading

import pytest

from engine.lore.embed import MiniLM
from engine.lore.index import LoreIndex
from engine.lore.retrieval import cite, compact, sources_line
from engine.basics import AgentType
from tests.conftest import CHANNEL, make_table

TAVERN = """# The Brine Cup
## Wrack Stout
Odile Farrow brews a dark ale called Wrack Stout from kelp and burnt barley; a mug costs two copper pieces.

## The Cellar Door (GM only)
Behind the third cask in the cellar a door opens on the tide tunnel.

## The Harbor Bell
A bronze bell on the quay, cast in 1022 and rung three times in fog.

## The Green Glow (GM only: green-glimmer)
A faint green glow pulses below the north cliff after dark; the harbormaster has watched it twice from the quay.
"""

RULES = """# Combat
## Critical Hits
When an attack roll shows a natural 20, the attack hits and its damage dice are rolled twice.

## Ranged Attacks While Prone
A prone creature cannot make a ranged weapon attack with a crossbow or a bow; it must stand up first, which
costs half its movement.
"""

PEOPLE = """# People of Saltmere
## Ysolde Marrick's Youth
Ysolde Marrick, the harbormaster, grew up on Net Lane and speaks in clipped sea-captain orders; she hates waste
and keeps a ledger of every boat that leaves the harbor.
"""


def set_grounding(table, **on: bool) -> None:
    from engine.config import AgentSettings

    cfg = table.engine.deps.config
    agents = dict(cfg.agents)
    for name, enabled in on.items():
        agent = AgentType(name)
        agents[agent] = cfg.agent(agent).model_copy(update={"enabled": enabled})
    table.engine.deps.config = cfg.model_copy(update={"agents": agents})
    assert all(isinstance(a, AgentSettings) for a in agents.values())


@pytest.fixture(scope="module")
def embedder():
    return MiniLM()


@pytest.fixture
async def lore_table(tmp_path, embedder):
    corpus = tmp_path / "corpus"
    (corpus / "adventures" / "saltmere-lantern" / "lore").mkdir(parents=True)
    (corpus / "adventures" / "saltmere-lantern" / "lore" / "tavern.md").write_text(TAVERN)
    (corpus / "adventures" / "saltmere-lantern" / "lore" / "people.md").write_text(PEOPLE)
    (corpus / "world" / "sundered-coast" / "rules").mkdir(parents=True)
    (corpus / "world" / "sundered-coast" / "rules" / "combat.md").write_text(RULES)
    (corpus / "world" / "elsewhere").mkdir(parents=True)  # another world's lore: never this game's
    (corpus / "world" / "elsewhere" / "ale.md").write_text("# Ales\n## Glimmer Ale\nA dark ale brewed by Odile's rival.\n")
    index = LoreIndex(tmp_path / "lore", embedder=embedder)
    index.ingest(corpus)
    t, ctx = await make_table(tmp_path / "g.db")
    t.engine.deps.lore = index
    set_grounding(t, referee=False, planner=False, persona=False)  # each test of them switches its own on
    yield t
    await ctx.__aexit__(None, None, None)


def number_of(text: str, heading: str) -> int:
    """The citation number a passage got in a context or an observation."""
    import re

    return int(re.search(rf"\[(\d+)\] {re.escape(heading)}", text).group(1))


async def test_passages_are_numbered_in_the_context_and_citations_become_sources(lore_table):
    def reply(request):
        n = number_of(request.context, "The Brine Cup › Wrack Stout")
        return f"She pours Wrack Stout [{n}], dark as the sea [{n}]."

    result = await lore_table.turn("What ale does Odile brew here?", reply)
    context = lore_table.model.requests[-1].context
    assert "## Lore" in context and "kelp and burnt barley" in context
    system = lore_table.model.requests[-1].system
    assert "## Lore" not in system and "kelp" not in system  # never in the cached system prompt
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


async def test_lore_tied_to_a_secret_reaches_those_who_know_it_and_everyone_once_found(lore_table):
    question = "what is the green glow pulsing below the north cliff after dark?"
    await lore_table.turn(f"I ask around: {question}", "Nobody knows.")
    assert "watched it twice" not in lore_table.model.requests[-1].context  # the narrator: not discovered yet
    def telling(request):
        n = number_of(request.context, "The Brine Cup › The Green Glow")
        return f"\"I have seen it [{n}],\" she says."

    told = await lore_table.turn(f"@Ysolde {question}", telling)
    npc = lore_table.model.requests[-1]
    assert npc.agent is AgentType.NPC and "watched it twice" in npc.context  # Ysolde knows green-glimmer
    assert told.sources == [] and told.reply == "\"I have seen it,\" she says."  # its title is not named to players
    session = await lore_table.engine.session(CHANNEL)
    assert [r["sources"] for r in await lore_table.store.turns(session.id)][-1][0].startswith(
        "adventure:saltmere-lantern:the-brine-cup.the-green-glow")  # the record keeps the citation
    await lore_table.turn("@Ysolde Will you tell me what you saw?", '<discover_secret secret="green-glimmer"/>',
                          " \"A green glow below the cliff.\"")  # she tells it: a check finds it otherwise (DC 12)
    await lore_table.turn(f"Now, {question}", "It is the glow you saw.")
    assert "watched it twice" in lore_table.model.requests[-1].context  # found: no longer a secret


async def test_when_no_lore_is_relevant_the_narrator_is_told_to_say_it_improvises(lore_table):
    cfg = lore_table.engine.deps.config  # nothing in this tiny corpus is this close to a tune
    lore_table.engine.deps.config = cfg.model_copy(update={"lore": cfg.lore.model_copy(update={"min_similarity": 0.8,
                                                                                              "min_bm25": 50.0})})
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


# -- the lore tools --------------------------------------------------------------------------------------------------

async def tool_ctx(table):
    from engine.tools import ToolContext

    state = await table.state()
    return ToolContext(state, __import__("random").Random(1), AgentType.NARRATIVE, "u1", deps=table.engine.deps)


async def run_tag(ctx, tag):
    from engine.tags import TagScanner
    from engine.tools import TOOLS, arun_tool

    scanner = TagScanner(TOOLS)
    event = scanner.feed(tag) or scanner.finish()
    return await arun_tool(event, ctx)


async def test_get_lore_slice_validates_names_and_suggests_the_nearest(lore_table):
    async def run(tag):  # a fresh turn each time: the lore quota is not what this test is about
        return await run_tag(await tool_ctx(lore_table), tag)

    ok = await run('<get_lore_slice scope="adventure" ref="saltmere-lantern" slice="the-brine-cup.wrack-stout"/>')
    assert ok.ok and ok.persistence == "turn" and "kelp and burnt barley" in ok.observation
    assert "adventure:saltmere-lantern:the-brine-cup.wrack-stout" in ok.observation and "hash " in ok.observation
    assert ok.meta["tokens"] > 0 and ok.meta["cache_hit"] is False
    wrong = await run('<get_lore_slice scope="adventure" ref="saltmere-lantern" slice="the-brine-cup.wrack-stoutt"/>')
    assert not wrong.ok and "nearest are: the-brine-cup.wrack-stout" in wrong.observation
    other = await run('<get_lore_slice scope="world" ref="elsewhere" slice="ales.glimmer-ale"/>')
    assert not other.ok and 'ref="sundered-coast"' in other.observation  # another world's lore is not this game's
    path = await run('<get_lore_slice scope="world" ref="../../etc" slice="passwd"/>')
    assert not path.ok and "bad arguments" in path.observation
    scope = await run('<get_lore_slice scope="rules" ref="sundered-coast" slice="combat"/>')
    assert not scope.ok and "bad arguments" in scope.observation
    secret = await run('<get_lore_slice scope="adventure" ref="saltmere-lantern" slice="the-brine-cup.the-cellar-door"/>')
    assert not secret.ok and "tide tunnel" not in secret.observation  # GM-only: not there for any agent
    parent = await run('<get_lore_slice scope="world" ref="sundered-coast" slice="combat"/>')
    assert parent.ok and "## Critical Hits" in parent.observation  # a heading without text gives its subsections


async def test_get_lore_slice_compacts_within_bounds_and_caches_until_the_text_changes(lore_table, tmp_path):
    from engine.lore.slices import compact

    index = lore_table.engine.deps.lore
    long_text = "# Tides\n## Tide Tables\n" + " ".join(f"On day {n} the tide stands {n % 9} feet at noon." for n in range(300))
    corpus = tmp_path / "corpus"
    (corpus / "world" / "sundered-coast" / "tides.md").write_text(long_text)
    index.ingest(corpus)
    ctx = await tool_ctx(lore_table)
    tag = '<get_lore_slice scope="world" ref="sundered-coast" slice="tides.tide-tables" max_tokens="5"/>'
    floor = await run_tag(ctx, tag)
    assert floor.ok and 60 <= floor.meta["tokens"] <= 80  # never below min_tokens (80), cut at a sentence
    assert floor.observation.rstrip().endswith("feet at noon. …")
    ctx = await tool_ctx(lore_table)
    capped = await run_tag(ctx, tag.replace('"5"', '"100000"'))
    assert capped.ok and capped.meta["tokens"] <= 350  # never above max_return_tokens
    again = await run_tag(ctx, tag.replace('"5"', '"100000"'))
    assert again.meta["cache_hit"] is True and again.observation == capped.observation
    index.slice_cache.clock = lambda: 10**9  # past the TTL: made again (and the same, deterministically)
    later = await run_tag(await tool_ctx(lore_table), tag.replace('"5"', '"100000"'))
    assert later.meta["cache_hit"] is False and later.observation == capped.observation
    (corpus / "world" / "sundered-coast" / "tides.md").write_text(long_text.replace("at noon", "at dusk"))
    index.ingest(corpus)  # the slice's hash changes: the cached entry is not used
    changed = await run_tag(await tool_ctx(lore_table), tag.replace('"5"', '"100000"'))
    assert changed.meta["cache_hit"] is False and "at dusk" in changed.observation
    assert compact("One. Two.", 100) == "One. Two."


async def test_lore_calls_have_their_own_quota_and_a_refusal_costs_no_general_quota(lore_table):
    cfg = lore_table.engine.deps.config
    lore_table.engine.deps.config = cfg.model_copy(update={"turn": cfg.turn.model_copy(update={"tool_quota": 3})})
    slice_tag = '<get_lore_slice scope="adventure" ref="saltmere-lantern" slice="the-brine-cup.the-harbor-bell"/>'
    result = await lore_table.turn("Tell me of the bell.", f"Let me look. {slice_tag}", f" And {slice_tag}",
                                   f" Once more {slice_tag}", " Roll: <roll>1d20</roll>", " Done.")
    ok = [c.ok for c in result.calls]
    assert [c.name for c in result.calls] == ["get_lore_slice", "get_lore_slice", "get_lore_slice", "roll"]
    assert ok == [True, True, False, True]  # the third look-up was refused; the roll still fit in the quota of 3
    assert "limit of 2 lore look-ups" in result.calls[2].observation and result.calls[2].meta["denied"]
    stats = (await lore_table.engine.telemetry(CHANNEL))["lore"]
    assert stats["calls"] == 3 and stats["denied"] == 1 and stats["tokens_returned"] > 0
    assert stats["cache_hit_ratio"] == 0.5  # the second look-up of the same slice came from the cache


async def test_search_lore_numbers_passages_after_the_turns_own_and_they_can_be_cited(lore_table):
    given = []

    def reply(request):  # the continuation sees its passages and the search's, numbered on from them
        stout = number_of(request.context, "The Brine Cup › Wrack Stout")
        crit = number_of(request.prefill, "Combat › Critical Hits")
        given.append((stout, crit, len(request.context.split("\n[")) - 1))
        return f" Stout [{stout}], and a twenty doubles the dice [{crit}]."

    result = await lore_table.turn("What ale does Odile brew?",
                                   "Hm. <search_lore>critical hit natural twenty damage</search_lore>", reply)
    [call] = result.calls
    [(stout, crit, in_context)] = given
    assert call.ok and call.observation.startswith("Lore passages") and crit == in_context + 1  # numbered on
    assert result.reply == "Hm. Stout, and a twenty doubles the dice."
    assert [s.address for s in result.sources] == ["adventure:saltmere-lantern:the-brine-cup.wrack-stout",
                                                   "world:sundered-coast:combat.critical-hits"]
    gm_only = await run_tag(await tool_ctx(lore_table), "<search_lore>door behind the third cask tide tunnel</search_lore>")
    assert "opens on the tide tunnel" not in gm_only.observation


async def test_one_embedding_a_turn_is_shared_and_a_busy_embedder_slows_no_turn(lore_table, monkeypatch):
    """The lore search, the recall and the game's memory use the turn's one embedding of the player's words; when
    too many wait for the embedder, the turn goes on with words alone (and no recall) instead of waiting."""
    import asyncio
    import threading

    index = lore_table.engine.deps.lore
    embedded: list[list[str]] = []
    real = index.embedder.embed

    def counting(texts, limit=None):
        embedded.append(list(texts))
        return real(texts, limit)

    monkeypatch.setattr(index.embedder, "embed", counting)
    await lore_table.turn("What ale does Odile brew here?", "Wrack Stout.")
    assert embedded == [["What ale does Odile brew here?"]]  # once, for everything
    session = await lore_table.engine.session(CHANNEL)
    [vector] = [r[0] for r in await lore_table.store.driver.read(_vectors(session.id))]
    assert len(vector) == 768  # kept with the turn for the memory (float16): no second embedding

    release = threading.Event()

    def stuck(texts, limit=None):
        release.wait(10)
        return real(texts, limit)

    monkeypatch.setattr(index.embedder, "embed", stuck)
    monkeypatch.setattr(index.queries, "busy_after", 1)
    waiting = asyncio.create_task(index.queries.embed("something else entirely"))
    await asyncio.sleep(0.05)
    result = await lore_table.turn("What ale does Odile brew here?", "Wrack Stout again.")
    release.set()
    await waiting
    assert result.reply == "Wrack Stout again." and index.queries.skipped == 1
    assert "## Lore" in lore_table.model.requests[-1].context  # the lore was still searched, by its words


def _vectors(session_id):
    from engine.store.sql import rows

    return (yield rows("SELECT vector FROM memory_vectors WHERE session_id = ? ORDER BY turn_id", session_id))
