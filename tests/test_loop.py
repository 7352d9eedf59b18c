"""The tool loop against the scripted model: interruption, continuation, limits and faults."""

from __future__ import annotations

import json

import pytest

from engine.errors import ModelError
from engine.loop import Limits, run_agent
from engine.models import ModelRequest, ScriptedModel
from engine.basics import AgentType
from tests.conftest import ctx_for


def request(agent: AgentType = AgentType.NARRATIVE, stop: list[str] | None = None) -> ModelRequest:
    return ModelRequest(agent=agent, model="m", system="sys", context="ctx", messages=[], stop=stop or [])


async def run(model, state, agent=AgentType.NARRATIVE, limits=Limits(), npc=None, stop=None, sleeps=None):
    async def sleep(seconds):
        if sleeps is not None:
            sleeps.append(seconds)

    return await run_agent(model, request(agent, stop), ctx_for(state, agent=agent, npc=npc), limits, sleep)


async def test_stops_generation_at_the_tag_and_continues_with_the_observation(state):
    model = ScriptedModel(["You try. <roll>1d20</roll> THIS IS NEVER SEEN", " A fine result."], chunk_size=4)
    result = await run(model, state)
    assert model.closed_early == 1  # the first stream was cancelled right after the tag
    assert result.reply == "You try. A fine result."
    prefill = model.requests[1].prefill
    assert prefill.startswith("You try. <roll>1d20</roll><observation>1d20 →") and prefill.endswith("</observation>")
    assert "NEVER" not in result.transcript


async def test_tag_split_across_many_chunks(state):
    model = ScriptedModel([["Hm. <up", "date_hp tar", 'get="Aria" amo', 'unt="4"', "/", "> tail"], "Ouch."])
    result = await run(model, state)
    assert [c.name for c in result.calls] == ["update_hp"] and result.calls[0].ok
    assert state.characters["u1"].hp == state.characters["u1"].max_hp - 4
    assert result.reply == "Hm. Ouch."


async def test_two_tags_in_one_reply_run_in_order(state):
    model = ScriptedModel(['Gulp. <roll>2d4+2</roll> rest ignored', ' <modify_inventory item="healing potion" quantity="-1"/>', " Better."])
    result = await run(model, state)
    assert [c.name for c in result.calls] == ["roll", "modify_inventory"] and all(c.ok for c in result.calls)
    assert state.characters["u1"].item("healing potion") is None
    assert len(model.requests) == 3 and "<roll>2d4+2</roll><observation>" in model.requests[2].prefill


async def test_quota_exhaustion_is_told_and_the_agent_must_finish(state):
    model = ScriptedModel(["<roll>1</roll>", "<roll>2</roll>", "<roll>3</roll>", "Done <roll>4</roll> really."])
    result = await run(model, state, limits=Limits(tool_quota=2))
    assert [c.ok for c in result.calls] == [True, True, False]
    assert "limit of 2 tool calls" in result.calls[2].observation
    # the final round runs to its end with tags stripped and not executed
    assert result.reply == "Done really." and model.closed_early == 3


async def test_round_cap_counts_failed_tags_too(state):
    model = ScriptedModel(["<nope/>", "<nope/>", "<nope/>", "Giving up."])
    result = await run(model, state, limits=Limits(max_rounds=3))
    assert len(result.calls) == 3 and not any(c.ok for c in result.calls)
    assert "last tool call this turn" in result.calls[-1].observation
    assert result.reply == "Giving up."


async def test_malformed_unclosed_and_unknown_tags_get_error_observations(state):
    model = ScriptedModel(['<modify_inventory item=rope/>', "<roll>1d20", "<fly>up</fly>", "Fine."])
    before = state.model_dump()
    result = await run(model, state)
    kinds = [c.observation for c in result.calls]
    assert "quotes" in kinds[0] and "never closed" in kinds[1] and "no tool called 'fly'" in kinds[2]
    assert state.model_dump() == before and result.reply == "Fine."


async def test_disallowed_tool_for_the_npc_agent(state):
    model = ScriptedModel(['"To arms!" <start_combat encounter="wreckers-ambush"/>', ' "Well, not me."'])
    before = state.model_dump()
    result = await run(model, state, agent=AgentType.NPC, npc="ysolde-marrick")
    assert "not available to the npc agent" in result.calls[0].observation
    assert state.model_dump() == before


async def test_invented_observation_ends_the_reply(state):
    model = ScriptedModel(["I rolled <observation>20</observation> so I win"])
    result = await run(model, state)
    assert result.reply == "I rolled" and result.calls == []


