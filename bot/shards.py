"""Which process answers for which server: Discord sends a server's events to one shard, and a shard runs in one process."""

from __future__ import annotations

from collections.abc import Collection


def shard_of(guild_id: int, shard_count: int) -> int:
    """The shard Discord sends a server's events to (its documented formula)."""
    return (guild_id >> 22) % shard_count


def runs_guild(guild_id: int | None, shard_ids: Collection[int] | None, shard_count: int | None) -> bool:
    """Whether a process running `shard_ids` of `shard_count` shards receives a server's events (None: direct
    messages, which Discord sends to shard 0). shard_ids None: the process runs every shard."""
    if shard_ids is None:
        return True
    if guild_id is None:
        return 0 in shard_ids
    return shard_count is not None and shard_of(guild_id, shard_count) in shard_ids


def runs_shard_zero(shard_ids: Collection[int] | None) -> bool:
    """Whether this process runs shard 0, the one that does what only one process should (syncing commands)."""
    return shard_ids is None or 0 in shard_ids


__all__ = ["shard_of", "runs_guild", "runs_shard_zero"]
