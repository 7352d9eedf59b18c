"""Searching the lore: BM25 (words) and Chroma (vectors) rankings of a query, fused, filtered by scope, ref and
visibility in code (GM-only lore never reaches a search that did not ask for it)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .corpus import Chunk
from .queries import QUERY_TOKENS

if TYPE_CHECKING:
    import numpy as np

RRF_K = 60
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by can do does did for from had has have how i if in is it its me my of on "
                  "or so that the their them then there they this to was we were what when where which who whom whose "
                  "why will with you your".split())


@dataclass
class Hit:
    chunk: Chunk
    score: float
    bm25_rank: int | None = None  # 1-based, None when that method did not find it
    vector_rank: int | None = None
    similarity: float | None = None  # cosine similarity to the query, when the vector search found it
    bm25_score: float = 0.0

    def relevant(self, min_similarity: float, min_bm25: float) -> bool:
        """Whether the passage plausibly answers the query, not merely ranks first among poor ones."""
        return (self.similarity is not None and self.similarity >= min_similarity) or self.bm25_score >= min_bm25

    def as_dict(self) -> dict[str, Any]:
        c = self.chunk
        return {"id": c.id, "source": c.source, "heading": c.heading, "slice": c.address, "text": c.text,
                "score": round(self.score, 6), "gm_only": c.gm_only, "bm25_rank": self.bm25_rank,
                "vector_rank": self.vector_rank,
                "similarity": None if self.similarity is None else round(self.similarity, 4),
                "bm25_score": round(self.bm25_score, 4)}


@dataclass
class Weights:
    """How the two rankings are fused; tuned with bench/lore.py."""

    # rrf: weighted reciprocal ranks; convex: weighted BM25 (scaled to the best) plus cosine; minmax: both scaled
    # to 0..1 over the query's candidates. minmax measured best on bench/lore_questions.yaml (see bench/lore.py).
    fusion: str = "minmax"
    bm25: float = 1.0
    vector: float = 1.0
    rrf_k: int = RRF_K
    heading_bonus: float = 0.0  # per query word (not a stop word) found in the slice's heading path
    depth: int = 20  # candidates taken from each method before fusing


class Search:
    """The index's search (a part of LoreIndex, kept in its own module)."""

    def search(self, query: str, k: int = 5, *, refs: Iterable[tuple[str, str]] | None = None,
               scope: str | None = None, gm: bool = False, secrets: Iterable[str] = (), method: str = "hybrid",
               per_slice: int = 1, vector: np.ndarray | None = None, embed: bool = True) -> list[Hit]:
        """The best chunks for the query, best first: only from the (scope, ref) pairs given, public ones (and those
        of the `secrets` the reader knows) unless gm.

        `method` is hybrid, bm25 or vector (the last two for measuring); at most `per_slice` chunks of one slice.
        `vector`: the query's embedding, made already (a turn's, shared with its recall); without one the query is
        embedded here, unless `embed` is False (the embedder was busy: words alone).
        """
        query = " ".join(query.split())[:2000]
        with self._lock:
            ids, chunks, bm25, known_refs = self._ids, self._chunks, self._bm25, self._refs
        if not ids or not query:
            return []
        allowed_refs = set(refs) if refs is not None else None

        known = frozenset(secrets)

        def allowed(c: Chunk) -> bool:
            return (c.visible(gm, known) and (scope is None or c.scope == scope)
                    and (allowed_refs is None or (c.scope, c.ref) in allowed_refs))

        w = self.weights
        bm25_scores: dict[str, float] = {}
        similarities: dict[str, float] = {}
        lexical = self._bm25_ranking(query, ids, chunks, bm25, allowed, w.depth, bm25_scores) if method != "vector" else []
        searched = known_refs if allowed_refs is None else allowed_refs
        searched = {key for key in searched if scope is None or key[0] == scope}
        if vector is None and embed and method != "bm25":
            vector = self.embedder.embed([query], QUERY_TOKENS)[0]
        semantic = (self._vector_ranking(vector, chunks, allowed, w.depth, gm, known, searched, similarities)
                    if method != "bm25" and vector is not None else [])
        scores: dict[str, float] = {}
        ranks: dict[str, list[int | None]] = {}
        top_bm25 = max(bm25_scores.values(), default=0.0) or 1.0
        low = min(similarities.values(), default=0.0)
        span = (max(similarities.values(), default=0.0) - low) or 1.0
        for weight, ranking, slot in ((w.bm25, lexical, 0), (w.vector, semantic, 1)):
            for rank, cid in enumerate(ranking, 1):
                if w.fusion == "convex":
                    value = bm25_scores[cid] / top_bm25 if slot == 0 else max(0.0, similarities[cid])
                    scores[cid] = scores.get(cid, 0.0) + weight * value
                elif w.fusion == "minmax":  # both scores stretched to 0..1 over this query's candidates
                    value = bm25_scores[cid] / top_bm25 if slot == 0 else (similarities[cid] - low) / span
                    scores[cid] = scores.get(cid, 0.0) + weight * value
                else:
                    scores[cid] = scores.get(cid, 0.0) + weight / (w.rrf_k + rank)
                ranks.setdefault(cid, [None, None])[slot] = rank
        if method == "hybrid" and w.heading_bonus:
            words = set(self._words(query))
            for cid in scores:
                named = words & set(self._words(chunks[cid].heading))
                scores[cid] += w.heading_bonus * len(named)
        best = sorted(scores, key=lambda cid: (-scores[cid], cid))
        hits: list[Hit] = []
        per: dict[str, int] = {}
        for cid in best:
            c = chunks[cid]
            if per.get(c.address, 0) >= per_slice:
                continue
            per[c.address] = per.get(c.address, 0) + 1
            hits.append(Hit(c, scores[cid], *ranks[cid], similarities.get(cid), bm25_scores.get(cid, 0.0)))
            if len(hits) == k:
                break
        return hits

    def _bm25_ranking(self, query: str, ids: list[str], chunks: dict[str, Chunk], bm25: Any,
                      allowed: Callable[[Chunk], bool], depth: int, found: dict[str, float]) -> list[str]:
        if bm25 is None:
            return []
        words = self._tokenize([query], ids=False)[0]
        if not words:
            return []
        import numpy as np

        scores = bm25.get_scores(words)
        order = np.argsort(-scores, kind="stable")
        out: list[str] = []
        for i in order:
            if scores[i] <= 0 or len(out) == depth:
                break
            if allowed(chunks[ids[i]]):
                out.append(ids[i])
                found[ids[i]] = float(scores[i])
        return out

    def _vector_ranking(self, query_vector: np.ndarray, chunks: dict[str, Chunk], allowed: Callable[[Chunk], bool],
                        depth: int, gm: bool, secrets: frozenset[str], refs: set[tuple[str, str]],
                        found: dict[str, float]) -> list[str]:
        """The chunks closest to the query vector among those the reader may see: every vector of the refs searched
        is scored (a matrix product; ~1 ms at 20,000 chunks), so the filter in code never leaves too few."""
        import numpy as np

        pairs: list[tuple[float, str]] = []
        for key in sorted(refs):
            ids, matrix = self._vectors_of(key)
            if not ids:
                continue
            sims = matrix @ query_vector.astype(np.float32)
            taken = 0
            for i in np.argsort(-sims, kind="stable"):
                cid = ids[i]
                if cid in chunks and allowed(chunks[cid]):
                    pairs.append((-float(sims[i]), cid))
                    taken += 1
                    if taken == depth:
                        break
        pairs.sort()
        for negative, cid in pairs[:depth]:
            found[cid] = -negative
        return [cid for _, cid in pairs[:depth]]

    @staticmethod
    def _words(text: str) -> list[str]:
        return [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2]
