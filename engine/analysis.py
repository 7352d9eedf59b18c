"""`lorekeeper analyze`: what the turn log says about tools, suggestions, verification and cost (seed 000).

Typed results (dataclasses), rendered as plain tables for the terminal and for /gm-admin telemetry.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping

from .config import Price

HIGH = 0.8  # a suggestion at this confidence or more is "high confidence"


@dataclass
class ToolRow:
    tool: str
    suggested: int = 0  # turns in which it was suggested
    suggested_high: int = 0
    used_when_suggested: int = 0  # of those turns, how many called it
    used_when_high: int = 0
    called: int = 0  # calls, ok or not
    errors: int = 0


@dataclass
class AgentRow:
    """One agent's use of one model: calls, tokens, cache, latency and what it cost."""

    agent: str
    provider: str = ""
    model: str = ""
    model_calls: int = 0
    failed_calls: int = 0  # requests that ended in a provider error (each retry is a request)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    estimated: bool = False  # some counts are the engine's estimate (the provider reported no usage)
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    cost_usd: float | None = None  # None: no price is configured for this model

    @property
    def latency_p50(self) -> float | None:
        return statistics.median(self.latencies_ms) if self.latencies_ms else None

    @property
    def latency_p95(self) -> float | None:
        if not self.latencies_ms:
            return None
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]

    @property
    def cache_hit_share(self) -> float | None:
        """Cached input tokens as a share of all input tokens."""
        total = self.input_tokens + self.cache_read_tokens
        return self.cache_read_tokens / total if total else None


@dataclass
class Analysis:
    turns: int = 0
    failed_turns: int = 0
    channels: int = 0
    tools: list[ToolRow] = field(default_factory=list)
    agents: list[AgentRow] = field(default_factory=list)
    turns_by_agent: dict[str, int] = field(default_factory=dict)
    verifier_misses: int = 0
    verifier_corrected: int = 0
    lore_denials: int = 0
    misses_by_rule: dict[str, int] = field(default_factory=dict)

    @property
    def high_confidence_use(self) -> float | None:
        """Share of high-confidence suggestions the agent followed (seed 000's target: at least 60%)."""
        made = sum(t.suggested_high for t in self.tools)
        return sum(t.used_when_high for t in self.tools) / made if made else None

    @property
    def misses_per_100_turns(self) -> float:
        return 100 * self.verifier_misses / self.turns if self.turns else 0.0

    @property
    def cost_usd(self) -> float:
        """The cost of the priced models' calls (see `unpriced` for the rest)."""
        return sum(r.cost_usd or 0.0 for r in self.agents)

    @property
    def unpriced(self) -> list[str]:
        return sorted({r.model or r.provider for r in self.agents if r.cost_usd is None})


def _price(prices: Mapping[str, Price], provider: str, model: str) -> Price | None:
    if model in prices:
        return prices[model]
    return Price(input=0, output=0) if provider == "local" else None  # a model on your machine bills nothing


