"""An agent's system prompt, put together: its role (engine/agents.py), who it plays, the tag rules and its tools."""

from __future__ import annotations

from . import prompts
from .agents import AGENTS
from .basics import AgentType
from .entities import NPC
from .markup import escape
from .tools import tools_for


def tool_reference(agent: AgentType) -> str:
    lines = ["## Your tools"]
    for t in tools_for(agent):
        lines.append(f"- {t.name}: {t.description} Example: {t.example}")
    return "\n".join(lines)


def system_prompt(agent: AgentType, npc: NPC | None = None, *, tools: bool = True) -> str:
    """The stable part of an agent's system prompt; the same text every turn, so providers can cache it.

    Without `tools` (a two-step turn's narration, engine/decide.py) the role keeps its voice and loses its tool
    rules, its examples and the tool reference: the engine has already acted, the agent only tells it."""
    entry = AGENTS[agent]
    if not entry.tools:
        return entry.role
    role = entry.role if tools else entry.role.split("\n\n## When to call a tool")[0]
    if agent is AgentType.NPC:
        if npc is None:
            raise ValueError("the npc agent needs an NPC")
        role = role.format(name=escape(npc.name)) + f"\n\n## Who you are\n{npc.name} (id {npc.id}). {escape(npc.persona)}"
        if npc.card is not None:  # drawn from the lore the first time it spoke; the same text every turn after
            card = npc.card
            lines = [f"Speech: {card.speech_style}" if card.speech_style else "",
                     f"Traits: {', '.join(card.traits)}" if card.traits else "",
                     f"Background: {card.background}" if card.background else "",
                     f"You know: {'; '.join(card.knows)}" if card.knows else "",
                     "Lines in your voice: " + " / ".join(f'"{x}"' for x in card.example_lines) if card.example_lines else ""]
            role += "\n\n## Your character card\n" + escape("\n".join(x for x in lines if x))
    if not tools:
        return f"{role}\n\n{prompts.NARRATE_ONLY}"
    return f"{role}\n\n{prompts.TAG_RULES}\n\n{tool_reference(agent)}"
