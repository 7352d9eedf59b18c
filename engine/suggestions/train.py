"""Train the suggestor's classifier (learned.py) on the labelled tuning sets, as the build does:

    python -m engine.suggestions.train        # writes engine/suggestions/classifier.npz

The sets are bench/suggestion_set.yaml and bench/suggestion_set2.yaml (381 player messages with the tools a careful
GM would call); bench/suggestion_holdout.yaml is never read here, so that bench/suggestions.py's held-out figure
stays honest. Each message is embedded as a turn embeds it (its role words resolved to names in the starter
adventure's opening scene, the first 64 tokens through MiniLM), standardised, and joined to its agent; then one
logistic regression per tool with at least four examples, by plain gradient descent from zero (deterministic: the
same sets give the same file, which tests/test_suggestions_learned.py checks)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import yaml

from ..basics import AgentType
from ..content import find_adventure
from ..lore.embed import MiniLM
from ..lore.queries import QUERY_TOKENS
from ..lore.retrieval import resolved
from .learned import AGENTS, MODEL

ROOT = Path(__file__).resolve().parents[2]
SETS = (ROOT / "bench" / "suggestion_set.yaml", ROOT / "bench" / "suggestion_set2.yaml")
MIN_EXAMPLES = 4  # a tool with fewer labelled messages is left to the rules
L2, EPOCHS, RATE = 1e-3, 400, 0.1


def examples(paths: tuple[Path, ...] = SETS) -> list[dict]:
    return [e for p in paths for e in yaml.safe_load(p.read_text("utf-8"))]


def embed(entries: list[dict], embedder: MiniLM) -> np.ndarray:
    """The turn's embedding of each message: its role words resolved in the starter adventure's first scene."""
    state = find_adventure(ROOT / "corpus", "saltmere-lantern").new_game(seed=1)
    return np.asarray(embedder.embed([resolved(state, e["text"]) for e in entries], QUERY_TOKENS), dtype=np.float32)


def fit(vectors: np.ndarray, entries: list[dict]) -> dict[str, np.ndarray]:
    counts: dict[str, int] = {}
    for e in entries:
        for t in e["tools"]:
            counts[t] = counts.get(t, 0) + 1
    tools = sorted(t for t, n in counts.items() if n >= MIN_EXAMPLES)
    mean, scale = vectors.mean(0), vectors.std(0) + 1e-6
    agents = np.array([[AgentType(e["agent"]) is a for a in AGENTS] for e in entries], dtype=np.float32)
    x = np.hstack([(vectors - mean) / scale, agents, np.ones((len(entries), 1), np.float32)]).astype(np.float64)
    y = np.array([[t in e["tools"] for t in tools] for e in entries], dtype=np.float64)
    w = np.zeros((x.shape[1], len(tools)))
    for _ in range(EPOCHS):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        w -= RATE * (x.T @ (p - y) / len(x) + L2 * w)
    return {"tools": np.array(tools), "weights": w.astype(np.float32), "mean": mean.astype(np.float32),
            "scale": scale.astype(np.float32)}


def train(embedder: MiniLM | None = None) -> dict[str, np.ndarray]:
    entries = examples()
    return fit(embed(entries, embedder or MiniLM()), entries)


if __name__ == "__main__":
    arrays = train()
    np.savez_compressed(MODEL, **arrays)
    print(f"wrote {MODEL} ({MODEL.stat().st_size:,} bytes): {len(arrays['tools'])} tools", file=sys.stderr)
