"""The suggestor's learned half: a logistic regression per tool over the turn's one embedding of the player's words
(the MiniLM query vector the lore search already made) and the agent, trained at build time on the labelled sets
(engine/suggestions/train.py) and shipped as a small array file (classifier.npz, ~35 KB).

The rules stay in charge of what depends on the game's state (which secret, whose potion, which NPC); the classifier
adds the tools a message reads like it needs and the rules did not see (recall), each checked against the state
first (no start_combat in a fight, no rest in one, no next_turn outside one). No embedding this turn (the embedder
was busy): the rules alone, as before. Scoring costs one 388 × 19 product: microseconds."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import structlog

from ..basics import AgentType
from ..state import GameState
from ..tools import TOOLS
from .reading import Suggestion

log = structlog.get_logger(__name__)

MODEL = Path(__file__).resolve().parent / "classifier.npz"
AGENTS = (AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC)
THRESHOLD = 0.5  # the probability a tool needs to be suggested (the natural cut, not tuned on the held-out set)


@dataclass(frozen=True)
class Classifier:
    tools: tuple[str, ...]
    weights: np.ndarray  # (embedding + agents + bias, tools)
    mean: np.ndarray  # the embedding's per-dimension mean and spread over the training set (standardised input)
    scale: np.ndarray

    def features(self, vector: np.ndarray, agent: AgentType) -> np.ndarray:
        agents = np.array([agent is a for a in AGENTS], dtype=np.float32)
        return np.concatenate([(vector - self.mean) / self.scale, agents, np.ones(1, np.float32)])

    def probabilities(self, vector: np.ndarray, agent: AgentType) -> dict[str, float]:
        z = self.features(vector, agent) @ self.weights
        return dict(zip(self.tools, (1.0 / (1.0 + np.exp(-z))).tolist()))


@cache
def classifier() -> Classifier | None:
    """The shipped model (None, logged once, when the file is missing or not one: the rules work alone)."""
    try:
        with np.load(MODEL, allow_pickle=False) as data:
            found = Classifier(tuple(str(t) for t in data["tools"]), data["weights"].astype(np.float32),
                               data["mean"].astype(np.float32), data["scale"].astype(np.float32))
    except (OSError, KeyError, ValueError) as exc:
        log.warning("suggestion_classifier_unavailable", path=str(MODEL), error=str(exc))
        return None
    if found.weights.shape != (found.mean.shape[0] + len(AGENTS) + 1, len(found.tools)):
        log.warning("suggestion_classifier_unavailable", path=str(MODEL), error="its arrays do not fit together")
        return None
    return found


def fits(tool: str, state: GameState, agent: AgentType) -> bool:
    """Whether the state allows the tool at all: what the rules check for themselves, for the classifier's picks."""
    if tool not in TOOLS or agent not in TOOLS[tool].agents:
        return False
    fighting = state.combat.active
    if tool in ("start_combat", "short_rest", "long_rest") and fighting:
        return False
    if tool in ("next_turn", "end_combat") and not fighting:
        return False
    if tool == "start_quest":
        return any(q.status == "offered" for q in state.quests.values())
    if tool == "complete_objective":
        return any(q.status == "active" and any(not o.done for o in q.objectives) for q in state.quests.values())
    if tool == "add_to_party":
        return any(n.id not in state.party.npc_ids for n in state.present_npcs())
    if tool == "remove_from_party":
        return bool(state.party.npc_ids)
    if tool == "discover_secret":
        here = state.locations.get(state.current_location)
        return here is not None and any(not s.discovered for s in here.secrets)
    return True


def classify(state: GameState, vector: np.ndarray | None, agent: AgentType) -> list[Suggestion]:
    """The tools the message reads like it needs, by the classifier, that the state allows."""
    model = classifier() if vector is not None else None
    if model is None or vector is None or vector.shape != model.mean.shape:
        return []
    return [Suggestion(tool, "messages like this one usually call for it", round(p, 2))
            for tool, p in model.probabilities(vector, agent).items() if p >= THRESHOLD and fits(tool, state, agent)]
