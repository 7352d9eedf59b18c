"""The one list of agents: each one's role, worked example, history, labels and default model settings; and how
a speaker is labelled in the history an agent reads.

Adding an agent is a member of `AgentType` and one entry here; its tools name it in their `agents=`. The config
file, the providers, the prompts (engine/instructions.py) and the history filter all read this list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import prompts
from .models import ChatMessage
from .basics import AgentType
from .state import GameState, Message
from .markup import escape


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
    # A new world from a premise (/game start premise:…): two answers held to a schema (engine/worldgen.py).
    Agent(AgentType.WORLDBUILDER, prompts.WORLDBUILDER, "none", "World-builder", speaks=False, tools=False,
          temperature=0.8, max_tokens=3000, borrows=AgentType.NARRATIVE),
)}


def table_voices() -> frozenset[AgentType]:
    """Whose lines the table hears: the players and every agent that speaks."""
    return frozenset({AgentType.PLAYER} | {a.type for a in AGENTS.values() if a.speaks})


def label(agent: AgentType) -> str:
    entry = AGENTS.get(agent)
    return entry.label if entry is not None else ""


def example_exchange(agent: AgentType) -> list[ChatMessage]:
    """A worked exchange that shows a small model when tool tags are used and when they are not."""
    entry = AGENTS.get(agent)
    return list(entry.example) if entry is not None else []


# -- how speakers are labelled in an agent's history ------------------------------------------------------------

def speaker_label(m: Message, state: GameState) -> str:
    """Who speaks, as the engine knows it: never taken whole from a name someone chose."""
    if m.agent is AgentType.PLAYER:
        ch = state.characters.get(m.author_id)
        who = f"{ch.name} (player {m.author_name})" if ch else f"player {m.author_name}"
        to = f" to {state.npcs[m.npc_id].name}" if m.npc_id in state.npcs else ""
        text = who + to
    else:
        text = label(m.agent) or m.author_name
    # A Discord display name may hold "]:" or a newline: it must not close the label and start another.
    return " ".join(escape(text).replace("[", "(").replace("]", ")").split())


def speaker_line(m: Message, state: GameState) -> str:
    return f"[{speaker_label(m, state)}]: {quoted(m.text)}"


def quoted(text: str) -> str:
    """Escaped, with every further line indented, so no line of it can start a forged `[Speaker]:` label."""
    return "\n    ".join(escape(text).splitlines() or [""])
