"""What the turn log says, for admins and `lorekeeper analyze`: turns, tool calls, telemetry."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from .records import ToolCallRow, tool_call
from .sql import Op, reads, reads_slowly, rows


class Reports:
    """The store's reports (a part of Store, kept in its own module)."""

    @reads_slowly
    def turns(self, session_id: int) -> Op[list[dict[str, Any]]]:
        return [_turn(r) for r in (yield rows("SELECT * FROM turns WHERE session_id = ? ORDER BY id", session_id))]

    @reads_slowly
    def turns_for_analysis(self, channel_id: str | None = None, since: datetime | None = None
                           ) -> Op[list[dict[str, Any]]]:
        """Every turn (of one channel, or all; since a moment, or ever), with its tool calls, for `analyze`."""
        where, params = [], []
        if channel_id is not None:
            where.append("sessions.channel_id = ?")
            params.append(channel_id)
        if since is not None:
            where.append("turns.started_at >= ?")
            params.append(since.isoformat())
        clause = ("WHERE " + " AND ".join(where)) if where else ""
        found = [_turn(r) for r in (yield rows(f"SELECT turns.*, sessions.channel_id FROM turns "
                                               f"JOIN sessions ON sessions.id = turns.session_id {clause} "
                                               f"ORDER BY turns.id", *params))]
        calls: dict[int, list[ToolCallRow]] = {}
        if found:
            for r in (yield rows(f"SELECT tool_calls.* FROM tool_calls JOIN turns ON turns.id = tool_calls.turn_id "
                                 f"JOIN sessions ON sessions.id = turns.session_id {clause} "
                                 f"ORDER BY tool_calls.turn_id, seq", *params)):
                calls.setdefault(r["turn_id"], []).append(tool_call(r))
        for r in found:
            r["calls"] = calls.get(r["id"], [])
        return found

    @reads
    def tool_calls(self, turn_id: int) -> Op[list[ToolCallRow]]:
        return [tool_call(r) for r in (yield rows("SELECT * FROM tool_calls WHERE turn_id = ? ORDER BY seq", turn_id))]

    @reads_slowly
    def telemetry(self, session_id: int) -> Op[dict[str, Any]]:
        """Counts from the turn log: turns, tool calls by tool, model usage."""
        turns = [_turn(r) for r in (yield rows("SELECT * FROM turns WHERE session_id = ? ORDER BY id", session_id))]
        tools = {r[0]: {"ok": int(r[1]), "calls": int(r[2])} for r in (yield rows(
            "SELECT name, SUM(ok), COUNT(*) FROM tool_calls JOIN turns ON turns.id = tool_calls.turn_id "
            "WHERE turns.session_id = ? GROUP BY name ORDER BY COUNT(*) DESC, name", session_id))}
        lore = [(bool(r[0]), json.loads(r[1])) for r in (yield rows(
            "SELECT ok, meta FROM tool_calls JOIN turns ON turns.id = tool_calls.turn_id "
            "WHERE turns.session_id = ? AND name IN ('get_lore_slice', 'search_lore', 'recall')", session_id))]
        calls = [c for t in turns for c in t["model_calls"]]
        latencies = sorted(c["latency_ms"] for c in calls)
        lookups = [m for ok, m in lore if ok]
        cacheable = [m for m in lookups if "cache_hit" in m]
        lore_latency = sorted(m["latency_ms"] for m in lookups if "latency_ms" in m)
        return {
            "turns": len(turns), "failed_turns": sum(t["status"] == "failed" for t in turns),
            "tools": tools, "model_calls": len(calls),
            "input_tokens": sum(c["input_tokens"] for c in calls), "output_tokens": sum(c["output_tokens"] for c in calls),
            "cache_read_tokens": sum(c["cache_read_tokens"] for c in calls),
            "latency_ms_p50": latencies[len(latencies) // 2] if latencies else None,
            "by_agent": {a: sum(t["agent"] == a for t in turns) for a in sorted({t["agent"] for t in turns})},
            "lore": {
                "calls": len(lore), "denied": sum(1 for ok, m in lore if not ok and m.get("denied")),
                "tokens_returned": sum(m.get("tokens", 0) for m in lookups),
                "cache_hit_ratio": round(sum(1 for m in cacheable if m["cache_hit"]) / len(cacheable), 3) if cacheable else None,
                "latency_ms_p50": lore_latency[len(lore_latency) // 2] if lore_latency else None,
                "turns_citing": sum(1 for t in turns if t["sources"]),
            },
        }


def _turn(r: Any) -> dict[str, Any]:
    return dict(r) | {"model_calls": json.loads(r["model_calls"]), "sources": json.loads(r["sources"]),
                      "checks": json.loads(r["checks"]), "suggestions": json.loads(r["suggestions"]),
                      "feedback": None if r["feedback"] is None else json.loads(r["feedback"])}
