"""The game's own past as a second corpus: every committed exchange of a game, searchable like the lore.

Each exchange (a player's message and the reply to it) is kept with who could witness it, its words (BM25) and a
vector: the embedding its turn already made of the player's message (the turn's one embedding, shared with the
lore search), stored with the turn in the game's database. So writing to memory costs no embedding at all, and the
database stays the one source of truth: this index is a per-process view of it, filled from the store when a game
is first searched and topped up before each recall (engine/recall.py), and rebuilt from it after a restart.

What a reader may recall is decided as for history: the Game Master agents recall the table's exchanges; an NPC
recalls only what was said to it or in its hearing (travelling with the party).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import structlog

if TYPE_CHECKING:
    import numpy as np

log = structlog.get_logger(__name__)

MAX_DOC_CHARS = 1500
MAX_GAMES = 256  # games kept in this process's view, the least recently searched dropped first
K1, B = 1.5, 0.75  # BM25's usual constants


@dataclass(frozen=True)
class Memory:
    turn_id: int
    seq: int  # the message id it starts at, for ordering
    text: str
    similarity: float | None
    score: float


@dataclass(frozen=True)
class Exchange:
    """One committed turn's lines, as memory keeps them."""

    turn_id: int
    first_id: int  # its first message's id: "older than the history the reader has" is judged by it
    npc_id: str  # the NPC spoken to or speaking ("" if none)
    witnesses: frozenset[str]  # NPCs travelling with the party
    text: str
    said: str  # the player's words, as the turn embedded them
    vector: np.ndarray | None  # the player's message's embedding (None: not made, e.g. the embedder was busy)


@dataclass
class _Game:
    exchanges: list[Exchange] = field(default_factory=list)
    vectors: Any = None  # a matrix with a row per exchange (zeros where it has none), grown by doubling
    position: dict[int, int] = field(default_factory=dict)  # turn id → index in exchanges
    postings: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # word → (index, count)
    lengths: list[int] = field(default_factory=list)  # words per exchange
    gone: set[int] = field(default_factory=set)  # indexes of forgotten (undone) exchanges
    upto: int = 0  # the newest turn id seen

    def add(self, e: Exchange, words: list[str]) -> None:
        at = len(self.exchanges)
        self.exchanges.append(e)
        self.put(at, e.vector)
        self.position[e.turn_id] = at
        self.lengths.append(len(words))
        counts: dict[str, int] = {}
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        for w, n in counts.items():
            self.postings.setdefault(w, []).append((at, n))
        self.upto = max(self.upto, e.turn_id)

    def put(self, at: int, vector: np.ndarray | None) -> None:
        import numpy as np

        if self.vectors is None or at >= len(self.vectors):
            grown = np.zeros((max(64, 2 * at), 384 if vector is None else len(vector)), dtype=np.float32)
            if self.vectors is not None:
                grown[:len(self.vectors)] = self.vectors
            self.vectors = grown
        if vector is not None:
            self.vectors[at] = vector


