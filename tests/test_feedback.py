"""Debug-mode tool feedback: asked for in the turn's context only, hidden from players, parsed, checked, stored."""

from __future__ import annotations

import json

from engine.feedback import REQUEST
from tests.conftest import CHANNEL

GOOD = {"tools_used": [{"name": "roll", "purpose": "perception check", "success": True, "result_quality": "good"},
                       {"name": "discover_secret", "purpose": "reveal the glow", "success": True}],
        "tools_considered": [{"name": "search_lore", "reason_not_used": "the scene said enough"}],
        "limitations": [{"description": "no skill list on the sheet", "impact": "medium", "missing_capability": "field"}],
        "suggestions": [{"type": "new_tool", "priority": "high", "description": "an ability_check tool"}],
        "answer_quality": {"completeness": 85, "confidence": 70, "notes": "guessed the DC"}}


async def test_with_debug_on_the_agent_reports_and_players_never_see_it(table):
    await table.turn("I look around.", "Gulls.")
    plain = table.model.requests[-1]
    await table.engine.set_debug(CHANNEL, True)
    result = await table.turn("I watch the cliffs.",
                              "Roll for it. <roll>1d20+2</roll>",
                              f" You see a green glow. <tool_feedback>{json.dumps(GOOD)}</tool_feedback>")
    asked = table.model.requests[-2]
    assert REQUEST in asked.context and REQUEST not in plain.context
    assert asked.system == plain.system  # the cached system prompt is byte-identical with debug on or off
    assert result.reply == "Roll for it. You see a green glow." and "tool_feedback" not in result.reply
    session = await table.engine.session(CHANNEL)
    stored = (await table.store.turns(session.id))[-1]["feedback"]
    assert not stored["malformed"] and stored["feedback"]["answer_quality"]["confidence"] == 70
    assert stored["claimed_not_run"] == ["discover_secret"] and stored["run_not_reported"] == []
    report = await table.engine.last_feedback(CHANNEL)
    assert "completeness 85%" in report and "claims to have used, but the engine ran none of: discover_secret" in report


async def test_malformed_feedback_is_stored_as_such_and_costs_the_player_nothing(table):
    await table.engine.set_debug(CHANNEL, True)
    result = await table.turn("I wait.", 'Time passes. <tool_feedback>{"tools_used": oops}</tool_feedback>')
    assert result.reply == "Time passes." and not result.calls  # not run as a tool, no error observation
    session = await table.engine.session(CHANNEL)
    stored = (await table.store.turns(session.id))[-1]["feedback"]
    assert stored["malformed"] and "oops" in stored["raw"]
    assert "Malformed feedback" in await table.engine.last_feedback(CHANNEL)


async def test_with_debug_off_nothing_is_asked_or_stored(table):
    result = await table.turn("I wait.", f"Time passes. <tool_feedback>{json.dumps(GOOD)}</tool_feedback>")
    assert result.reply == "Time passes." and REQUEST not in table.model.requests[-1].context
    session = await table.engine.session(CHANNEL)
    assert (await table.store.turns(session.id))[-1]["feedback"] is None
    assert await table.engine.last_feedback(CHANNEL) is None


async def test_debug_precedence_action_then_channel_then_agent_then_config(table):
    from engine.basics import AgentType

    def asked() -> bool:
        return REQUEST in table.model.requests[-1].context

    def configure(*, agent=None, default=False):
        cfg = table.engine.deps.config
        agents = dict(cfg.agents)
        agents[AgentType.NARRATIVE] = cfg.agent(AgentType.NARRATIVE).model_copy(update={"debug": agent})
        table.engine.deps.config = cfg.model_copy(update={"agents": agents, "turn": cfg.turn.model_copy(update={"debug": default})})

    async def turn(debug=None) -> bool:
        table.model.add("Fine.")
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I wait.", debug=debug)
        assert result.debug == asked()
        return asked()

    assert await turn() is False  # nothing decides: the config's default (off)
    configure(default=True)  # LOREKEEPER_DEBUG=true
    assert await turn() is True
    configure(agent=False, default=True)  # the agent's setting outranks the default
    assert await turn() is False
    await table.engine.set_debug(CHANNEL, True)  # the channel's switch outranks the agent's
    assert await turn() is True and await table.engine.debug(CHANNEL)
    await table.engine.set_debug(CHANNEL, False)  # "off" is a decision, unlike "never set"
    configure(agent=True)
    assert await turn() is False
    assert await turn(debug=True) is True  # one action's choice outranks them all
    await table.engine.set_debug(CHANNEL, True)
    assert await turn(debug=False) is False
