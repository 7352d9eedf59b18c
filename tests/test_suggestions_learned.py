"""The suggestor's classifier: trained at build time into the shipped file (the same sets give the same file), used
over the turn's embedding for tools the rules missed, kept from what the state does not allow, and absent without
harm (no embedding, or no model: the rules alone)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.basics import AgentType
from engine.lore.embed import MiniLM
from engine.lore.queries import QUERY_TOKENS
from engine.lore.retrieval import resolved
from engine.state import Participant
from engine.suggestions import learned as learned_module, suggest
from engine.suggestions.learned import classifier, classify, fits
from engine.suggestions.train import SETS, embed, examples, fit


@pytest.fixture(scope="module")
def embedder():
    return MiniLM()


def vector(embedder, state, text):
    return np.asarray(embedder.embed([resolved(state, text)], QUERY_TOKENS)[0], dtype=np.float32)


def test_the_shipped_model_is_what_training_makes(embedder):
    entries = examples()
    assert len(entries) == 381 and all("holdout" not in p.name for p in SETS)  # the held-out set stays unseen
    made = fit(embed(entries, embedder), entries)
    shipped = classifier()
    assert shipped is not None and shipped.tools == tuple(made["tools"])
    assert np.allclose(shipped.weights, made["weights"], atol=1e-4) and np.allclose(shipped.mean, made["mean"], atol=1e-5)


def test_it_adds_what_the_words_mean_and_the_state_allows(state, embedder):
    text = "We lie down by the fire and sleep until dawn"
    v = vector(embedder, state, text)
    probabilities = classifier().probabilities(v, AgentType.NARRATIVE)
    assert probabilities["long_rest"] > 0.5 > probabilities["next_turn"]
    assert "long_rest" in [s.tool for s in classify(state, v, AgentType.NARRATIVE)]
    state.combat.active = True
    state.combat.order = [Participant(id="u1", name="Aria", faction="player", initiative=10, ac=16)]
    assert "long_rest" not in [s.tool for s in classify(state, v, AgentType.NARRATIVE)]  # no sleeping in a fight
    assert not fits("long_rest", state, AgentType.NARRATIVE) and fits("next_turn", state, AgentType.COMBAT)
    state.combat.active = False
    assert not fits("next_turn", state, AgentType.COMBAT) and not fits("attack", state, AgentType.NPC)


def test_suggest_uses_the_turns_embedding_and_the_rules_stand(state, embedder):
    text = "I'm beat. Let's turn in at the inn for the night."
    v = vector(embedder, state, text)
    with_vector = suggest(state, text, AgentType.NARRATIVE, vector=v)
    alone = suggest(state, text, AgentType.NARRATIVE)
    assert {s.tool for s in alone} <= {s.tool for s in with_vector}
    assert suggest(state, text, AgentType.NARRATIVE, vector=None) == alone  # no embedding: the rules alone
    # A wrong-sized vector (another embedder) is ignored, not an error.
    assert suggest(state, text, AgentType.NARRATIVE, vector=np.zeros(10, np.float32)) == alone


def test_no_model_means_the_rules_alone(state, tmp_path, monkeypatch):
    (tmp_path / "classifier.npz").write_bytes(b"not an npz")
    monkeypatch.setattr(learned_module, "MODEL", tmp_path / "classifier.npz")
    classifier.cache_clear()
    try:
        assert classifier() is None
        assert classify(state, np.zeros(384, np.float32), AgentType.NARRATIVE) == []
        np.savez(tmp_path / "classifier.npz", tools=np.array(["roll"]), weights=np.zeros((5, 1)), mean=np.zeros(384),
                 scale=np.ones(384))
        classifier.cache_clear()
        assert classifier() is None  # arrays that do not fit together
    finally:
        monkeypatch.undo()
        classifier.cache_clear()
