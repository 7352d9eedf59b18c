"""The turn pipeline's seams: tools that do I/O are awaited and reach the engine's Deps; stages run in order."""

from __future__ import annotations

import asyncio

import pytest

from engine import turn
from engine.state import AgentType
from engine.tools.registry import NARRATIVE, TOOLS, Args, ToolContext, tool


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

    stages = list(turn.STAGES)
    stages.insert(stages.index(turn.run), referee)
    monkeypatch.setattr(turn, "STAGES", tuple(stages))
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
