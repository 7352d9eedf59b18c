"""`lorekeeper analyze`: what the turn log says about tools, suggestions, verification and cost (seed 000).

Typed results (dataclasses), rendered as plain tables for the terminal and for /gm-admin telemetry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

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
    agent: str
    turns: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass
class Analysis:
    turns: int = 0
    failed_turns: int = 0
    channels: int = 0
    tools: list[ToolRow] = field(default_factory=list)
    agents: list[AgentRow] = field(default_factory=list)
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


def analyze(turns: list[dict[str, Any]]) -> Analysis:
    result = Analysis(turns=len(turns), failed_turns=sum(t["status"] == "failed" for t in turns),
                      channels=len({t["channel_id"] for t in turns}))
    tools: dict[str, ToolRow] = {}
    agents: dict[str, AgentRow] = {}
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
            # A turn's model calls may be of several agents (a referee, then the narrator); the turn names one.
            row = agents.setdefault(t["agent"], AgentRow(t["agent"]))
            row.model_calls += 1
            row.input_tokens += m.get("input_tokens", 0)
            row.output_tokens += m.get("output_tokens", 0)
            row.cache_read_tokens += m.get("cache_read_tokens", 0)
        agents.setdefault(t["agent"], AgentRow(t["agent"])).turns += 1
    result.tools = sorted(tools.values(), key=lambda r: (-r.called - r.suggested, r.tool))
    result.agents = sorted(agents.values(), key=lambda r: -r.turns)
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
             _table(["agent", "turns", "model calls", "input tokens", "output tokens", "cached"],
                    [[r.agent, r.turns, r.model_calls, r.input_tokens, r.output_tokens, r.cache_read_tokens]
                     for r in a.agents])]
    return "\n".join(parts)