class GameMemory:
    """Per process: each game's exchanges, BM25 over their words (added to as turns commit, never rebuilt), and
    their vectors. `tokenize(texts, ids=False)` gives BM25's words, as the lore index makes them."""

    def __init__(self, tokenize: Callable[..., Any]) -> None:
        self._tokenize = tokenize
        self._games: OrderedDict[str, _Game] = OrderedDict()
        self._lock = threading.Lock()

    def known(self, game: str) -> int | None:
        """The newest turn id this process has of the game (None: the game is not loaded here)."""
        with self._lock:
            found = self._games.get(game)
            return None if found is None else found.upto

    def add(self, game: str, exchanges: list[Exchange]) -> None:
        """Exchanges newer than what is known (older or repeated ones are ignored); loads the game if new here."""
        words = self._tokenize([e.text for e in exchanges], ids=False) if exchanges else []
        with self._lock:
            found = self._games.get(game)
            if found is None:
                found = self._games[game] = _Game()
                while len(self._games) > MAX_GAMES:
                    self._games.popitem(last=False)
            for e, w in zip(exchanges, words):
                if e.turn_id not in found.position:
                    found.add(e, list(w))

    def drop(self, game: str) -> None:
        with self._lock:
            self._games.pop(game, None)

    def forget(self, game: str, turn_ids: list[int]) -> None:
        """Exchanges of turns that were undone: recall must not bring back what never happened."""
        with self._lock:
            found = self._games.get(game)
            if found is not None:
                found.gone.update(found.position[t] for t in turn_ids if t in found.position)

    def set_vectors(self, game: str, vectors: dict[int, np.ndarray]) -> None:
        """Vectors made later for exchanges that had none (embedded in the background)."""
        with self._lock:
            found = self._games.get(game)
            if found is None:
                return
            for turn_id, vector in vectors.items():
                at = found.position.get(turn_id)
                if at is not None:
                    e = found.exchanges[at]
                    found.exchanges[at] = Exchange(e.turn_id, e.first_id, e.npc_id, e.witnesses, e.text, e.said, vector)
                    found.put(at, vector)

    def unembedded(self, game: str) -> list[Exchange]:
        with self._lock:
            found = self._games.get(game)
            return [] if found is None else [e for e in found.exchanges if e.vector is None]

    def recall(self, game: str, query: str, vector: np.ndarray | None, k: int, *, npc_id: str | None = None,
               before_id: int | None = None) -> list[Memory]:
        """The exchanges that best match the query (its words, and its vector when there is one), best first; an
        NPC's only what it witnessed; only exchanges that started before `before_id` when given."""
        import numpy as np

        query = " ".join(query.split())[:1000]
        words = list(self._tokenize([query], ids=False)[0]) if query else []
        with self._lock:
            found = self._games.get(game)
            if found is None or not found.exchanges:
                return []
            self._games.move_to_end(game)
            exchanges, gone = found.exchanges, set(found.gone)

            def allowed(at: int) -> bool:
                e = exchanges[at]
                if at in gone or (before_id is not None and e.first_id >= before_id):
                    return False
                return npc_id is None or e.npc_id == npc_id or npc_id in e.witnesses

            lexical = _bm25(found, words, allowed)
            similar: dict[int, float] = {}
            if vector is not None:
                sims = found.vectors[:len(exchanges)] @ np.asarray(vector, dtype=np.float32)  # ~0.2 ms at 5,000
                for at in np.argsort(-sims):
                    if exchanges[at].vector is not None and allowed(int(at)):
                        similar[int(at)] = float(sims[at])
                        if len(similar) == 40:
                            break
        best_lexical = max(lexical.values(), default=0.0) or 1.0
        sims_found = list(similar.values())
        low, span = (min(sims_found), (max(sims_found) - min(sims_found)) or 1.0) if sims_found else (0.0, 1.0)
        scores: dict[int, float] = {at: (s - low) / span for at, s in similar.items()}
        for at, s in lexical.items():
            scores[at] = scores.get(at, 0.0) + s / best_lexical
        best = sorted(scores, key=lambda at: -scores[at])[:k]
        return [Memory(exchanges[at].turn_id, exchanges[at].first_id, exchanges[at].text, similar.get(at), scores[at])
                for at in best]


def _bm25(game: _Game, words: list[str], allowed: Callable[[int], bool]) -> dict[int, float]:
    """Okapi BM25 of the exchanges that hold any of the words (their postings only: linear in those)."""
    n = len(game.exchanges) - len(game.gone)
    if not words or n <= 0:
        return {}
    average = (sum(game.lengths) / len(game.lengths)) or 1.0
    scores: dict[int, float] = {}
    for word in set(words):
        postings = game.postings.get(word)
        if not postings:
            continue
        idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
        for at, count in postings:
            if allowed(at):
                norm = count + K1 * (1 - B + B * game.lengths[at] / average)
                scores[at] = scores.get(at, 0.0) + idf * count * (K1 + 1) / norm
    return scores


def recall_lines(memories: list[Memory], limit_chars: int = 600) -> str:
    """Memories as context lines, each cut to a few sentences."""
    from .slices import compact

    return "\n".join(f"- {compact(m.text, limit_chars // 4)}" for m in memories)


__all__ = ["Exchange", "GameMemory", "Memory", "recall_lines"]
