"""The turn pipeline's seams: tools that do I/O are awaited and reach the engine's Deps; stages run in order."""

from __future__ import annotations

import asyncio

import pytest

from engine import stages, turn
from engine.basics import AgentType
from engine.tools.registry import NARRATIVE, TOOLS, Args, ToolContext, tool

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on SQLite and on PostgreSQL


class ConsultArgs(Args):
    topic: str
    fail: bool = False


async def consult(ctx: ToolContext, args: ConsultArgs) -> str:
    """Look something up in a source the engine was given (a stand-in for the lore index)."""
    await asyncio.sleep(0)  # real I/O would be here
    ctx.state.locations[ctx.state.current_location].flags["consulted"] = True
    if args.fail:
        raise RuntimeError("the index is unreachable")
    return f"The {ctx.deps.corpus_dir.name} says: {args.topic} is old."


@pytest.fixture
def consult_tool():
    tool(example='<consult topic="x"/>', agents={NARRATIVE}, changes_state=True, body="topic")(consult)
    yield
    del TOOLS["consult"]


async def test_an_async_tool_is_awaited_with_the_engines_deps(table, consult_tool):
    result = await table.turn("What do the books say?", "Let me see. <consult>the lantern</consult>", " Ah.")
    [call] = result.calls
    assert call.ok and call.observation == "The corpus says: the lantern is old."
    assert (await table.state()).locations["saltmere-quay"].flags["consulted"] is True


async def test_an_async_tool_that_fails_changes_nothing(table, consult_tool):
    result = await table.turn("What do the books say?", 'Hm. <consult topic="x" fail="true"/>', " Nothing.")
    [call] = result.calls
    assert not call.ok and "failed unexpectedly" in call.observation
    assert "consulted" not in (await table.state()).locations["saltmere-quay"].flags


async def test_a_new_stage_is_one_function_in_the_list(table, monkeypatch):
    seen = []

    async def referee(t: turn.Turn, deps) -> None:  # e.g. a rules referee, between context and run
        seen.append((t.route.agent, t.request is not None, t.reply))

    listed = list(stages.STAGES)
    listed.insert(listed.index(stages.run), referee)
    monkeypatch.setattr(stages, "STAGES", tuple(listed))
    await table.turn("I look around.", "Gulls.")
    assert seen == [(AgentType.NARRATIVE, True, "")]


def test_every_agent_is_declared_once_and_everything_reads_that_list(tmp_path):
    from engine.agents import AGENTS
    from engine.config import load_config
    from engine.errors import ConfigError

    assert set(AGENTS) == set(AgentType) - {AgentType.PLAYER}
    config = load_config()
    for agent, entry in AGENTS.items():
        settings = config.agent(agent)
        assert settings.max_tokens > 0 and (entry.speaks or entry.history == "none")
    bad = tmp_path / "c.toml"
    bad.write_text("[agents.oracle]\ntemperature = 0.5\n")
    with pytest.raises(ConfigError) as refused:
        load_config(bad)
    assert "unknown agent(s) oracle" in refused.value.message
    assert all(a.value in refused.value.message for a in AGENTS)  # the message is built from the list