async def test_stop_sequence_closes_the_tag_the_provider_cut(state):
    model = ScriptedModel(["Roll! <roll>1d6</roll> unseen", " Done."])
    result = await run(model, state, stop=["<observation>", "</roll>"])
    assert result.calls[0].ok and result.calls[0].args == {"expression": "1d6"}
    assert result.reply == "Roll! Done."


async def test_followup_messages_when_the_provider_cannot_prefill(state):
    model = ScriptedModel(["A <roll>1d4</roll>", " B"], supports_prefill=False)
    result = await run(model, state)
    second = model.requests[1]
    assert second.prefill == ""
    assert [m.role for m in second.messages] == ["assistant", "user"]
    assert second.messages[0].content == "A <roll>1d4</roll>"
    assert second.messages[1].content.startswith("<observation>1d4 →") and "Continue your reply" in second.messages[1].content
    assert result.reply == "A B"


async def test_retryable_errors_are_retried_with_backoff_then_succeed(state):
    model = ScriptedModel([ModelError("429", retryable=True, retry_after=3), ModelError("503", retryable=True), "Hello."])
    sleeps: list[float] = []
    result = await run(model, state, sleeps=sleeps)
    assert result.reply == "Hello." and sleeps == [3, 2.0]
    # every attempt was a request, so every attempt is accounted
    assert [(c.attempts, c.stop_reason[:6]) for c in result.model_calls] == [(1, "error:"), (2, "error:"), (3, "end")]


async def test_retries_are_bounded_and_fatal_errors_are_not_retried(state):
    model = ScriptedModel([ModelError("boom", retryable=True)] * 3)
    with pytest.raises(ModelError):
        await run(model, state)
    assert len(model.requests) == 3
    bad_key = ScriptedModel([ModelError("bad key"), "never"])
    with pytest.raises(ModelError):
        await run(bad_key, state)
    assert len(bad_key.requests) == 1


async def test_every_generation_is_accounted(state):
    model = ScriptedModel(["x <roll>1d4</roll>", " y"])
    result = await run(model, state)
    assert [c.stop_reason for c in result.model_calls] == ["tool_tag", "end"]
    assert all(c.provider == "scripted" and c.input_tokens > 0 and c.estimated for c in result.model_calls)


async def test_the_finishing_round_is_not_cut_at_a_closing_tag_stop(state):
    model = ScriptedModel(["You try. <roll>1d20</roll>", " It works<roll>1d4</roll>, and the door swings open."])
    result = await run(model, state, limits=Limits(max_rounds=1), stop=["<observation>", "</roll>"])
    assert "</roll>" not in model.requests[1].stop and "<observation>" in model.requests[1].stop
    assert result.reply == "You try. It works, and the door swings open."


async def test_a_generation_that_never_ends_is_bounded(state):
    model = ScriptedModel(["slow " * 400] * 3, chunk_size=1, latency=0.001)
    with pytest.raises(ModelError, match="took longer than"):
        await run(model, state, limits=Limits(generation_timeout=0.05))
    assert model.closed_early == 3  # each attempt was cut off and cancelled


async def test_the_visible_reply_streams_as_it_grows_and_never_shows_a_tag_or_its_body(state):
    seen: list[str] = []
    model = ScriptedModel(["You try. <roll>1d20+2</roll> NEVER", " A fine <i>result</i>. <thinking>hm</thinking>Done."],
                          chunk_size=3)
    result = await run_agent(model, request(), ctx_for(state), Limits(), show=seen.append)
    assert seen and all(b.startswith(a) for a, b in zip(seen, seen[1:]))  # only ever grows
    assert len(seen) > 5  # in many steps, not once at the end
    assert not any("<" in s or "1d20" in s or "hm" in s or "NEVER" in s for s in seen)
    assert " ".join(seen[-1].split()) == "You try. A fine result. Done."  # emphasis dropped while streaming
    assert result.reply == "You try. A fine *result*. Done."  # and made markdown in the committed reply


async def test_a_retried_generation_starts_its_part_again(state):
    seen: list[str] = []
    model = ScriptedModel([["Half a ", ModelError("cut", retryable=True)], "The whole reply."], chunk_size=50)

    async def no_sleep(_: float) -> None:
        return None

    result = await run_agent(model, request(), ctx_for(state), Limits(), no_sleep, show=seen.append)
    assert "Half a " in seen and seen[-1] == "The whole reply." == result.reply


def test_a_model_calls_record_is_its_fields_as_plain_values():
    from dataclasses import asdict

    from engine.loop import ModelCall

    call = ModelCall("openai", "gpt-test", 120, 30, 0, False, 812.5, "end", attempts=2, agent="narrative")
    record = call.as_record()
    assert record == asdict(call) and json.loads(json.dumps(record)) == record
    record["input_tokens"] = 0  # a copy: the turn log's record does not change the call's accounting
    assert call.input_tokens == 120
