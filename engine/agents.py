"""The one list of agents: each one's role, worked example, history, labels and default model settings.

Adding an agent is a member of `AgentType` and one entry here; its tools name it in their `agents=`. The config
file, the providers, the prompts and the history filter all read this list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import prompts
from .models import ChatMessage
from .state import NPC, AgentType
from .tags import escape
from .tools import tools_for


@dataclass(frozen=True)
class Agent:
    type: AgentType
    role: str  # the role part of its system prompt; an NPC's has {name} in it
    history: Literal["table", "witnessed", "none"]  # everything said at the table, what it witnessed, or nothing
    label: str = ""  # how its lines are labelled in others' history (empty: the speaker's own name)
    example: tuple[ChatMessage, ...] = ()  # a worked exchange, for small models
    speaks: bool = True  # its replies enter the channel's log
    tools: bool = True
    temperature: float = 0.7
    max_tokens: int = 1024
    enabled: bool = True  # whether it runs unless the config says otherwise
    borrows: AgentType | None = None  # with no provider or model of its own, it uses this agent's


AGENTS: dict[AgentType, Agent] = {a.type: a for a in (
    Agent(AgentType.NARRATIVE, prompts.NARRATIVE, "table", "Game Master", tuple(prompts.NARRATIVE_EXAMPLE), temperature=0.8),
    Agent(AgentType.COMBAT, prompts.COMBAT, "table", "Game Master (combat)", tuple(prompts.COMBAT_EXAMPLE), temperature=0.6),
    Agent(AgentType.NPC, prompts.NPC_ROLE, "witnessed", "", tuple(prompts.NPC_EXAMPLE), temperature=0.8, max_tokens=700),
    Agent(AgentType.SUMMARIZER, prompts.SUMMARIZER, "none", "Summary", speaks=False, tools=False, temperature=0.3,
          max_tokens=600),
    # Grounding agents: one short JSON answer each, before the turn's main agent (engine/grounding.py).
    Agent(AgentType.REFEREE, prompts.REFEREE, "none", "Referee", speaks=False, tools=False, temperature=0.0,
          max_tokens=300, borrows=AgentType.NARRATIVE),
    Agent(AgentType.PLANNER, prompts.PLANNER, "none", "Planner", speaks=False, tools=False, temperature=0.0,
          max_tokens=120, enabled=False, borrows=AgentType.NARRATIVE),
    Agent(AgentType.PERSONA, prompts.PERSONA, "none", "Persona", speaks=False, tools=False, temperature=0.3,
          max_tokens=600, borrows=AgentType.NARRATIVE),
)}


def table_voices() -> frozenset[AgentType]:
    """Whose lines the table hears: the players and every agent that speaks."""
    return frozenset({AgentType.PLAYER} | {a.type for a in AGENTS.values() if a.speaks})


def label(agent: AgentType) -> str:
    entry = AGENTS.get(agent)
    return entry.label if entry is not None else ""


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


def example_exchange(agent: AgentType) -> list[ChatMessage]:
    """A worked exchange that shows a small model when tool tags are used and when they are not."""
    entry = AGENTS.get(agent)
    return list(entry.example) if entry is not None else []
