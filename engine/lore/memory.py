"""The game's own past as a second corpus: every committed exchange of a game, searchable like the lore.

Each exchange (a player's message and the reply to it) is one document in a Chroma collection of its game, with
who could witness it; a BM25 index over the same documents is built in memory when first searched. The messages
table stays the source of truth: `sync` indexes whatever the store has that the memory has not (after each turn,
in the background, and again before a recall), so a crash or a wiped vector store costs nothing but time.

What a reader may recall is decided as for history: the Game Master agents recall the table's exchanges; an NPC
recalls only what was said to it or in its hearing (travelling with the party).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import structlog

from ..state import GameState, Message

if TYPE_CHECKING:
    from .embed import Embedder  # numpy and onnxruntime load only when lore is used

log = structlog.get_logger(__name__)

MAX_DOC_CHARS = 1500


@dataclass(frozen=True)
class Memory:
    turn_id: int
    seq: int  # the message id it starts at, for ordering
    text: str
    similarity: float | None
    score: float


class GameMemory:
    """A game's exchanges in the lore index's stores: `connect` gives its Chroma client, `embedder` its vectors and
    `tokenize` its BM25 words (texts to token lists, or ids with `ids=True`)."""

    def __init__(self, connect: Callable[[], Any], embedder: Embedder, tokenize: Callable[..., Any]) -> None:
        self._connect, self.embedder, self._tokenize = connect, embedder, tokenize
        self._lock = threading.Lock()
        self._bm25: dict[str, tuple[int, Any, list[str], list[dict[str, Any]], list[str]]] = {}  # per game
        self._indexed: dict[str, int] = {}  # game → the last message id indexed

    def _collection(self, game: str) -> Any:
        return self._connect().get_or_create_collection(
            f"memory-{game}", embedding_function=None, metadata={"hnsw:space": "cosine"})

    def indexed_upto(self, game: str) -> int:
        """The last message id of this game already in memory (read from the vector store the first time)."""
        with self._lock:
            done = self._indexed.get(game)
            if done is None:
                ids = self._collection(game).get(include=[])["ids"]
                done = self._indexed[game] = max((int(i.split(":")[1]) for i in ids), default=0)
            return done

    def sync(self, game: str, messages: list[Message], state: GameState) -> int:
        """Index the exchanges among `messages` (committed, oldest first) not indexed yet; returns how many."""
        from ..agents import speaker_line  # the same labels as history

        with self._lock:
            collection = self._collection(game)
            done = self._indexed.get(game)
            if done is None:
                ids = collection.get(include=[])["ids"]
                done = max((int(i.split(":")[1]) for i in ids), default=0)
            turns: dict[int, list[Message]] = {}
            for m in messages:
                if m.id > done and m.turn_id is not None and m.status == "ok":
                    turns.setdefault(m.turn_id, []).append(m)
            if not turns:
                self._indexed[game] = done
                return 0
            docs, ids, metas = [], [], []
            for turn_id, group in sorted(turns.items()):
                text = "\n".join(speaker_line(m, state) for m in group)[:MAX_DOC_CHARS]
                witnesses = {w for m in group for w in m.witnesses}
                npc = next((m.npc_id for m in group if m.npc_id), None)
                docs.append(text)
                ids.append(f"turn:{max(m.id for m in group)}")
                metas.append({"turn_id": turn_id, "first_id": min(m.id for m in group), "npc_id": npc or "",
                              "witnesses": "," + ",".join(sorted(witnesses)) + ","})
            vectors = self.embedder.embed(docs)
            collection.upsert(ids=ids, embeddings=vectors, documents=docs, metadatas=metas)
            self._indexed[game] = max(m.id for group in turns.values() for m in group)
            self._bm25.pop(game, None)
            log.info("memory_indexed", game=game, exchanges=len(docs))
            return len(docs)

    def forget(self, game: str, turn_ids: list[int]) -> None:
        """Drop the exchanges of turns that were undone: recall must not bring back what never happened."""
        if not turn_ids:
            return
        with self._lock:
            self._collection(game).delete(where={"turn_id": {"$in": turn_ids}})
            self._bm25.pop(game, None)

    def recall(self, game: str, query: str, k: int, *, npc_id: str | None = None,
               before_id: int | None = None) -> list[Memory]:
        """The exchanges that best match the query, best first; an NPC's only what it witnessed; only exchanges
        that started before `before_id` when given (older than what the reader already has in its history)."""
        query = " ".join(query.split())[:1000]
        if not query:
            return []
        collection = self._collection(game)
        total = collection.count()
        if not total:
            return []

        def allowed(meta: dict[str, Any]) -> bool:
            if before_id is not None and meta["first_id"] >= before_id:
                return False
            return npc_id is None or meta["npc_id"] == npc_id or f",{npc_id}," in meta["witnesses"]

        result = collection.query(query_embeddings=self.embedder.embed([query]), n_results=min(total, 40),
                                  include=["distances", "metadatas", "documents"])
        vector = {i: (1 - d, m, doc) for i, d, m, doc in zip(result["ids"][0], result["distances"][0],
                                                             result["metadatas"][0], result["documents"][0]) if allowed(m)}
        lexical = self._bm25_scores(game, collection, total, query)
        lexical = {i: v for i, v in lexical.items() if allowed(v[1])}
        top = max((v[0] for v in lexical.values()), default=0.0) or 1.0
        sims = [v[0] for v in vector.values()]
        low, span = (min(sims), (max(sims) - min(sims)) or 1.0) if sims else (0.0, 1.0)
        scores: dict[str, float] = {}
        for i, (sim, _, _) in vector.items():
            scores[i] = (sim - low) / span
        for i, (score, _, _) in lexical.items():
            scores[i] = scores.get(i, 0.0) + score / top
        best = sorted(scores, key=lambda i: -scores[i])[:k]
        out = []
        for i in best:
            sim, meta, doc = vector.get(i) or (None, *lexical[i][1:])
            out.append(Memory(meta["turn_id"], meta["first_id"], doc, sim, scores[i]))
        return out

    def _bm25_scores(self, game: str, collection: Any, total: int, query: str) -> dict[str, tuple[float, dict, str]]:
        import bm25s

        with self._lock:
            cached = self._bm25.get(game)
            if cached is None or cached[0] != total:
                got = collection.get(include=["documents", "metadatas"])
                retriever = bm25s.BM25()
                retriever.index(self._tokenize(got["documents"]), show_progress=False)
                cached = (total, retriever, got["ids"], got["metadatas"], got["documents"])
                self._bm25[game] = cached
        _, retriever, ids, metas, docs = cached
        words = self._tokenize([query], ids=False)[0]
        if not words:
            return {}
        scores = retriever.get_scores(words)
        return {ids[n]: (float(s), metas[n], docs[n]) for n, s in enumerate(scores) if s > 0}


def recall_lines(memories: list[Memory], limit_chars: int = 600) -> str:
    """Memories as context lines, each cut to a few sentences."""
    from .slices import compact

    return "\n".join(f"- {compact(m.text, limit_chars // 4)}" for m in memories)


__all__ = ["GameMemory", "Memory", "recall_lines"]
