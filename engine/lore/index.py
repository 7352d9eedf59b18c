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
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import structlog

from ..errors import ConfigError
from .corpus import Chunk
from .ingest import Ingest
from .memory import GameMemory
from .queries import QUERY_TOKENS, QueryEmbedder
from .search import Search, Weights
from .slices import SliceCache

if TYPE_CHECKING:
    from .embed import Embedder

log = structlog.get_logger(__name__)

FORMAT = 2  # chunks.json's layout; another means the index is rebuilt
CHUNK_FIELDS = [f.name for f in fields(Chunk)]  # as dataclasses.asdict would write them, without its deep copies
COLLECTION = "lore"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class LoreIndex(Ingest, Search):
    """The lore's chunks, their vectors and words, and the game memory beside them; ingest.py and search.py hold
    its ingestion and its search."""

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
        self._words: dict[str, tuple[str, list[str]]] = {}  # chunk id → (the text its words came from, the words)
        self._refs: frozenset[tuple[str, str]] = frozenset()  # every (scope, ref) that has chunks
        self._vectors: dict[tuple[str, str], tuple[list[str], Any]] = {}  # what searches score, per (scope, ref)
        self._stemmer: Any = None
        self.slice_cache = SliceCache()
        self.memory = GameMemory(self._tokenize)  # this process's view of the games' past (engine/recall.py)
        self.queries = QueryEmbedder(self.embedder, QUERY_TOKENS)  # each turn's one embedding, in a worker thread
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
            # Each chunk's words are kept from the last build: a re-ingest after one file changed tokenizes only
            # that file's chunks (tokenizing all 5,263 of a large corpus again was 0.8 s of a 2.3 s re-ingest).
            texts = {i: self._bm25_text(chunks[i]) for i in ids}
            todo = [i for i in ids if self._words.get(i, ("", []))[0] != texts[i]]
            words = {i: self._words[i] for i in ids if i in self._words and i not in todo}
            if todo:
                words.update((i, (texts[i], tokens))
                             for i, tokens in zip(todo, self._tokenize([texts[i] for i in todo], ids=False)))
            self._words = words
            bm25.index([words[i][1] for i in ids], show_progress=False)
        with self._lock:
            self._files, self._chunks, self._ids, self._bm25 = files, chunks, ids, bm25
            self._refs = frozenset((c.scope, c.ref) for c in chunks.values())
            self._vectors = {}  # read again from Chroma when next searched

    def _vectors_of(self, key: tuple[str, str]) -> tuple[list[str], Any]:
        """A (scope, ref)'s chunk ids and their vectors (rows of a matrix), read from Chroma once and kept: a search
        scores them all in one product instead of asking Chroma (~1 ms a query and ~0.7 ms a count, per ref)."""
        with self._lock:
            found = self._vectors.get(key)
        if found is None:
            import numpy as np

            got = self._collection(*key).get(include=["embeddings"])
            matrix = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(got["ids"]), self.embedder.dim)
            found = (list(got["ids"]), matrix)
            with self._lock:
                self._vectors[key] = found
        return found

    def _save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "embedder": self.embedder.name, "files": self._files,
                "chunks": [{f: getattr(c, f) for f in CHUNK_FIELDS} for c in self._chunks.values()]}
        tmp = self._manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        os.replace(tmp, self._manifest_path)

    def __len__(self) -> int:
        return len(self._ids)

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
