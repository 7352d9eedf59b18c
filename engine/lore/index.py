"""The lore index: chunks in Chroma (vectors, a collection per scope and ref) and BM25 (words), searched together.

Chroma runs embedded (`PersistentClient` under the lore directory) or as a server (`HttpClient`, for several
processes or machines). Beside it, `chunks.json` keeps every chunk's text and metadata and each file's content
hash: re-ingesting embeds only files whose hash changed, and drops the chunks of files that are gone. BM25 is
rebuilt from it in memory when the index opens (well under a second for thousands of chunks).

Search fuses the two rankings (both scores scaled to 0..1 over the query's candidates, then added; reciprocal
rank fusion is the alternative) and filters by scope, ref and visibility in code: GM-only lore never reaches a
search that did not ask for it.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import structlog

from ..errors import ConfigError
from .corpus import Chunk, Problem, chunk_section, read_corpus
from .memory import GameMemory
from .slices import SliceCache

if TYPE_CHECKING:
    from .embed import Embedder

log = structlog.get_logger(__name__)

FORMAT = 2  # chunks.json's layout; another means the index is rebuilt
COLLECTION = "lore"
RRF_K = 60
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
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
class IngestReport:
    files: int = 0
    changed: list[str] = field(default_factory=list)  # added or changed files, re-embedded
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    chunks_embedded: int = 0
    chunks_removed: int = 0
    chunks_total: int = 0
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def summary(self) -> str:
        parts = [f"{self.files} file(s): {len(self.changed)} new or changed, {self.unchanged} unchanged, "
                 f"{len(self.removed)} removed; {self.chunks_embedded} chunk(s) embedded, {self.chunks_removed} "
                 f"dropped, {self.chunks_total} in the index ({self.seconds:.1f} s)."]
        if self.problems:
            parts.append(f"{len(self.problems)} problem(s):")
            parts += [f"- {p}" for p in self.problems]
        return "\n".join(parts)


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


class LoreIndex:
    def __init__(self, directory: Path, *, embedder: Embedder | None = None, chroma_host: str | None = None,
                 collection: str = COLLECTION, weights: Weights | None = None) -> None:
        self.directory = Path(directory)
        if embedder is None:
            from .embed import MiniLM  # numpy and onnxruntime load only when lore is used

            embedder = MiniLM()
        self.embedder = embedder
        self.weights = weights or Weights()
        self._collection_name = collection
        self._chroma_host = chroma_host
        self._client: Any = None
        self._collections: dict[tuple[str, str], Any] = {}
        self._lock = threading.RLock()  # ingest swaps the tables that searches read
        self._files: dict[str, dict[str, Any]] = {}
        self._chunks: dict[str, Chunk] = {}
        self._ids: list[str] = []
        self._bm25: Any = None
        self._refs: frozenset[tuple[str, str]] = frozenset()  # every (scope, ref) that has chunks
        self._stemmer: Any = None
        self.slice_cache = SliceCache()
        self.memory = GameMemory(self._connect, self.embedder, self._tokenize)  # the game's own past, same stores
        self._load()

    # -- storage --------------------------------------------------------------------------------------------------

    @property
    def _manifest_path(self) -> Path:
        return self.directory / "chunks.json"

    def _connect(self) -> Any:
        """The Chroma client (embedded, or the server at CHROMA_HOST)."""
        if self._client is not None:
            return self._client
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        settings = ChromaSettings(anonymized_telemetry=False)
        try:
            if self._chroma_host:
                host, _, port = self._chroma_host.rpartition(":") if ":" in self._chroma_host else (self._chroma_host, "", "8000")
                self._client = chromadb.HttpClient(host=host or self._chroma_host, port=int(port or 8000), settings=settings)
                self._client.heartbeat()
            else:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._client = chromadb.PersistentClient(path=str(self.directory / "chroma"), settings=settings)
        except ValueError as exc:
            self._client = None
            raise ConfigError(f"CHROMA_HOST '{self._chroma_host}' is not host:port ({exc}).") from exc
        except Exception as exc:  # chromadb raises many kinds (connection, sqlite, version): one sentence for all
            self._client = None
            where = f"the Chroma server at {self._chroma_host}" if self._chroma_host else f"the lore index in {self.directory}"
            raise ConfigError(f"Cannot open {where}: {type(exc).__name__}: {exc}.") from exc
        # Chroma's modules and client live as long as the process: out of the collector's full passes, which
        # otherwise walk them all and stall every channel (as bot/runtime.py does for what loads at start-up).
        gc.freeze()
        return self._client

    def _collection(self, scope: str, ref: str) -> Any:
        """One collection per scope and ref: a search reads only the lore of its game, unfiltered (fast)."""
        key = (scope, ref)
        found = self._collections.get(key)
        if found is None:
            name = f"{self._collection_name}-{scope}-{_SAFE.sub('-', ref)}"[:500].strip("-.")
            found = self._connect().get_or_create_collection(name, embedding_function=None,
                                                              metadata={"hnsw:space": "cosine"})
            self._collections[key] = found
        return found

    def _load(self) -> None:
        path = self._manifest_path
        if not path.is_file():
            return
        try:
            data = json.loads(path.read_text("utf-8"))
            if data.get("format") != FORMAT or data.get("embedder") != self.embedder.name:
                log.warning("lore_index_outdated", path=str(path))  # the next ingest rebuilds it whole
                return
            chunks = {c["id"]: Chunk(**c) for c in data["chunks"]}
            files = data["files"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("lore_index_unreadable", path=str(path), error=str(exc))
            return
        self._install(files, chunks)

    def _install(self, files: dict[str, dict[str, Any]], chunks: dict[str, Chunk]) -> None:
        ids = list(chunks)
        bm25 = None
        if ids:
            import bm25s

            logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each build at debug, to its own handler
            bm25 = bm25s.BM25()
            bm25.index(self._tokenize([self._bm25_text(chunks[i]) for i in ids]), show_progress=False)
        with self._lock:
            self._files, self._chunks, self._ids, self._bm25 = files, chunks, ids, bm25
            self._refs = frozenset((c.scope, c.ref) for c in chunks.values())

    def _save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "embedder": self.embedder.name, "files": self._files,
                "chunks": [asdict(c) for c in self._chunks.values()]}
        tmp = self._manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        os.replace(tmp, self._manifest_path)

    # -- ingestion ------------------------------------------------------------------------------------------------

    def ingest(self, corpus_dir: Path, progress: bool = False) -> IngestReport:
        """Bring the index in line with the corpus: embed new and changed files, drop removed ones."""
        started = time.perf_counter()
        report = IngestReport()
        files, report.problems = read_corpus(corpus_dir)
        report.files = len(files)
        with self._lock:
            old_files, old_chunks = dict(self._files), dict(self._chunks)
        stored = self._stored_counts({(c.scope, c.ref) for c in old_chunks.values()})
        expected: dict[tuple[str, str], int] = {}
        for c in old_chunks.values():
            expected[(c.scope, c.ref)] = expected.get((c.scope, c.ref), 0) + 1
        if stored != expected:
            log.warning("lore_index_out_of_step", chroma=stored, manifest=expected)
            old_files = {}  # the vector store lost or gained chunks behind our back: embed everything again
        new_files: dict[str, dict[str, Any]] = {}
        new_chunks: dict[str, Chunk] = {}
        to_embed: list[Chunk] = []
        for f in files:
            chunks = [c for s in f.sections for c in chunk_section(s)]
            new_files[f.source] = {"digest": f.digest, "scope": f.scope, "ref": f.ref, "chunks": [c.id for c in chunks]}
            new_chunks.update((c.id, c) for c in chunks)
            previous = old_files.get(f.source)
            if previous is not None and previous["digest"] == f.digest:
                report.unchanged += 1
            else:
                report.changed.append(f.source)
                to_embed += chunks
        report.removed = sorted(set(old_files) - set(new_files))
        stale = [c for cid, c in old_chunks.items() if cid not in new_chunks]
        embed_started = time.perf_counter()
        self._upsert(to_embed, progress)
        report.embed_seconds = time.perf_counter() - embed_started
        for (scope, ref), gone in _by_ref(stale).items():
            ids = [c.id for c in gone]
            for at in range(0, len(ids), 500):
                self._collection(scope, ref).delete(ids=ids[at:at + 500])
        report.chunks_embedded, report.chunks_removed = len(to_embed), len(stale)
        self._install(new_files, new_chunks)
        self._save()
        report.chunks_total = len(new_chunks)
        report.seconds = time.perf_counter() - started
        log.info("lore_ingested", files=report.files, changed=len(report.changed), removed=len(report.removed),
                 embedded=report.chunks_embedded, total=report.chunks_total, problems=len(report.problems),
                 seconds=round(report.seconds, 2))
        return report

    def _stored_counts(self, refs: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
        counts = {key: self._collection(*key).count() for key in refs}
        return {key: n for key, n in counts.items() if n}

    def _upsert(self, chunks: list[Chunk], progress: bool) -> None:
        if not chunks:
            return
        from tqdm import tqdm

        batch = 64
        with tqdm(total=len(chunks), unit="chunk", desc="Embedding lore", delay=1.0, disable=not progress,
                  leave=False) as bar:
            for (scope, ref), group in _by_ref(chunks).items():
                collection = self._collection(scope, ref)
                for at in range(0, len(group), batch):
                    part = group[at:at + batch]
                    vectors = self.embedder.embed([self._vector_text(c) for c in part])
                    collection.upsert(ids=[c.id for c in part], embeddings=vectors, documents=[c.text for c in part],
                                      metadatas=[c.metadata() for c in part])
                    bar.update(len(part))

    # -- search ---------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._ids)

    def search(self, query: str, k: int = 5, *, refs: Iterable[tuple[str, str]] | None = None,
               scope: str | None = None, gm: bool = False, secrets: Iterable[str] = (), method: str = "hybrid",
               per_slice: int = 1) -> list[Hit]:
        """The best chunks for the query, best first: only from the (scope, ref) pairs given, public ones (and those
        of the `secrets` the reader knows) unless gm.

        `method` is hybrid, bm25 or vector (the last two for measuring); at most `per_slice` chunks of one slice.
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
        semantic = (self._vector_ranking(query, chunks, allowed, w.depth, gm, known, searched, similarities)
                    if method != "bm25" else [])
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

    def _vector_ranking(self, query: str, chunks: dict[str, Chunk], allowed: Callable[[Chunk], bool],
                        depth: int, gm: bool, secrets: frozenset[str], refs: set[tuple[str, str]],
                        found: dict[str, float]) -> list[str]:
        vector = self.embedder.embed([query])
        # Chroma's own filter, for when over-fetching left too few: the same rule as Chunk.visible.
        where: dict[str, Any] | None = None
        if not gm:
            where = ({"gm_only": False} if not secrets else
                     {"$or": [{"gm_only": False}, {"secret": {"$in": sorted(secrets)}}]})
        pairs: list[tuple[float, str]] = []
        for key in sorted(refs):
            collection = self._collection(*key)
            total = collection.count()
            if not total:
                continue
            # GM-only chunks are filtered here rather than by Chroma (its filter scans every row); take extra.
            result = collection.query(query_embeddings=vector, n_results=min(total, depth * 2), include=["distances"])
            got = [(d, cid) for cid, d in zip(result["ids"][0], result["distances"][0]) if cid in chunks and allowed(chunks[cid])]
            if len(got) < depth and len(result["ids"][0]) < total and where is not None:
                result = collection.query(query_embeddings=vector, n_results=min(total, depth), where=where,
                                          include=["distances"])
                got = [(d, cid) for cid, d in zip(result["ids"][0], result["distances"][0]) if cid in chunks and allowed(chunks[cid])]
            pairs += got
        pairs.sort()
        for distance, cid in pairs[:depth]:
            found[cid] = 1.0 - float(distance)  # cosine distance → similarity
        return [cid for _, cid in pairs[:depth]]

    # -- slices ---------------------------------------------------------------------------------------------------

    def slices(self, *, refs: Iterable[tuple[str, str]] | None = None, gm: bool = False,
               secrets: Iterable[str] = ()) -> dict[str, str]:
        """Every slice address that has text, with its heading, in corpus order."""
        allowed_refs = set(refs) if refs is not None else None
        known = frozenset(secrets)
        with self._lock:
            chunks = list(self._chunks.values())
        out: dict[str, str] = {}
        for c in chunks:
            if c.visible(gm, known) and (allowed_refs is None or (c.scope, c.ref) in allowed_refs):
                out.setdefault(c.address, c.heading)
        return out

    def slice_text(self, address: str, *, gm: bool = False, secrets: Iterable[str] = ()) -> tuple[str, str] | None:
        """(heading, text) of one slice, its chunks joined in order; a heading with no text of its own gives its
        subsections' text, each under its heading. None if there is no such slice (or, without gm, it is GM-only)."""
        with self._lock:
            chunks = list(self._chunks.values())
        known = frozenset(secrets)
        own = [c for c in chunks if c.address == address and c.visible(gm, known)]
        if own:
            own.sort(key=lambda c: int(c.id.rsplit("#", 1)[1]))
            return own[0].heading, "\n\n".join(c.text for c in own)
        under = [c for c in chunks if c.address.startswith(address + ".") and c.visible(gm, known)]
        if not under:
            return None
        parts: list[str] = []
        last = ""
        for c in under:  # corpus order: each subsection's chunks in turn
            if c.heading != last:
                parts.append(f"## {c.heading.rsplit(' › ', 1)[-1]}")
                last = c.heading
            parts.append(c.text)
        return under[0].heading.rsplit(" › ", 1)[0], "\n\n".join(parts)

    # -- text handling --------------------------------------------------------------------------------------------

    @staticmethod
    def _vector_text(c: Chunk) -> str:
        return f"{c.heading}\n{c.text}"

    @staticmethod
    def _bm25_text(c: Chunk) -> str:
        return f"{c.heading}\n{c.text}"

    def _tokenize(self, texts: list[str], ids: bool = True) -> Any:
        import bm25s

        if self._stemmer is None:
            try:
                import Stemmer

                self._stemmer = Stemmer.Stemmer("english").stemWords
            except ImportError:
                self._stemmer = False
        return bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer or None, return_ids=ids, show_progress=False)

    @staticmethod
    def _words(text: str) -> list[str]:
        return [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2]



def _by_ref(chunks: Iterable[Chunk]) -> dict[tuple[str, str], list[Chunk]]:
    grouped: dict[tuple[str, str], list[Chunk]] = {}
    for c in chunks:
        grouped.setdefault((c.scope, c.ref), []).append(c)
    return grouped