async def test_players_read_each_change_whole_and_without_internal_ids(table):
    from engine.state import Participant
    from tests.conftest import CHANNEL

    state = await table.state()
    state.combat.active, state.combat.round = True, 1
    state.combat.order = [Participant(id="u1", name="Aria", faction="player", initiative=15, ac=16),
                          Participant(id="rat-1", name="Giant Rat 1", faction="enemy", initiative=5, ac=1, hp=1, max_hp=7)]
    session = await table.engine.session(CHANNEL)
    await table.store.save_state(session.id, state)
    hit = await table.turn("I stab the rat.", '<attack target="Giant Rat 1" weapon="longsword"/>', "It squeaks its last.")
    [line] = hit.mechanics()
    assert line.startswith("🎲 Aria attacks Giant Rat 1 with longsword: 1d20+5 →") and line.endswith("Giant Rat 1 is defeated.")
    state = await table.state()
    state.combat.active = False
    await table.store.save_state(session.id, state)
    quest = await table.turn("We accept.", '<start_quest quest="relight-the-lantern"/>',
                             ' Ysolde nods. <complete_objective quest="relight-the-lantern" objective="learn-the-thief"/>',
                             " Good.")
    started, done = quest.mechanics()
    assert started.startswith("• Quest started: The Drowned Lantern (active). ☐ Discover who stole")
    assert done == "• Objective done (The Drowned Lantern): Discover who stole the lantern from Gannet Rock."
    assert "relight-the-lantern" not in " ".join(quest.mechanics()) and "learn-the-thief" not in " ".join(quest.mechanics())
    agent_saw = [c.observation for c in quest.calls]
    assert "id relight-the-lantern" in agent_saw[0] and "Still to do:" in agent_saw[1]  # the agent keeps its ids
    moved = await table.turn("We go to the tavern.", '<change_location location="brine-cup-tavern"/>', " Warmth.")
    assert moved.mechanics() == ["• The party arrives at The Brine Cup."]  # a plain tool: its first sentence


async def test_a_turn_that_changes_nothing_makes_no_deep_copy_and_one_that_does_leaves_the_old_state_whole(
        table, consult_tool, monkeypatch):
    from engine.state import GameState

    clones = []
    real = GameState.clone
    monkeypatch.setattr(GameState, "clone", lambda self: clones.append(1) or real(self))
    before = await table.state()
    result = await table.turn("I look around.", "Gulls wheel over the quay. <roll>1d20</roll>", " Nothing stirs.")
    assert result.calls[0].ok and clones == []  # a roll changes nothing: the working copy stayed shallow
    assert result.state.characters is before.characters and result.state.turn == before.turn + 1

    loaded = await table.state()
    result = await table.turn("What do the books say?", "Let me see. <consult>the lantern</consult>", " Ah.")
    assert clones == [1] and result.state.locations["saltmere-quay"].flags["consulted"] is True
    assert "consulted" not in loaded.locations["saltmere-quay"].flags  # the state it was played from: untouched


async def test_a_tool_that_changes_the_game_without_saying_so_is_caught(table, monkeypatch):
    # Tests play every turn with LOREKEEPER_CHECK_SHARED_STATE=1: a tool that claims to change nothing but does
    # would change the store's shared copy, so the turn is stopped and the test fails loudly.
    async def sly(ctx: ToolContext, args: ConsultArgs) -> str:
        ctx.state.locations[ctx.state.current_location].flags["sly"] = True
        return "done"

    tool(example='<sly topic="x"/>', agents={NARRATIVE}, changes_state=False, body="topic")(sly)
    try:
        with pytest.raises(AssertionError, match="changed the state it was played from"):
            await table.turn("I look around.", "Hm. <sly>x</sly>", " Yes.")
    finally:
        del TOOLS["sly"]


async def test_a_failing_tool_on_a_shallow_working_copy_puts_the_shared_state_back(table, consult_tool):
    loaded = await table.state()
    result = await table.turn("What do the books say?", 'Hm. <consult topic="x" fail="true"/>', " Nothing.")
    assert not result.calls[0].ok
    # Put back as it was: still sharing the state it was played from (nothing was copied for good) and unchanged.
    assert result.state.locations is loaded.locations and "consulted" not in loaded.locations["saltmere-quay"].flags


async def test_the_party_in_the_context_follows_every_change_to_a_sheet(table):
    # Sheets of characters as saved are made once and kept; a changed character is a new object, so its sheet
    # in the next turn's context is made afresh.
    await table.turn("I look around.", "Gulls.")
    await table.turn("I look around.", "Gulls again.")
    await table.turn("A nail!", 'Ouch. <update_hp target="Aria" amount="3" kind="damage"/>', " It stings.")
    hp = (await table.state()).characters["u1"].hp
    result = await table.turn("I look around.", "Gulls.")
    [party_line] = [line for line in result.request.context.splitlines() if line.startswith("- Aria,")]
    assert f"HP {hp}/" in party_line and hp < (await table.state()).characters["u1"].max_hp
