"""A player's turn on its way through the stages (Turn), what it gives back (TurnResult), its dice seed, and the
checks that refuse a message before anything is stored. The stages themselves are in stages.py: the stages that
are modules of their own (decide, grounding) read and fill a Turn, so the Turn sits below them and the list above."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from .basics import AgentType
from .entities import NPC
from .errors import BadInput, NoCharacter
from .loop import AgentRun, ModelCall
from .lore.retrieval import Source
from .lore.search import Hit
from .models import ModelRequest
from .orchestrator import Route, route
from .state import GameState, Message
from .store import LastTurn, Session, TurnRecord
from .suggestions import Suggestion
from .tools import TOOLS, ToolCall, ToolContext
from .verify import Verification

APOLOGY = ("*The Game Master's quill snaps mid-sentence, and the world holds its breath.* "
           "Nothing happened — your action was kept; try it again in a moment.")
RETRY_FAILED = ("The Game Master could not answer again just now, so your last turn stands as it was. "
                "Try /retry again in a moment.")
NARRATOR_ID = "narrator"


def turn_seed(session_seed: int, turn: int) -> int:
    """Each turn's dice come from the session's seed and the turn's number, so a turn can be replayed."""
    return random.Random(f"{session_seed}:{turn}").getrandbits(63)


@dataclass
class Turn:
    """A player's message on its way through the stages; each stage reads what the ones before it added."""

    session: Session
    author_id: str
    author_name: str
    text: str
    debug_override: bool | None = None  # debug mode for this action alone (it outranks the channel's switch)
    show: Callable[[str, str], None] | None = None  # (speaker, the visible reply so far) as it streams
    replaces: LastTurn | None = None  # a retry: the turn it plays again, taken back only when this one commits
    route: Route | None = None
    seq: int = 0
    seed: int = 0
    work: GameState | None = None  # the turn's working copy of the state: tools change it, commit saves it
    ctx: ToolContext | None = None
    player: Message | None = None
    hints: list[Suggestion] = field(default_factory=list)
    request: ModelRequest | None = None
    passages: list[Hit] = field(default_factory=list)  # lore the agent may cite, numbered from 1
    query_vector: Any = None  # the turn's one embedding of the player's words (a numpy vector): lore, recall, memory
    grounding_calls: list[ModelCall] = field(default_factory=list)  # the referee's, planner's or persona's call
    grounding_tools: list[ToolCall] = field(default_factory=list)  # tools a grounding stage ran (a planned move)
    referee_note: str = ""  # the referee's warning, for the agent's context
    verification: Verification | None = None  # what the post-flight check found, and what became of it
    debug: bool = False  # debug mode: the agent is asked for its tool feedback
    lore_checked: bool = False  # whether the lore index was consulted (so silence means "nothing relevant")
    sources: list[Source] = field(default_factory=list)  # the passages the reply cited that players may see named
    cited: list[Source] = field(default_factory=list)  # every passage the reply cited
    run: AgentRun = field(default_factory=AgentRun)
    record: TurnRecord | None = None
    reply: str = ""
    turn_id: int = 0
    unsummarised: int = 0  # log lines since the summary, counted as the turn committed
    settled: bool = False  # committed, or recorded as failed: its stored words are no longer pending


@dataclass
class TurnResult:
    reply: str
    agent: AgentType
    npc: NPC | None
    calls: list[ToolCall]
    model_calls: list[ModelCall]
    turn_id: int
    state: GameState
    request: ModelRequest
    sources: list[Source] = field(default_factory=list)  # lore the reply cited, for a "Sources" line
    checks: list[dict[str, str]] = field(default_factory=list)  # the verifier's misses and their outcome
    debug: bool = False  # whether this turn ran in debug mode (front ends then show the engine's workings)
    text: str = ""  # the player's words it answered

    def mechanics(self, verbosity: str = "full") -> list[str]:
        """What players may see of the turn's tools: dice, and each change as the tool tells it to the table (a
        tool that says nothing for players shows the first sentence of its observation; never its GM notes), and
        what the game refused, in the words the tool chose for players ("✗ Aria could not go to …": never the
        error the agent read, which may name a secret). verbosity "dice" keeps only the dice; "story" shows none."""
        lines: list[str] = []
        if verbosity == "story":
            return lines
        for call in self.calls:
            spec = TOOLS.get(call.name)
            if not call.ok and call.meta.get("refused") and verbosity == "full":
                lines.append(f"✗ {call.meta['refused']}")
            if not call.ok or spec is None:
                continue
            public = call.meta.get("public")
            if call.name in ("roll", "attack", "ability_check", "saving_throw"):
                lines.append(f"🎲 {public or call.observation}")
            elif spec.changes_state and verbosity == "full":
                lines.append(f"• {public or call.observation.split('. ', 1)[0].rstrip('.') + '.'}")
        return lines


def interrupted_notice(message: Message, limit: int = 300) -> str:
    """What the table is told about a message whose turn was cut off by a crash or a restart."""
    said = " ".join(message.text.split())
    said = said if len(said) <= limit else said[: limit - 1] + "…"
    return (f"The Game Master was interrupted (the program stopped) before answering {message.author_name}: "
            f"“{said}”. Nothing of it happened in the game; send it again if you still want to.")


def check(session: Session, author_id: str, text: str, max_chars: int) -> Route:
    """Everything that refuses a message before any model call or write; cheap, so a front end can ask first."""
    text = text.strip()
    if not text:
        raise BadInput("Say what you do — the message was empty.")
    if len(text) > max_chars:
        raise BadInput(f"That is {len(text)} characters; an action can be at most {max_chars}. Split it up.")
    state = session.state
    if author_id not in state.characters:
        raise NoCharacter()
    if author_id not in state.party.player_ids:
        name = state.characters[author_id].name
        if state.combat.active:
            raise BadInput(f"{name} is not with the party, and cannot join in the middle of a fight.")
        raise BadInput(f"{name} is not with the party: /party join first.")
    return route(state, text)


def going_back(now: GameState, before_json: str, verb: str) -> None:
    """Refuse to put back a state from before a character joined the game or a player joined or left the party:
    those write no log line, and going back would quietly undo them along with the turns."""
    before = GameState.model_validate_json(before_json)
    joined = [c.name for owner, c in now.characters.items() if owner not in before.characters]
    moved = [now.characters[owner].name for owner in set(now.party.player_ids) ^ set(before.party.player_ids)
             if owner in now.characters and owner in before.characters]
    if joined:
        raise BadInput(f"{' and '.join(sorted(joined))} joined the game after that, so it can no longer be {verb}: "
                       f"going back would take {'them' if len(joined) > 1 else 'that character'} out of the game.")
    if moved:
        raise BadInput(f"{' and '.join(sorted(moved))} joined or left the party after that, so it can no longer be "
                       f"{verb} (going back would undo that too).")