def analyze(turns: list[dict[str, Any]], prices: Mapping[str, Price] | None = None) -> Analysis:
    """What the turn log says. `prices` (the config's [prices]) turns token counts into dollars."""
    prices = prices or {}
    result = Analysis(turns=len(turns), failed_turns=sum(t["status"] == "failed" for t in turns),
                      channels=len({t["channel_id"] for t in turns}))
    tools: dict[str, ToolRow] = {}
    agents: dict[tuple[str, str, str], AgentRow] = {}
    for t in turns:
        called = {c.name for c in t["calls"]}
        for c in t["calls"]:
            row = tools.setdefault(c.name, ToolRow(c.name))
            row.called += 1
            row.errors += 0 if c.ok else 1
            result.lore_denials += 1 if c.meta.get("denied") else 0
        for s in t["suggestions"]:
            row = tools.setdefault(s["tool"], ToolRow(s["tool"]))
            high = s["confidence"] >= HIGH
            row.suggested += 1
            row.suggested_high += 1 if high else 0
            if s["tool"] in called:
                row.used_when_suggested += 1
                row.used_when_high += 1 if high else 0
        for check in t["checks"]:
            result.verifier_misses += 1
            result.verifier_corrected += 1 if check.get("outcome") == "corrected" else 0
            result.misses_by_rule[check["rule"]] = result.misses_by_rule.get(check["rule"], 0) + 1
        for m in t["model_calls"]:
            # A turn's model calls may be of several agents (a referee, then the narrator): each call says whose
            # it was; calls logged before calls named their agent count for the turn's.
            key = (m.get("agent") or t["agent"], m.get("provider", ""), m.get("model", ""))
            row = agents.get(key) or agents.setdefault(key, AgentRow(*key))
            row.model_calls += 1
            row.failed_calls += 1 if str(m.get("stop_reason", "")).startswith("error") else 0
            row.input_tokens += m.get("input_tokens", 0)
            row.output_tokens += m.get("output_tokens", 0)
            row.cache_read_tokens += m.get("cache_read_tokens", 0)
            row.estimated = row.estimated or bool(m.get("estimated"))
            if "latency_ms" in m:
                row.latencies_ms.append(float(m["latency_ms"]))
        result.turns_by_agent[t["agent"]] = result.turns_by_agent.get(t["agent"], 0) + 1
    for row in agents.values():
        price = _price(prices, row.provider, row.model)
        row.cost_usd = None if price is None else price.cost(row.input_tokens, row.output_tokens, row.cache_read_tokens)
    result.tools = sorted(tools.values(), key=lambda r: (-r.called - r.suggested, r.tool))
    result.agents = sorted(agents.values(), key=lambda r: (-r.model_calls, r.agent, r.model))
    return result


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers] + [[str(x) for x in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render(a: Analysis, since: datetime | None = None) -> str:
    if not a.turns:
        return "No turns recorded" + (f" since {since:%Y-%m-%d}" if since else "") + "."
    use = a.high_confidence_use
    parts = [f"{a.turns} turns ({a.failed_turns} failed) in {a.channels} channel(s)"
             + (f" since {since:%Y-%m-%d}" if since else "") + ".",
             "",
             _table(["tool", "suggested", "high", "used when suggested", "used when high", "calls", "errors"],
                    [[t.tool, t.suggested, t.suggested_high, t.used_when_suggested, t.used_when_high, t.called, t.errors]
                     for t in a.tools]),
             "",
             "High-confidence suggestions followed: " + ("n/a (none made)" if use is None else f"{100 * use:.0f}%")
             + " (target ≥ 60%)",
             f"Verifier misses: {a.verifier_misses} ({a.misses_per_100_turns:.1f} per 100 turns), "
             f"{a.verifier_corrected} corrected" + (": " + ", ".join(f"{k} {v}" for k, v in sorted(a.misses_by_rule.items()))
                                                    if a.misses_by_rule else ""),
             f"Lore look-ups refused by the quota: {a.lore_denials}",
             "",
             _table(["agent", "model", "calls", "failed", "input tokens", "output tokens", "cached", "p50 ms", "p95 ms",
                     "cost $"],
                    [[r.agent, f"{r.provider}:{r.model}" if r.model else r.provider, r.model_calls, r.failed_calls,
                      f"{r.input_tokens}{'~' if r.estimated else ''}", r.output_tokens,
                      "-" if r.cache_hit_share is None else f"{r.cache_read_tokens} ({100 * r.cache_hit_share:.0f}%)",
                      _ms(r.latency_p50), _ms(r.latency_p95), "-" if r.cost_usd is None else f"{r.cost_usd:.4f}"]
                     for r in a.agents]),
             "Turns by agent: " + ", ".join(f"{k} {v}" for k, v in sorted(a.turns_by_agent.items(), key=lambda kv: -kv[1])),
             f"Cost: ${a.cost_usd:.4f}" + (f"; no price configured for {', '.join(a.unpriced)} (add them under "
                                           "[prices] in the config)" if a.unpriced else "")
             + ("; ~ marks token counts the engine estimated" if any(r.estimated for r in a.agents) else "")]
    return "\n".join(parts)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
