"""Debug-mode tool feedback (seed 003): in a channel with debug on, the agent reports on its own tool use.

The request goes into that turn's context only (the cached system prompt is byte-identical with debug on or
off). The agent appends `<tool_feedback>{json}</tool_feedback>`; the tokenizer hides it from players like
thinking; it is parsed here, checked against the tools the turn really ran, and stored with the turn. Feedback
that cannot be read is stored as malformed, never an error for the player.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .tools import ToolCall

_BLOCK = re.compile(r"<tool_feedback>(.*?)</tool_feedback>", re.S | re.I)
MAX_FEEDBACK_CHARS = 20_000

REQUEST = """## Debug mode: report on your tools
After your reply, append one <tool_feedback>…</tool_feedback> block holding a JSON object (players never see it):
{"tools_used": [{"name": "...", "purpose": "...", "success": true, "result_quality": "excellent|good|partial|failed"}],
 "tools_considered": [{"name": "...", "reason_not_used": "..."}],
 "limitations": [{"description": "...", "impact": "critical|high|medium|low", "missing_capability": "tool|field|operator|relationship"}],
 "suggestions": [{"type": "new_tool|expose_field|add_relationship|improve_existing", "priority": "critical|high|medium|low", "description": "..."}],
 "answer_quality": {"completeness": 0-100, "confidence": 0-100, "notes": "..."}}"""


class _M(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class ToolUse(_M):
    name: str = Field(max_length=60)
    purpose: str = Field("", max_length=300)
    success: bool = True
    result_quality: Literal["excellent", "good", "partial", "failed"] | None = None


class ToolConsidered(_M):
    name: str = Field(max_length=60)
    reason_not_used: str = Field("", max_length=300)


class Limitation(_M):
    description: str = Field(max_length=400)
    impact: Literal["critical", "high", "medium", "low"] = "medium"
    missing_capability: Literal["tool", "field", "operator", "relationship"] | None = None


class Improvement(_M):
    type: Literal["new_tool", "expose_field", "add_relationship", "improve_existing"] = "improve_existing"
    priority: Literal["critical", "high", "medium", "low"] = "medium"
    description: str = Field(max_length=400)


class AnswerQuality(_M):
    completeness: int = Field(ge=0, le=100)
    confidence: int = Field(ge=0, le=100)
    notes: str = Field("", max_length=500)


class ToolFeedback(_M):
    tools_used: list[ToolUse] = Field(default_factory=list, max_length=30)
    tools_considered: list[ToolConsidered] = Field(default_factory=list, max_length=30)
    limitations: list[Limitation] = Field(default_factory=list, max_length=20)
    suggestions: list[Improvement] = Field(default_factory=list, max_length=20)
    answer_quality: AnswerQuality


def extract(transcript: str, calls: list[ToolCall]) -> dict[str, Any] | None:
    """The turn's feedback as stored: parsed and cross-checked, or marked malformed; None when there is none."""
    found = _BLOCK.findall(transcript[-MAX_FEEDBACK_CHARS * 2:])
    if not found:
        return None
    raw = found[-1].strip()[:MAX_FEEDBACK_CHARS]
    try:
        feedback = ToolFeedback.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        return {"malformed": True, "error": str(exc)[:300], "raw": raw[:2000]}
    ran = {c.name for c in calls}
    claimed = {t.name for t in feedback.tools_used}
    return {"malformed": False, "feedback": feedback.model_dump(mode="json"),
            "claimed_not_run": sorted(claimed - ran),  # the agent says it used these; the engine ran none of them
            "run_not_reported": sorted(ran - claimed)}


def describe(record: dict[str, Any]) -> str:
    """For admins: a short reading of one turn's feedback."""
    if record.get("malformed"):
        return f"Malformed feedback ({record.get('error', '')}):\n{record.get('raw', '')}"
    fb = record["feedback"]
    lines = [f"Answer: completeness {fb['answer_quality']['completeness']}%, confidence {fb['answer_quality']['confidence']}%"
             + (f" — {fb['answer_quality']['notes']}" if fb["answer_quality"].get("notes") else "")]
    lines += [f"used {t['name']}: {t['purpose']} ({'ok' if t['success'] else 'failed'}"
              + (f", {t['result_quality']}" if t.get("result_quality") else "") + ")" for t in fb["tools_used"]]
    lines += [f"considered {t['name']}: {t['reason_not_used']}" for t in fb["tools_considered"]]
    lines += [f"limitation ({x['impact']}): {x['description']}" for x in fb["limitations"]]
    lines += [f"suggestion ({x['priority']}, {x['type']}): {x['description']}" for x in fb["suggestions"]]
    if record["claimed_not_run"]:
        lines.append(f"⚠ claims to have used, but the engine ran none of: {', '.join(record['claimed_not_run'])}")
    if record["run_not_reported"]:
        lines.append(f"ran but not reported: {', '.join(record['run_not_reported'])}")
    return "\n".join(lines)
