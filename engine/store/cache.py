"""The parsed game states of the channels played most recently, by session version.

Parsing a started game costs ~0.4-1.3 ms, and a turn used to do it a few times. A load compares the version in
the same statement that reads it (store.py), so another process's write, an undo or an ended game is never
served from here. A state given out is shared: it is read as it is, and copied to be changed."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from pydantic import TypeAdapter

from ..state import GameState

# Channels kept. Measured with tracemalloc on the bundled adventure with two characters: ~130 KiB parsed, plus its
# JSON (~22 KiB) and, after a commit, its big fields' JSON (~21 KiB): ~175 KiB a channel, ~85 MiB for 500.
CACHED_STATES = 500


@dataclass
class CachedState:
    session_id: int
    version: int
    state: GameState
    json: str  # the state as saved at this version: what /undo puts back when a turn commits over it
    guild_id: str | None
    parts: dict[str, str] | None = None  # the JSON of its big fields, when a commit made it (see `dump`)


# The fields that hold the adventure (~95% of a started game's 22 KB of JSON), in the model's order.
BIG = tuple(f for f in GameState.model_fields
            if f in ("characters", "npcs", "locations", "quests", "encounters", "items", "shops"))
_FIELDS = {name: TypeAdapter(field.annotation) for name, field in GameState.model_fields.items()}


def dump(state: GameState, known: CachedState | None) -> tuple[str, dict[str, str] | None]:
    """The state's JSON, exactly as `model_dump_json` writes it, and the JSON of its big fields for the next turn.

    Most turns change nothing but the turn counter: their working copy still shares every character, place and
    item with the state it was made from (`GameState.working_copy`), and those objects are never changed in
    place (`GameState.own` replaces them first). A big field that is the very object of the state `known` holds
    takes its JSON from there; only the rest is written again (measured at 200 busy channels, the whole dump
    cost ~0.4 ms of a turn's CPU). A copy made deep is dumped whole."""
    if not state.shares or known is None:
        return state.model_dump_json(), None
    had, base, now = known.parts or {}, known.state.__dict__, state.__dict__
    parts = {name: had[name] if name in had and now[name] is base[name] else _FIELDS[name].dump_json(now[name]).decode()
             for name in BIG}
    text = ",".join(f'"{name}":{parts.get(name) or _FIELDS[name].dump_json(now[name]).decode()}' for name in _FIELDS)
    return "{" + text + "}", parts


class StateCache:
    def __init__(self) -> None:
        self.by_channel: OrderedDict[str, CachedState] = OrderedDict()  # the most recently used last
        self.channels: dict[int, str] = {}  # session id -> channel, for the sessions cached

    def get(self, channel_id: str) -> CachedState | None:
        return self.by_channel.get(channel_id)

    def touch(self, entry: CachedState, channel_id: str) -> bool:
        """Mark `entry` as just used; False if it is no longer the channel's (dropped meanwhile)."""
        if self.by_channel.get(channel_id) is not entry:
            return False
        self.by_channel.move_to_end(channel_id)
        return True

    def remember(self, channel_id: str, entry: CachedState) -> None:
        self.by_channel[channel_id] = entry
        self.by_channel.move_to_end(channel_id)
        self.channels[entry.session_id] = channel_id
        while len(self.by_channel) > CACHED_STATES:
            _, gone = self.by_channel.popitem(last=False)
            self.channels.pop(gone.session_id, None)

    def forget(self, channel_id: str) -> None:
        entry = self.by_channel.pop(channel_id, None)
        if entry is not None:
            self.channels.pop(entry.session_id, None)

    def of_session(self, session_id: int) -> CachedState | None:
        """This session's entry (not a newer game's in the same channel)."""
        channel_id = self.channels.get(session_id)
        entry = self.by_channel.get(channel_id) if channel_id is not None else None
        return entry if entry is not None and entry.session_id == session_id else None

    def at(self, session_id: int, version: int | None) -> CachedState | None:
        """The cached state of this session at this version, if that is the one cached."""
        entry = self.of_session(session_id)
        return entry if entry is not None and version is not None and entry.version == version else None

    def saved(self, session_id: int, version: int, state: GameState, json_text: str,
              parts: dict[str, str] | None = None) -> None:
        """A state just written (and committed) is the cached one for its version."""
        entry = self.of_session(session_id)
        if entry is not None:
            self.remember(self.channels[session_id],
                          CachedState(session_id, version, state, json_text, entry.guild_id, parts))

    def unsaved(self, session_id: int) -> None:
        """A write of this session failed: its cached state may be the object the failed write changed."""
        if self.of_session(session_id) is not None:
            self.forget(self.channels[session_id])
        else:
            self.channels.pop(session_id, None)  # an ended game's: its channel holds a newer one, or none
