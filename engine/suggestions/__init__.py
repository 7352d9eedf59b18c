"""The pre-flight tool suggestor: cheap heuristics that remind an agent which tools fit the player's message.

The message is read once: split into sentences and clauses, cut into words, and every phrase of the lexicon
(lexicon.py) is found in one pass over the words (a dict lookup per word, then a short match on the words after it).
The rules then ask questions of that reading ("is something drunk, and is it a potion, in the same sentence?",
"is this done now, or promised, asked about or denied?") against the game state. Nothing is a regex with a
gap or a backtracking alternation, so the cost stays linear in the message: a 2,000-character message is
read in well under a millisecond.

lexicon.py holds the words, reading.py the reading and the rule registry, goods.py and moves.py the rules (in the
order they are registered: on a tie the first rule's suggestion stands).
"""

from __future__ import annotations

import numpy as np
import structlog

from ..basics import AgentType
from ..entities import NPC
from ..state import GameState
from ..tools import TOOLS
from . import goods, moves, prowess  # noqa: F401  (registers the rules, goods first)
from .goods import changes_hands
from .learned import classify
from .lexicon import LEXICON
from .reading import RULES, Reading, Situation, Suggestion

__all__ = ["HINTS_HEADING", "LEXICON", "RULES", "Reading", "Situation", "Suggestion", "changes_hands",
           "format_suggestions", "suggest"]

log = structlog.get_logger(__name__)


def suggest(state: GameState, message: str, agent: AgentType, npc: NPC | None = None, limit: int = 4,
            actor_id: str | None = None, vector: np.ndarray | None = None) -> list[Suggestion]:
    """The best suggestions for this agent, one per tool, highest confidence first: the rules', and with the turn's
    embedding of the message (`vector`) the classifier's for tools the rules did not suggest (learned.py)."""
    situation = Situation.of(state, message, agent, npc, actor_id)
    if situation.reading.tokens[:1] and situation.reading.tokens[0] in ("ooc", "brb", "afk", "gtg"):
        return []  # out of character: not a move in the game
    best: dict[str, Suggestion] = {}
    for name, agents, fn in RULES:
        if agent not in agents:
            continue
        try:
            found = fn(situation)
        except Exception:  # advisory only: a broken rule must never cost a turn
            log.warning("suggestion_rule_failed", rule=name, exc_info=True)
            continue
        for s in found:
            if agent in TOOLS[s.tool].agents and (s.tool not in best or s.confidence > best[s.tool].confidence):
                best[s.tool] = s
    for s in classify(state, vector, agent):
        best.setdefault(s.tool, s)  # the rules know which secret, whose potion: theirs stands
    return sorted(best.values(), key=lambda s: -s.confidence)[:limit]


HINTS_HEADING = "## Tools that may fit this message (hints, not orders: use your judgment)"


def format_suggestions(suggestions: list[Suggestion]) -> str:
    if not suggestions:
        return ""
    return HINTS_HEADING + "\n" + "\n".join(s.line() for s in suggestions)
