"""get_lore_slice's machinery: one slice's text, compacted to a token budget, from a bounded cache with a TTL.

The cache key is scope:ref:slice:max_tokens; an entry is used only while the slice's content hash is the one it
was made from (re-ingesting a changed file invalidates it) and younger than the TTL. The same inputs always give
the same output.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable


MAX_ENTRIES = 512
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s|$)")


@dataclass(frozen=True)
class SliceResult:
    address: str
    heading: str
    text: str
    tokens_est: int
    hash: str  # of the slice's whole text, as indexed (first 12 hex digits of its sha256)
    cached: bool = False


class SliceCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries, self.clock = max_entries, clock
        self._entries: OrderedDict[str, tuple[float, SliceResult]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: str, digest: str, ttl: float) -> SliceResult | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[1].hash != digest or self.clock() - entry[0] > ttl:
                if entry is not None:
                    del self._entries[key]  # stale: the slice changed, or it is too old
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: str, result: SliceResult) -> None:
        with self._lock:
            self._entries[key] = (self.clock(), result)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def closest(wanted: str, names: list[str], n: int = 5) -> list[str]:
    """The valid names nearest to a wrong one (by spelling, then by the last part of a dotted slice name)."""
    found = difflib.get_close_matches(wanted, names, n=n, cutoff=0.4)
    tail = wanted.rsplit(".", 1)[-1]
    by_tail = {x.rsplit(".", 1)[-1]: x for x in names}
    found += [by_tail[t] for t in difflib.get_close_matches(tail, list(by_tail), n=n, cutoff=0.6)]
    return list(dict.fromkeys(found))[:n]


def compact(text: str, max_tokens: int) -> str:
    """At most about max_tokens (four characters each), cut after the last whole sentence that fits."""
    limit = max_tokens * 4
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit // 2:
        return head[:ends[-1]].rstrip() + " …"
    cut = head.rfind(" ")
    return (head[:cut] if cut > limit // 2 else head).rstrip() + " …"
