"""Which process answers for which server: a server's shard by Discord's formula, and what a process owns."""

from __future__ import annotations

from bot.shards import runs_guild, runs_shard_zero, shard_of

GUILD = 81384788765712384  # the Discord API server's id: created at (id >> 22) ms after Discord's epoch


def test_a_servers_shard_is_its_creation_time_modulo_the_count():
    assert GUILD >> 22 == 19403645698  # 19403645698 = 16 * 1212727856 + 2
    assert [shard_of(GUILD, n) for n in (1, 2, 3, 4, 16)] == [0, 0, 1, 2, 2]
    assert shard_of(GUILD | (1 << 22) - 1, 16) == 2  # worker, process and increment bits do not move it
    assert shard_of((GUILD >> 22) + 1 << 22, 16) == 3  # a millisecond later: the next shard


def test_a_process_owns_the_servers_of_its_shards_only():
    assert runs_guild(GUILD, [2], 4) and runs_guild(GUILD, range(2, 4), 4)
    assert not runs_guild(GUILD, [0, 1, 3], 4)
    assert runs_guild(GUILD, None, None) and runs_guild(GUILD, None, 4)  # no ids: every shard runs here
    assert not runs_guild(GUILD, [0], None)  # ids without a count own nothing (settings refuse it anyway)


def test_direct_messages_and_command_sync_belong_to_shard_zero():
    assert runs_guild(None, [0, 1], 4) and not runs_guild(None, [1], 4) and runs_guild(None, None, None)
    assert runs_shard_zero(None) and runs_shard_zero((0, 1)) and not runs_shard_zero((1, 2))
