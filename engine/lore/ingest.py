"""Bringing the lore index in line with the corpus: new and changed files embedded, removed ones dropped."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import structlog

from .corpus import Chunk, Problem, chunk_section, read_corpus

log = structlog.get_logger(__name__)


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


class Ingest:
    """The index's ingestion (a part of LoreIndex, kept in its own module)."""

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


def _by_ref(chunks: Iterable[Chunk]) -> dict[tuple[str, str], list[Chunk]]:
    grouped: dict[tuple[str, str], list[Chunk]] = {}
    for c in chunks:
        grouped.setdefault((c.scope, c.ref), []).append(c)
    return grouped
