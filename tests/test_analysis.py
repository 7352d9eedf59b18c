"""`lorekeeper analyze`: the figures it derives from the turn log, with and without prices."""

from __future__ import annotations

import pytest

from engine import ConfigError, load_config
from engine.analysis import analyze, render
from engine.config import Price
from engine.store import ToolCallRow


def call(agent: str, provider: str, model: str, tokens_in: int, tokens_out: int, cached: int = 0, latency: float = 100,
         stop: str = "end_turn", estimated: bool = False) -> dict:
    return {"agent": agent, "provider": provider, "model": model, "input_tokens": tokens_in, "output_tokens": tokens_out,
            "cache_read_tokens": cached, "latency_ms": latency, "stop_reason": stop, "estimated": estimated}


def turn(agent: str, model_calls: list[dict], calls=(), suggestions=(), checks=(), status="committed") -> dict:
    return {"agent": agent, "status": status, "channel_id": "c1", "model_calls": model_calls, "calls": list(calls),
            "suggestions": list(suggestions), "checks": list(checks)}


TURNS = [
    turn("narrative", [call("referee", "anthropic", "claude-x", 400, 30, latency=200),
                       call("narrative", "anthropic", "claude-x", 1000, 200, cached=3000, latency=900)],
         calls=[ToolCallRow("roll", {}, True, "", "", {})],
         suggestions=[{"tool": "roll", "confidence": 0.9}, {"tool": "update_hp", "confidence": 0.85}],
         checks=[{"rule": "damage_without_update_hp", "outcome": "corrected"}]),
    turn("combat", [call("combat", "openai", "gpt-y", 800, 100, latency=500),
                    call("combat", "openai", "gpt-y", 0, 0, latency=30000, stop="error: timed out")]),
    turn("npc", [call("npc", "local", "smollm2.gguf", 600, 80, latency=2000, estimated=True)], status="failed"),
    # logged before model calls named their agent: counts for the turn's
    turn("narrative", [{k: v for k, v in call("x", "anthropic", "claude-x", 100, 10).items() if k != "agent"}]),
]


def test_rows_per_agent_and_model_with_latency_cache_and_cost():
    a = analyze(TURNS, {"claude-x": Price(input=3.0, output=15.0, cache_read=0.3)})
    rows = {(r.agent, r.model): r for r in a.agents}
    narrative = rows["narrative", "claude-x"]
    assert (narrative.model_calls, narrative.input_tokens, narrative.output_tokens, narrative.cache_read_tokens) == (
        2, 1100, 210, 3000)
    assert narrative.cost_usd == pytest.approx((1100 * 3 + 210 * 15 + 3000 * 0.3) / 1e6)
    assert narrative.cache_hit_share == pytest.approx(3000 / 4100)
    assert rows["referee", "claude-x"].cost_usd == pytest.approx((400 * 3 + 30 * 15) / 1e6)  # its own row
    combat = rows["combat", "gpt-y"]
    assert combat.failed_calls == 1 and combat.cost_usd is None and combat.latency_p50 == pytest.approx(15250)
    assert rows["npc", "smollm2.gguf"].cost_usd == 0 and rows["npc", "smollm2.gguf"].estimated  # local: free
    assert a.turns_by_agent == {"narrative": 2, "combat": 1, "npc": 1} and a.failed_turns == 1
    assert a.unpriced == ["gpt-y"] and a.cost_usd == pytest.approx(sum(r.cost_usd or 0 for r in a.agents))
    assert a.high_confidence_use == 0.5 and a.verifier_misses == 1 and a.verifier_corrected == 1


def test_render_names_unpriced_models_and_estimates():
    text = render(analyze(TURNS, {"claude-x": Price(input=3.0, output=15.0)}))
    assert "no price configured for gpt-y" in text and "[prices]" in text
    assert "anthropic:claude-x" in text and "~ marks token counts the engine estimated" in text
    assert "p50 ms" in text and "cost $" in text
    no_prices = render(analyze(TURNS))
    assert "no price configured for claude-x, gpt-y" in no_prices


def test_prices_come_from_the_config(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[prices."claude-x"]\ninput = 3\noutput = 15\n', encoding="utf-8")
    assert load_config(path).prices["claude-x"].cost(1_000_000, 0, 1_000_000) == 6.0  # cached billed as input
    path.write_text('[prices."claude-x"]\ninput = -1\noutput = 15\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="input"):
        load_config(path)
    path.write_text('prices = 3\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[prices\] must be a table"):
        load_config(path)
